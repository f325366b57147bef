"""The zCDP budget of the AIM, MST and MWEM+PGM baselines and their Gaussian measurements.

Privacy (add/remove one record, docs/privacy.md): adding or removing a record changes one
cell of every marginal by 1, so each marginal has L2 sensitivity 1 and a Gaussian measurement
with noise std sigma is ``GaussianEvent(noise_multiplier=sigma)``. The budget is a zCDP rho
(Bun and Steinke 2016) chosen so that the RDP accountant, on a curve a * rho at every order,
gives epsilon <= the target at delta: a Gaussian's RDP is exactly a/(2 sigma^2) and an
epsilon-exponential mechanism's is at most a epsilon^2/8 (accountant.py), so any plan whose
zCDP costs add up to rho is then within the target, whatever the run adapts to.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_epsilon
from dpgm.privacy.events import DpEvent, GaussianEvent
from dpgm.privacy.mechanisms import gaussian_releases

#: Calibrate just below the target so float rounding of the per-round costs never exceeds it.
CALIBRATION_MARGIN = 1e-9


def rho_for_epsilon(epsilon: float, delta: float, margin: float = CALIBRATION_MARGIN) -> float:
    """Largest zCDP rho (1e-6 relative) whose curve a * rho the accountant converts to <= epsilon.

    rho-zCDP is the RDP curve of one Gaussian with multiplier 1/sqrt(2 rho); the calibration
    searches the accountant's own conversion (calibrate.sigma_for_epsilon) at ``delta``.
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"epsilon must be finite and > 0, got {epsilon}")
    sigma = sigma_for_epsilon(
        steps=1,
        delta=delta,
        target_epsilon=epsilon * (1.0 - margin),
        event_factory=lambda s: GaussianEvent(noise_multiplier=s),
    )
    return 1.0 / (2.0 * sigma * sigma)


def zcdp_event(rho: float) -> GaussianEvent:
    """The Gaussian event whose RDP curve is a * rho (rho-zCDP)."""
    return GaussianEvent(noise_multiplier=1.0 / math.sqrt(2.0 * rho))


def check_plan(accountant: Accountant, events: Iterable[tuple[DpEvent, int]], what: str) -> None:
    """Refuse the whole run (nothing released) when ``events`` would exceed the accountant's budget."""
    accountant.refuse_unless_affordable(what, *(e for event, count in events for e in [event] * count))


def measure(accountant: Accountant, stage: str, rng: np.random.Generator, sigma: float,
            truths: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gaussian measurements of marginals (L2 sensitivity 1 each), charged together, then drawn."""
    return gaussian_releases(list(truths), [1.0] * len(truths), noise_multiplier=sigma,
                             accountant=accountant, stage=stage, rng=rng)
