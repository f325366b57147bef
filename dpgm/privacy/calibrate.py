"""Calibration: the noise multiplier for a target epsilon, and the steps a budget affords.

Both search the accountant's own epsilon (accountant.py), so a calibrated plan is exactly
what the ledger will later charge. ``calibrate`` is the one routine that solves for a noise
multiplier, for any mechanism; results are conservative: it returns a multiplier that was
re-checked to give epsilon <= target, ``steps_for_budget`` a step count
whose epsilon is <= target. ``steps_for_epochs`` is the ONE place epochs become steps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import epsilon_from_rdp, pure_epsilon, rdp_curve
from dpgm.privacy.events import DpEvent, GaussianEvent, SampledGaussianEvent
from dpgm.privacy.rdp import DEFAULT_ORDERS

#: Search range for the noise multiplier; beyond it a plan is useless anyway.
SIGMA_MIN, SIGMA_MAX = 1e-3, 1e4
#: Bisection stops when the bracket's relative width is below this.
SIGMA_REL_TOL = 1e-6
#: Upper limit of ``steps_for_budget`` (a curve that is ~0 at every order never runs out).
MAX_STEPS = 10**12

EventFactory = Callable[[float], DpEvent]
#: A mechanism's releases at a given noise multiplier: (event, count) pairs.
Plan = Callable[[float], Sequence[tuple[DpEvent, int]]]


def _check_finite_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def _check_steps(steps: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")


def steps_for_epochs(epochs: float, sampling_rate: float) -> int:
    """Steps in ``epochs`` epochs: one epoch is ceil(1/q) steps (DPGM paper, section 6.2).

    Fractional epochs round up to whole steps (0.5 epoch at q = 0.01 is 50 steps).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float, np.integer, np.floating)) or not (
        math.isfinite(epochs) and epochs > 0
    ):
        raise ValueError(f"epochs must be a finite number > 0, got {epochs!r}")
    if not (isinstance(sampling_rate, (int, float)) and 0 < sampling_rate <= 1):
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    # round() first: q = 1/49 must give 49 steps, not 50 from 1/q = 49.00000000000001
    per_epoch = math.ceil(round(1.0 / sampling_rate, 9))
    return max(1, math.ceil(round(float(epochs) * per_epoch, 6)))


def _extra(extra_rdp: Sequence[float] | None, orders: Sequence[float]) -> np.ndarray:
    if extra_rdp is None:
        return np.zeros(len(orders))
    arr = np.asarray(extra_rdp, dtype=float)
    if arr.shape != (len(orders),):
        raise ValueError(f"extra_rdp must have one value per order ({len(orders)}), got shape {arr.shape}")
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise ValueError("extra_rdp must be non-negative and not NaN")
    return arr


def _factory(sampling_rate: float | None, event_factory: EventFactory | None) -> EventFactory:
    if event_factory is not None:
        return event_factory
    if sampling_rate is None:
        raise ValueError("give sampling_rate, or an event_factory")
    return lambda sigma: SampledGaussianEvent(sampling_rate=sampling_rate, noise_multiplier=sigma)


def plan_rdp(
    releases: Sequence[tuple[DpEvent, int]], orders: Sequence[float] = DEFAULT_ORDERS, bound: str = "joint"
) -> np.ndarray:
    """RDP curve of a plan: ``count`` uses of each ``event`` (composition)."""
    return sum((count * rdp_curve(event, orders, bound) for event, count in releases), np.zeros(len(orders)))


def releases_epsilon(
    releases: Sequence[tuple[DpEvent, int]],
    delta: float,
    *,
    extra_rdp: Sequence[float] | None = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    bound: str = "joint",
) -> float:
    """Epsilon the accountant gives ``releases`` on top of ``extra_rdp`` (alone: also basic
    composition of pure releases, whichever is smaller, exactly as ``Accountant.spent``)."""
    orders = tuple(float(o) for o in orders)
    pure = sum(pure_epsilon(e, c) for e, c in releases) if extra_rdp is None else math.inf
    rdp = _extra(extra_rdp, orders) + plan_rdp(releases, orders, bound)
    return epsilon_from_rdp(rdp, delta, orders, pure).epsilon


def plan_epsilon(event: DpEvent, *, steps: int, delta: float, **accounting: Any) -> float:
    """Epsilon of ``steps`` repetitions of ``event`` (``accounting``: releases_epsilon's keywords)."""
    return releases_epsilon([(event, steps)], delta, **accounting)


def calibrate(
    plan: Plan,
    *,
    target_epsilon: float,
    delta: float,
    extra_rdp: Sequence[float] | None = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    bound: str = "joint",
) -> float:
    """THE calibration: smallest noise multiplier s (to a relative 1e-6) whose plan stays within target.

    ``plan(s)`` lists the releases a mechanism makes at multiplier s as (event, count) pairs;
    any family fits (DP-SGD steps, Lloyd iterations, a sketch, MWEM with s = 1 / its epsilon).
    They compose with ``extra_rdp``, what earlier stages spent. Bisection on log(s); the upper
    end is returned and re-checked. PrivacyBudgetError when no s up to 1e4 reaches the target.
    """
    _check_finite_positive("target_epsilon", target_epsilon)
    _check_delta(delta)
    orders = tuple(float(o) for o in orders)
    extra = _extra(extra_rdp, orders)

    def eps(sigma: float) -> float:
        return releases_epsilon(plan(sigma), delta, extra_rdp=extra_rdp, orders=orders, bound=bound)

    floor = epsilon_from_rdp(extra, delta, orders).epsilon
    if floor >= target_epsilon:
        raise PrivacyBudgetError(
            f"target epsilon {target_epsilon:.4g} is out of reach at delta={delta:g}: earlier stages "
            f"(if any) and the RDP conversion alone give {floor:.4g}, whatever the noise"
        )
    if eps(SIGMA_MAX) > target_epsilon:
        raise PrivacyBudgetError(
            f"even noise multiplier {SIGMA_MAX:g} gives epsilon above the target {target_epsilon:.4g} (delta={delta:g})"
        )
    lo, hi = SIGMA_MIN, SIGMA_MAX
    if eps(lo) <= target_epsilon:
        return lo
    while hi / lo > 1.0 + SIGMA_REL_TOL:  # invariant: eps(lo) > target >= eps(hi)
        mid = math.sqrt(lo * hi)
        if eps(mid) <= target_epsilon:
            hi = mid
        else:
            lo = mid
    if not eps(hi) <= target_epsilon:  # re-check: the promise is never to exceed the target
        raise RuntimeError(f"calibration failed: sigma {hi} gives epsilon above {target_epsilon}")
    return hi


def sigma_for_epsilon(
    *,
    steps: int,
    sampling_rate: float | None = None,
    event_factory: EventFactory | None = None,
    **calibration: Any,
) -> float:
    """``calibrate`` for the commonest plan: ``steps`` repetitions of ``event_factory(sigma)``
    (default: a Poisson-sampled Gaussian with rate ``sampling_rate``). ``calibration``: its keywords."""
    _check_steps(steps)
    make = _factory(sampling_rate, event_factory)
    return calibrate(lambda sigma: [(make(sigma), steps)], **calibration)


def steps_for_budget(
    *,
    sampling_rate: float | None = None,
    noise_multiplier: float,
    delta: float,
    target_epsilon: float,
    extra_rdp: Sequence[float] | None = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    event_factory: EventFactory | None = None,
    bound: str = "joint",
) -> int:
    """Largest number of steps whose epsilon (with ``extra_rdp``) stays <= target_epsilon.

    0 when not even one step fits; PrivacyBudgetError when ``extra_rdp`` alone exceeds the
    target. Exponential search then bisection over integers (epsilon grows with steps).
    """
    _check_finite_positive("target_epsilon", target_epsilon)
    _check_finite_positive("noise_multiplier", noise_multiplier)
    _check_delta(delta)
    orders = tuple(float(o) for o in orders)
    extra = _extra(extra_rdp, orders)
    curve = rdp_curve(_factory(sampling_rate, event_factory)(noise_multiplier), orders, bound)

    def fits(steps: int) -> bool:
        return epsilon_from_rdp(extra + steps * curve, delta, orders).epsilon <= target_epsilon

    if not fits(0):
        floor = epsilon_from_rdp(extra, delta, orders).epsilon
        raise PrivacyBudgetError(
            f"target epsilon {target_epsilon:.4g} is out of reach at delta={delta:g}: earlier stages "
            f"(if any) and the RDP conversion alone give {floor:.4g}"
        )
    lo, hi = 0, 1  # invariant: fits(lo)
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > MAX_STEPS:
            return MAX_STEPS
    while hi - lo > 1:  # fits(lo) and not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@functools.lru_cache(maxsize=1024)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose zCDP curve the accountant puts at <= epsilon at delta (via ``calibrate``): the
    budget that fixed-noise stages share (a Gaussian release with multiplier sigma costs 1 / (2 sigma^2));
    cached, as the rules and the plan ask for it again and again with the same budget."""
    sigma = calibrate(lambda s: [(GaussianEvent(noise_multiplier=s), 1)], target_epsilon=epsilon, delta=delta)
    return 1.0 / (2.0 * sigma * sigma)


def sigma_for_share(rho: float, share: float, releases: int = 1) -> float:
    """Multiplier of ``releases`` Gaussian releases that together cost ``share`` of rho."""
    return math.sqrt(releases / (2.0 * share * rho))


def records_magnitude(n: int) -> int:
    """n's order of magnitude: the power of ten N with N <= n < 10 N (n = 0 counts as 1)."""
    return 10 ** math.floor(math.log10(max(n, 1)))


def default_delta(n: int) -> float:
    """1/(100 N) for n's order of magnitude N: at most 1/(10 n), and a function of N alone, so
    that N and delta change at the same n and publishing both tells no more than N."""
    return 0.01 / records_magnitude(n)
