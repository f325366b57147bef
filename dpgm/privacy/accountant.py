"""The RDP accountant: turns ledger entries into one (epsilon, delta) and enforces budgets.

``rdp_curve`` maps one event to its RDP curve (rdp.py holds the formulas); ``Accountant``
owns a ledger, keeps the running sum of curves, refuses a charge that would exceed the
budget BEFORE the mechanism runs, and reports epsilon overall and per stage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy import rdp as R
from dpgm.privacy.events import (
    DpEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    Neighbouring,
    PureDpEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
)
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger


@lru_cache(maxsize=4096)
def _rdp_curve_cached(event: DpEvent, orders: tuple[float, ...]) -> np.ndarray:
    if isinstance(event, GaussianEvent):
        return R.gaussian_rdp(orders, event.noise_multiplier)
    if isinstance(event, SampledGaussianEvent):
        return R.sampled_gaussian_rdp(orders, event.sampling_rate, event.noise_multiplier)
    if isinstance(event, SampledJointGaussianEvent):
        if event.bound == "joint":
            return R.joint_sampled_rdp(orders, event.sampling_rate, event.noise_multipliers)
        return R.holder_sampled_rdp(orders, event.sampling_rate, event.noise_multipliers)
    if isinstance(event, LaplaceEvent):
        return R.laplace_rdp(orders, event.epsilon)
    if isinstance(event, ExponentialEvent):
        return R.exponential_rdp(orders, event.epsilon)
    if isinstance(event, PureDpEvent):
        return R.pure_dp_rdp(orders, event.epsilon)
    raise TypeError(f"no RDP analysis for event kind {event.kind!r}")


def rdp_curve(event: DpEvent, orders: Sequence[float] = R.DEFAULT_ORDERS) -> np.ndarray:
    """RDP of one occurrence of ``event`` at each order (a read-only, cached array)."""
    curve = _rdp_curve_cached(event, tuple(float(o) for o in orders))
    curve.setflags(write=False)
    return curve


def ledger_rdp(entries: Sequence[LedgerEntry], orders: Sequence[float] = R.DEFAULT_ORDERS) -> np.ndarray:
    """Composition: the RDP curves of all entries (times their counts) add up."""
    total = np.zeros(len(orders))
    for entry in entries:
        total = total + entry.count * rdp_curve(entry.event, orders)
    return total


@dataclass(frozen=True)
class PrivacySpent:
    """(epsilon, delta) with the order that achieved it and the conversion used."""

    epsilon: float
    delta: float
    order: float
    conversion: str = "tight"

    def to_dict(self) -> dict[str, Any]:
        order = self.order if math.isfinite(self.order) else None  # JSON has no Infinity
        return {"epsilon": self.epsilon, "delta": self.delta, "order": order, "conversion": self.conversion}


#: Events that are pure epsilon-DP: their epsilons also compose by plain addition.
_PURE_EVENTS = (LaplaceEvent, PureDpEvent, ExponentialEvent)


def pure_epsilon(event: DpEvent, count: int = 1) -> float:
    """Pure-DP epsilon of ``count`` uses of ``event`` (basic composition); inf if not pure."""
    return count * event.epsilon if isinstance(event, _PURE_EVENTS) else math.inf


def epsilon_from_rdp(
    rdp: Sequence[float], delta: float, orders: Sequence[float] = R.DEFAULT_ORDERS, pure: float = math.inf
) -> PrivacySpent:
    """The tighter valid conversion (Balle et al. 2020); the classical one is never smaller.

    ``pure``: the ledger's pure-DP epsilon by basic composition (inf unless every release is
    pure); it is also (epsilon, delta)-DP for any delta, so the smaller of the two is reported.
    """
    eps, order = R.rdp_to_epsilon(orders, rdp, delta, method="tight")
    if pure < eps:
        return PrivacySpent(epsilon=pure, delta=delta, order=math.inf, conversion="pure composition")
    return PrivacySpent(epsilon=eps, delta=delta, order=order, conversion="tight")


def ledger_epsilon(
    entries: Sequence[LedgerEntry], delta: float, orders: Sequence[float] = R.DEFAULT_ORDERS
) -> PrivacySpent:
    """Epsilon of a list of ledger entries at ``delta`` (RDP, or basic composition if all pure)."""
    pure = sum(pure_epsilon(e.event, e.count) for e in entries)
    return epsilon_from_rdp(ledger_rdp(entries, orders), delta, orders, pure)


class Accountant:
    """Owns a ledger; charges events against an optional (epsilon, delta) budget.

    ``charge`` computes what the ledger would spend with the new entry and raises
    PrivacyBudgetError, leaving the ledger untouched, if that exceeds the budget. Call it
    before the mechanism touches the data.
    """

    def __init__(
        self,
        ledger: PrivacyLedger | None = None,
        *,
        delta: float,
        budget_epsilon: float | None = None,
        orders: Sequence[float] = R.DEFAULT_ORDERS,
    ) -> None:
        if not (isinstance(delta, (int, float)) and 0 < delta < 1):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        if budget_epsilon is not None and not (math.isfinite(budget_epsilon) and budget_epsilon > 0):
            raise ValueError(f"budget_epsilon must be finite and > 0, got {budget_epsilon!r}")
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        if self.ledger.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError(
                f"the RDP accountant analyses add/remove neighbours only; this ledger assumes "
                f"{self.ledger.neighbouring.value!r} (DESIGN.md section 2)"
            )
        self.delta = float(delta)
        self.budget_epsilon = budget_epsilon
        self.orders = tuple(float(o) for o in orders)
        self._rdp = ledger_rdp(self.ledger.entries, self.orders)
        self._pure = sum(pure_epsilon(e.event, e.count) for e in self.ledger.entries)

    def rdp(self) -> np.ndarray:
        return self._rdp.copy()

    def spent(self) -> PrivacySpent:
        """Epsilon of everything in the ledger so far, at this accountant's delta."""
        return epsilon_from_rdp(self._rdp, self.delta, self.orders, self._pure)

    def epsilon_if(self, event: DpEvent, count: int = 1) -> float:
        """Epsilon the ledger would reach after ``count`` more ``event``s (nothing recorded)."""
        rdp = self._rdp + count * rdp_curve(event, self.orders)
        return epsilon_from_rdp(rdp, self.delta, self.orders, self._pure + pure_epsilon(event, count)).epsilon

    def charge(self, stage: str, event: DpEvent, count: int = 1) -> None:
        """Record ``count`` uses of ``event`` by ``stage``; refuse (raise) if over budget."""
        entry = LedgerEntry(stage, event, count)
        new_rdp = self._rdp + count * rdp_curve(event, self.orders)
        new_pure = self._pure + pure_epsilon(event, count)
        if self.budget_epsilon is not None:
            eps = epsilon_from_rdp(new_rdp, self.delta, self.orders, new_pure).epsilon
            if eps > self.budget_epsilon:
                raise PrivacyBudgetError(
                    f"stage {stage!r} would raise epsilon to {eps:.4g}, above the budget "
                    f"{self.budget_epsilon:.4g} (delta={self.delta:g}); nothing was released"
                )
        self.ledger.append(entry)
        self._rdp = new_rdp
        self._pure = new_pure

    def stage_epsilons(self) -> dict[str, float]:
        """Epsilon each stage would cost on its own (at this delta). They do not add up."""
        out = {}
        for stage in self.ledger.stages():
            entries = [e for e in self.ledger.entries if e.stage == stage]
            out[stage] = ledger_epsilon(entries, self.delta, self.orders).epsilon
        return out

    def dependent_bounds(self) -> list[str]:
        """Analyses used for dependent releases sharing a batch ("joint" and/or "holder")."""
        return sorted({e.event.bound for e in self.ledger.entries if isinstance(e.event, SampledJointGaussianEvent)})

    def report(self) -> dict[str, Any]:
        """JSON-ready summary: epsilon, delta, order, neighbouring relation, accountant, stages."""
        return {
            **self.spent().to_dict(),
            "neighbouring": self.ledger.neighbouring.value,
            "accountant": "rdp",
            "dependent_bounds": self.dependent_bounds(),
            "budget_epsilon": self.budget_epsilon,
            "stage_epsilons": self.stage_epsilons(),
        }
