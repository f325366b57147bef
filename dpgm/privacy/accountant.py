"""The RDP accountant: turns ledger entries into one (epsilon, delta) and enforces budgets.

``rdp_curve`` maps one event to its RDP curve (rdp.py holds the formulas); ``Accountant``
owns a ledger, keeps the running sum of curves, refuses a charge that would exceed the
budget BEFORE the mechanism runs, and reports epsilon overall and per stage.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy import events as E
from dpgm.privacy import rdp as R
from dpgm.privacy.events import DEPENDENT_BOUNDS, DpEvent, Neighbouring
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger
from dpgm.privacy.noise_scale import noise_scale
from dpgm.privacy.verdict import ledger_reasons

#: The RDP curve of each event kind (orders, bound: the analysis of dependent releases).
RDP_CURVES: dict[type[DpEvent], Callable[[Any, tuple[float, ...], str], np.ndarray]] = {
    E.GaussianEvent: lambda e, orders, _b: R.gaussian_rdp(orders, e.noise_multiplier),
    E.DiscreteGaussianEvent: lambda e, orders, _b: R.discrete_gaussian_rdp(orders, e.noise_multiplier),
    E.DiscreteLaplaceEvent: lambda e, orders, _b: R.randomized_response_rdp(orders, e.epsilon),
    E.SampledGaussianEvent: lambda e, orders, _b: R.sampled_gaussian_rdp(orders, e.sampling_rate, e.noise_multiplier),
    E.SampledJointGaussianEvent: lambda e, orders, bound: (
        R.joint_sampled_rdp if bound == "joint" else R.holder_sampled_rdp
    )(orders, e.sampling_rate, e.noise_multipliers),
    E.LaplaceEvent: lambda e, orders, _b: R.laplace_rdp(orders, e.epsilon),
    E.ExponentialEvent: lambda e, orders, _b: R.exponential_rdp(orders, e.epsilon),
    E.AsymptoticExponentialEvent: lambda e, orders, _b: R.exponential_rdp(orders, e.epsilon),
    E.SmoothSensitivityGaussianEvent: lambda e, orders, _b: R.smooth_gaussian_rdp(
        orders, e.noise_multiplier, e.beta, e.dim),
    E.PureDpEvent: lambda e, orders, _b: R.pure_dp_rdp(orders, e.epsilon),
    E.ThresholdGaussianEvent: lambda e, orders, _b: R.discrete_gaussian_rdp(orders, e.noise_multiplier),
    E.ChoiceEvent: lambda e, orders, bound: _choice_rdp(e, orders, bound),
}
#: The delta_0 of each event kind whose curve holds only outside an event of probability delta_0 (approximate
#: RDP; docs/privacy.md, "A histogram of unknown keys"); every other kind's is 0.
DELTAS: dict[type[DpEvent], Callable[[Any], float]] = {
    E.ThresholdGaussianEvent: lambda e: R.threshold_delta(e.noise_multiplier, e.threshold),
    E.ChoiceEvent: lambda e: _choice_delta(e),
}


def event_delta(event: DpEvent, count: int = 1) -> float:
    """The delta_0 that ``count`` uses of ``event`` add to the delta their curves are converted at."""
    delta = DELTAS.get(type(event))
    return 0.0 if delta is None else count * delta(event)


def _choice_delta(event: E.ChoiceEvent) -> float:
    """What the largest branch's delta_0 adds to the branch taken's (as ``_choice_rdp`` for the curves)."""
    deltas = [sum(event_delta(e, c) for e, c in branch) for branch in event.branches]
    return max(deltas) - deltas[event.taken]


def _choice_rdp(event: E.ChoiceEvent, orders: tuple[float, ...], bound: str) -> np.ndarray:
    """What the pointwise maximum of the branches' curves adds to the branch taken (events.ChoiceEvent)."""
    curves = np.array([sum((c * _rdp_curve_cached(e, orders, bound) for e, c in branch), np.zeros(len(orders)))
                       for branch in event.branches])
    return curves.max(axis=0) - curves[event.taken]


@lru_cache(maxsize=4096)
def _rdp_curve_cached(event: DpEvent, orders: tuple[float, ...], bound: str) -> np.ndarray:
    curve = RDP_CURVES.get(type(event))
    if curve is None:
        raise TypeError(f"no RDP analysis for event kind {event.kind!r}")
    return curve(event, orders, bound)


def _check_bound(bound: str) -> None:
    if bound not in DEPENDENT_BOUNDS:
        raise ValueError(f"bound must be one of {DEPENDENT_BOUNDS}, got {bound!r}")


def rdp_curve(event: DpEvent, orders: Sequence[float] = R.DEFAULT_ORDERS, bound: str = "joint") -> np.ndarray:
    """RDP of one occurrence of ``event`` at each order (a read-only, cached array).

    ``bound`` picks the analysis of dependent releases (events.DEPENDENT_BOUNDS); other events ignore it.
    """
    _check_bound(bound)
    curve = _rdp_curve_cached(event, _orders_key(orders), bound)
    curve.setflags(write=False)
    return curve


def _orders_key(orders: Sequence[float]) -> tuple[float, ...]:
    """The orders as the curves' cache key: a tuple as it is (an accountant converted its own once: a training step
    charges an event per step), anything else converted."""
    return orders if isinstance(orders, tuple) else tuple(float(o) for o in orders)


def ledger_rdp(
    entries: Sequence[LedgerEntry], orders: Sequence[float] = R.DEFAULT_ORDERS, bound: str = "joint"
) -> np.ndarray:
    """Composition: the RDP curves of all entries (times their counts) add up. Equal events are
    counted together first, so a long ledger of a few alternating events costs a few curves."""
    counts: Counter[DpEvent] = Counter()
    for entry in entries:
        counts[entry.event] += entry.count
    total = np.zeros(len(orders))
    for event, count in counts.items():
        total = total + count * rdp_curve(event, orders, bound)
    return total


@dataclass(frozen=True)
class PrivacySpent:
    """(epsilon, delta) with the order that achieved it and the conversion used."""

    epsilon: float
    delta: float
    order: float
    conversion: str = "tight"
    #: The part of ``delta`` that thresholded releases spend (their delta_0's); the curves convert at the rest.
    delta_0: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        order = self.order if math.isfinite(self.order) else None  # JSON has no Infinity
        out = {"epsilon": self.epsilon, "delta": self.delta, "order": order, "conversion": self.conversion}
        return {**out, "delta_0": self.delta_0} if self.delta_0 > 0 else out


#: Events that are pure epsilon-DP: their epsilons also compose by plain addition.
_PURE_EVENTS = (E.LaplaceEvent, E.DiscreteLaplaceEvent, E.PureDpEvent, E.ExponentialEvent, E.AsymptoticExponentialEvent)


def pure_epsilon(event: DpEvent, count: int = 1) -> float:
    """Pure-DP epsilon of ``count`` uses of ``event`` (basic composition); inf if not pure."""
    return count * event.epsilon if isinstance(event, _PURE_EVENTS) else math.inf


def epsilon_from_rdp(
    rdp: Sequence[float], delta: float, orders: Sequence[float] = R.DEFAULT_ORDERS, pure: float = math.inf,
    delta_0: float = 0.0,
) -> PrivacySpent:
    """The tighter valid conversion (Balle et al. 2020); the classical one is never smaller.

    ``pure``: the ledger's pure-DP epsilon by basic composition (inf unless every release is
    pure); it is also (epsilon, delta)-DP for any delta, so the smaller of the two is reported.
    ``delta_0``: the ledger's approximate part (``event_delta``): the curve is converted at
    delta - delta_0, so the total is (epsilon, delta)-DP; inf when delta_0 >= delta.
    """
    if delta_0 > 0:
        if delta_0 >= delta:
            return PrivacySpent(epsilon=math.inf, delta=delta, order=math.nan, delta_0=delta_0)
        eps, order = R.rdp_to_epsilon(orders, rdp, delta - delta_0, method="tight")
        return PrivacySpent(epsilon=eps, delta=delta, order=order, delta_0=delta_0)
    eps, order = R.rdp_to_epsilon(orders, rdp, delta, method="tight")
    if pure < eps:
        return PrivacySpent(epsilon=pure, delta=delta, order=math.inf, conversion="pure composition")
    return PrivacySpent(epsilon=eps, delta=delta, order=order, conversion="tight")


def ledger_epsilon(
    entries: Sequence[LedgerEntry], delta: float, orders: Sequence[float] = R.DEFAULT_ORDERS, bound: str = "joint"
) -> PrivacySpent:
    """Epsilon of a list of ledger entries at ``delta`` (RDP, or basic composition if all pure)."""
    pure = sum(pure_epsilon(e.event, e.count) for e in entries)
    delta_0 = sum(event_delta(e.event, e.count) for e in entries)
    return epsilon_from_rdp(ledger_rdp(entries, orders, bound), delta, orders, pure, delta_0)


class Accountant:
    """Owns a ledger; the ONLY way to spend privacy (``spend``) or ask what is left (``can_afford``).

    ``spend`` computes what the ledger would reach with the new events and raises
    PrivacyBudgetError, leaving the ledger untouched, if that exceeds the budget: call it
    before the mechanism touches the data. ``bound`` is the analysis of dependent releases
    (events.DEPENDENT_BOUNDS) used for budgets; ``report`` gives every bound from one ledger.
    """

    def __init__(
        self,
        ledger: PrivacyLedger | None = None,
        *,
        delta: float,
        budget_epsilon: float | None = None,
        orders: Sequence[float] = R.DEFAULT_ORDERS,
        bound: str = "joint",
    ) -> None:
        if not (isinstance(delta, (int, float)) and 0 < delta < 1):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        if budget_epsilon is not None and not (math.isfinite(budget_epsilon) and budget_epsilon > 0):
            raise ValueError(f"budget_epsilon must be finite and > 0, got {budget_epsilon!r}")
        _check_bound(bound)
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        if self.ledger.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError(
                f"the RDP accountant analyses add/remove neighbours only; this ledger assumes "
                f"{self.ledger.neighbouring.value!r} (docs/privacy.md)"
            )
        self.delta = float(delta)
        self.budget_epsilon = budget_epsilon
        self.orders = tuple(float(o) for o in orders)
        self.bound = bound
        self._rdp, self._pure, self._delta_0 = self._totals(self.ledger.entries)
        #: Whether an event was charged while the noise was secretly scaled (an audit's test switch).
        self.weakened = False

    def rdp(self) -> np.ndarray:
        return self._rdp.copy()

    def curve(self, event: DpEvent) -> np.ndarray:
        """RDP curve of one ``event`` under this accountant's orders and bound."""
        return rdp_curve(event, self.orders, self.bound)

    def spent(self) -> PrivacySpent:
        """Epsilon of everything in the ledger so far, at this accountant's delta."""
        return epsilon_from_rdp(self._rdp, self.delta, self.orders, self._pure, self._delta_0)

    def _after(self, events: Sequence[DpEvent], count: int, stage: str = "?") -> tuple[np.ndarray, float, float]:
        """RDP, pure epsilon and delta_0 of the ledger with ``events`` added, summed entry by entry from the
        ledger itself: the same ledger gives the same numbers bit for bit, however it was built
        (an uninterrupted run and a resumed one report identical epsilons)."""
        trial = PrivacyLedger(list(self.ledger.entries), self.ledger.neighbouring)
        for event, repeats in Counter(events).items():
            trial.append(LedgerEntry(stage, event, repeats * count))
        return self._totals(trial.entries)

    def _totals(self, entries: Sequence[LedgerEntry]) -> tuple[np.ndarray, float, float]:
        return (ledger_rdp(entries, self.orders, self.bound), sum(pure_epsilon(e.event, e.count) for e in entries),
                sum(event_delta(e.event, e.count) for e in entries))

    def epsilon_if(self, *events: DpEvent, count: int = 1, stage: str = "?") -> float:
        """Epsilon the ledger would reach after ``count`` more of each of ``events`` by ``stage`` (nothing recorded)."""
        rdp, pure, delta_0 = self._after(events, count, stage)
        return epsilon_from_rdp(rdp, self.delta, self.orders, pure, delta_0).epsilon

    def can_afford(self, *events: DpEvent, count: int = 1, stage: str = "?") -> bool:
        """True when ``count`` more of each of ``events`` keeps the ledger within the budget."""
        return self.budget_epsilon is None or self.epsilon_if(*events, count=count, stage=stage) <= self.budget_epsilon

    def refuse_unless_affordable(self, stage: str, *events: DpEvent, count: int = 1) -> None:
        """Raise PrivacyBudgetError (nothing recorded) unless ``can_afford``; for whole-stage prechecks."""
        self._refuse_over_budget(stage, self._after(events, count, stage))

    def _refuse_over_budget(self, stage: str, after: tuple[np.ndarray, float, float]) -> None:
        """PrivacyBudgetError when the totals ``after`` (``_after``) exceed the budget."""
        if self.budget_epsilon is None:
            return
        epsilon = epsilon_from_rdp(after[0], self.delta, self.orders, after[1], after[2]).epsilon
        if epsilon > self.budget_epsilon:
            raise PrivacyBudgetError(
                f"stage {stage!r} would raise epsilon to {epsilon:.4g}, "
                f"above the budget {self.budget_epsilon:.4g} (delta={self.delta:g}); nothing was released"
            )

    def spend(self, stage: str, *events: DpEvent, count: int = 1) -> None:
        """Record ``count`` uses of each of ``events`` by ``stage``, all or none; refuse if over budget. The totals
        checked are the ledger's after the append (``_after`` builds its entries the same way), so they are kept."""
        if not events:
            raise ValueError("spend needs at least one event")
        after = self._after(events, count, stage)
        self._refuse_over_budget(stage, after)
        self.weakened |= noise_scale() != 1.0  # its noise is not what the events say: not private
        for event, repeats in Counter(events).items():  # equal events: one entry (order of first use)
            self.ledger.append(LedgerEntry(stage, event, repeats * count))
        self._rdp, self._pure, self._delta_0 = after

    def stage_epsilons(self) -> dict[str, float]:
        """Epsilon each stage would cost on its own (at this delta). They do not add up."""
        out = {}
        for stage in self.ledger.stages():
            entries = [e for e in self.ledger.entries if e.stage == stage]
            out[stage] = ledger_epsilon(entries, self.delta, self.orders, self.bound).epsilon
        return out

    def has_dependent_releases(self) -> bool:
        """True when the ledger holds releases that share a batch (the bound matters)."""
        return any(isinstance(e.event, E.SampledJointGaussianEvent) for e in self.ledger.entries)

    def report(self, bounds: Sequence[str] = DEPENDENT_BOUNDS) -> dict[str, Any]:
        """JSON-ready summary: epsilon, delta, order, neighbouring relation, accountant, stages, and
        why the ledger is not DP as charged (``not_private``: an asymptotic-only event, or noise scaled
        down while it was charged, ``noise_scale.scaled_noise``).

        ``epsilon_by_bound`` gives the ledger's epsilon under each of ``bounds``, computed from the
        same entries; the headline epsilon is this accountant's own bound.
        """
        dependent = self.has_dependent_releases()
        return {
            **self.spent().to_dict(),
            "neighbouring": self.ledger.neighbouring.value,
            "accountant": "rdp",
            "dependent_bound": self.bound if dependent else None,
            "epsilon_by_bound": (
                {b: ledger_epsilon(self.ledger.entries, self.delta, self.orders, b).epsilon for b in bounds}
                if dependent else {}
            ),
            "budget_epsilon": self.budget_epsilon,
            "stage_epsilons": self.stage_epsilons(),
            "not_private": ledger_reasons([entry.event for entry in self.ledger.entries])
            + (["weakened"] if self.weakened else []),
        }
