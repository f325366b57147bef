"""The verdict on a privacy report: is its output differentially private as claimed, and is the
guarantee weak. Every output that states a guarantee takes its first line from here.

A report lists why it is not private under ``not_private`` (keys of ``REASONS``); an epsilon
above ``WEAK_EPSILON`` is a weak guarantee (docs/privacy.md, "What every output says").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpgm.privacy.events import AsymptoticExponentialEvent

#: The first words of every output that is not differentially private as claimed.
NOT_PRIVATE = "NOT DIFFERENTIALLY PRIVATE"
#: The first words of every output whose epsilon is above WEAK_EPSILON.
WEAK = "WEAK GUARANTEE"
#: Above this epsilon the guarantee is weak: e^10 = 22,026, so someone 50% sure that a person is in
#: the data may end up 99.995% sure.
WEAK_EPSILON = 10.0
#: Why an output is not differentially private as claimed, by the key its report lists under
#: ``not_private``; a key not listed here still makes the output not private, in its own words.
REASONS: dict[str, str] = {
    "seeded": "a fixed seed makes its noise replayable by anyone who knows or guesses the seed "
              "(an experiment; set seed: null for a private run)",
    "diagnostics": "this run showed non-private diagnostics (--nonprivate-diagnostics)",
    "asymptotic": AsymptoticExponentialEvent.description,
    "real_data": "it holds exact figures computed from the real data (an evaluation: keep it with the "
                 "data custodian)",
    "weakened": "its noise was secretly scaled down while it claims the unscaled run's epsilon (an audit's test "
                "switch, --noise-scale)",
}
#: The reason a ledger entry of this event kind gives (an event that is not DP as charged).
EVENT_REASONS: dict[str, str] = {AsymptoticExponentialEvent.kind: "asymptotic"}


@dataclass(frozen=True)
class Verdict:
    """What a report's first line says: the not-private reasons (keys) and the epsilon."""

    not_private: tuple[str, ...]
    epsilon: float | None = None
    legacy: str | None = None  # the warning of a report written before it listed its reasons

    @property
    def private(self) -> bool:
        return not self.not_private and self.legacy is None

    @property
    def weak(self) -> bool:
        return self.epsilon is not None and self.epsilon > WEAK_EPSILON

    @property
    def reasons(self) -> list[str]:
        """Each reason in words: why it is not private, then why its guarantee is weak."""
        words = [REASONS.get(key, key) for key in self.not_private]
        words += [] if self.legacy is None else [self.legacy]
        if self.weak:
            words.append(f"epsilon = {self.epsilon:.4g} is above {WEAK_EPSILON:g}, a weak guarantee "
                         "(docs/privacy.md, \"What epsilon means for your data\")")
        return words

    @property
    def headline(self) -> str | None:
        """The line that opens every output (None for a private run at epsilon <= WEAK_EPSILON)."""
        if self.private and not self.weak:
            return None
        return f"{NOT_PRIVATE if not self.private else WEAK}: {'; '.join(self.reasons)}"

    @property
    def label(self) -> str:
        """What a release is, in a few words: only a private one at a strong guarantee is safe to share."""
        if not self.private:
            return "NOT differentially private (see the first line)"
        return f"weak guarantee: epsilon above {WEAK_EPSILON:g}" if self.weak else "safe to share"


def judge(report: Mapping[str, Any]) -> Verdict:
    """The verdict on ``report`` (a privacy report, or any output's JSON with the same keys)."""
    keys = list(report.get("not_private", []))
    if report.get("fixed_seed") and "seeded" not in keys:
        keys.append("seeded")
    warning = report.get("warning")
    legacy = (warning.removeprefix(NOT_PRIVATE + ": ")
              if not keys and isinstance(warning, str) and warning.startswith(NOT_PRIVATE) else None)
    epsilon = report.get("epsilon")
    return Verdict(tuple(sorted(set(keys))), float(epsilon) if isinstance(epsilon, (int, float)) else None,
                   legacy)


def stamped(report: Mapping[str, Any], reasons: Iterable[str] = ()) -> dict[str, Any]:
    """``report`` with its verdict first: ``warning`` (the headline, when there is one), then
    ``not_private`` (its reasons and ``reasons``), then the rest in order."""
    rest = {key: value for key, value in report.items() if key not in ("warning", "not_private")}
    verdict = judge({**report, "not_private": [*report.get("not_private", []), *reasons]})
    head = {} if verdict.headline is None else {"warning": verdict.headline}
    return {**head, "not_private": list(verdict.not_private), **rest}


def ledger_reasons(events: Sequence[Any]) -> list[str]:
    """The reasons the ledger's events give (an asymptotic-only mechanism: ``asymptotic``)."""
    return sorted({EVENT_REASONS[event.kind] for event in events if event.kind in EVENT_REASONS})
