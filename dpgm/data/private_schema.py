"""A table's schema measured privately: the parts its owner marks ``private`` come from DP releases on one ledger.

Each column's private bounds are two DP quantiles (``tables.private.LEVELS``) among its public candidates, its
private categories a thresholded histogram of its values (and an ``other`` value for those under the threshold,
``tables.private.other_value``), a private ``missing`` a thresholded count of its empty cells
(``dpgm.privacy.mechanisms``). One budget (epsilon, delta) covers them all: every release gets an
equal share of zCDP, the thresholds together spend THRESHOLD_SHARE of delta, and the ledger's epsilon at delta
stays within the budget (docs/guide/tables.md, "The private route"). The schema records that release (top-level
``released``: its epsilon and delta, the parts measured, its report's file name), so that a run declaring it lists
where its measured parts came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DpEvent, ExponentialEvent, ThresholdGaussianEvent
from dpgm.privacy.mechanisms import quantile_releases, thresholded_counts
from dpgm.privacy.rdp import threshold_delta
from dpgm.privacy.verdict import stamped
from dpgm.tables import MISSING, table_schema
from dpgm.tables.codecs import category_key
from dpgm.tables.private import GRID_POINTS, LEVELS, Unknown, ordered_bounds, resolved, unknowns
from dpgm.tables.released import RELEASED, Released

#: The ledger stage of every release of the schema.
STAGE = "schema"
#: The share of delta that the thresholds' delta_0's may spend together; the rest converts the curves.
THRESHOLD_SHARE = 0.5
#: The budget the plan aims at, a hair below the owner's: the charged epsilons are rounded up.
_AIM = 1.0 - 1e-9


@dataclass(frozen=True)
class Plan:
    """Each DP quantile's epsilon, and each thresholded histogram's noise multiplier and threshold."""

    quantile_epsilon: float
    noise_multiplier: float
    threshold: int

    def events(self, quantiles: int, histograms: int) -> list[DpEvent]:
        return ([ExponentialEvent(epsilon=self.quantile_epsilon)] * quantiles
                + [ThresholdGaussianEvent(noise_multiplier=self.noise_multiplier, threshold=self.threshold)]
                * histograms)


def threshold_for(noise_multiplier: float, delta_0: float) -> int:
    """The smallest threshold >= 2 at which a one-record key passes with probability at most ``delta_0``."""
    t = max(2, 1 + math.ceil(noise_multiplier * NormalDist().inv_cdf(1.0 - max(delta_0, 1e-300))) - 2)
    while t > 2 and threshold_delta(noise_multiplier, t - 1) <= delta_0:
        t -= 1
    while threshold_delta(noise_multiplier, t) > delta_0:
        t += 1
    return t


def plan(quantiles: int, histograms: int, epsilon: float, delta: float) -> Plan:
    """The largest equal zCDP share rho per release (epsilon = sqrt(8 rho) per quantile, multiplier
    1 / sqrt(2 rho) per histogram) whose ledger stays within (epsilon, delta), found by bisection."""
    accountant = Accountant(delta=delta)

    def at(rho: float) -> Plan:
        sigma = 1.0 / math.sqrt(2.0 * rho)
        return Plan(math.sqrt(8.0 * rho), sigma, threshold_for(sigma, THRESHOLD_SHARE * delta / max(histograms, 1)))

    def fits(rho: float) -> bool:
        return accountant.epsilon_if(*at(rho).events(quantiles, histograms)) <= _AIM * epsilon

    lo, hi = 1e-12, 1e6
    if not fits(lo):
        raise ConfigError(f"schema: epsilon {epsilon:g} at delta {delta:g} is too small for "
                          f"{quantiles + histograms} releases")
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return at(lo)


def _measure(unknown: Unknown, cells: np.ndarray, chosen: Plan, accountant: Accountant) -> dict[str, Any]:
    """One column's private parts, each from its release (charged first): bounds, categories, missing."""
    present = cells != ""
    out: dict[str, Any] = {}
    if unknown.codec is not None and unknown.grid is not None:
        values = unknown.codec.numbers(cells[present])
        released = quantile_releases(values, unknown.grid, LEVELS, epsilon=chosen.quantile_epsilon,
                                     accountant=accountant, stage=STAGE)
        out["lower"], out["upper"] = ordered_bounds(unknown, released)
    counts = {"noise_multiplier": chosen.noise_multiplier, "threshold": chosen.threshold, "accountant": accountant,
              "stage": STAGE}
    if unknown.categories:
        out["categories"] = list(thresholded_counts([category_key(c) for c in cells[present]], **counts))
    if unknown.missing:
        out["missing"] = MISSING in thresholded_counts([MISSING] * int((~present).sum()), **counts)
    return out


def release_schema(spec: Any, header: list[str], cells: np.ndarray, *, epsilon: float, delta: float,
                   report: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema ``spec`` declares, its private parts measured on ``cells`` (text, [rows, columns] under
    ``header``) within (epsilon, delta) and the release recorded (``report``: its privacy report's file name);
    and the release's privacy report (its ledger, its public inputs)."""
    if not (math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise ConfigError(f"schema: epsilon must be > 0 and delta in (0, 1), got {epsilon:g} and {delta:g}")
    todo = unknowns(spec)
    if not todo:
        raise ConfigError("schema: no column marks a part private (lower/upper, categories or missing: private)")
    names = [c.get("name") for c in (spec["columns"] if isinstance(spec, dict) else spec)]
    if header != names:
        raise ConfigError(f"schema: the data's header does not list the declared columns in order "
                          f"({', '.join(map(str, names))})")
    quantiles = len(LEVELS) * sum(u.grid is not None for u in todo)
    histograms = sum(u.categories + u.missing for u in todo)
    chosen = plan(quantiles, histograms, epsilon, delta)
    accountant = Accountant(delta=delta, budget_epsilon=epsilon)
    measured = {u.name: _measure(u, cells[:, u.position], chosen, accountant) for u in todo}
    privacy = _report(accountant, todo, chosen)
    released = Released(privacy["epsilon"], privacy["delta"], tuple(privacy["measured"]), report)
    schema = {**resolved(spec, measured), RELEASED: released.to_dict()}
    table_schema(schema)  # a bad declaration is refused here, after the release (its report is still written)
    return schema, privacy


def _report(accountant: Accountant, todo: list[Unknown], chosen: Plan) -> dict[str, Any]:
    """The privacy report of the schema's release: verdict first, epsilon and delta, ledger, public inputs."""
    parts = [(u.name, [p for p, on in (("bounds", u.grid is not None), ("categories", u.categories),
                                        ("missing", u.missing)) if on]) for u in todo]
    measured = [f"{name}: {', '.join(what)}" for name, what in parts]
    public = {"declaration": "the column names, kinds, ranges or candidates and what is private",
              "quantile_levels": list(LEVELS), "grid_points": GRID_POINTS, "threshold": chosen.threshold,
              "noise_multiplier": chosen.noise_multiplier, "quantile_epsilon": chosen.quantile_epsilon}
    return stamped({"release": "table schema", **accountant.report(), "measured": measured, "public_inputs": public,
                    "ledger": accountant.ledger.to_dict()})
