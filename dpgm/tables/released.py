"""Where a schema's measured parts came from: the DP release of the private route (``dpgm schema --private``).

A schema written by the private route carries a top-level ``released`` key: the release's epsilon and delta,
the parts it measured (``"age: bounds"``) and the file name of its privacy report beside the schema. It is
public, like the rest of the schema, and the privacy report of a run that declares the schema lists it, so
that the two budgets can be stated together (they compose: docs/guide/tables.md, "The private route").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpgm.errors import ConfigError

#: The schema's top-level key that records its DP release.
RELEASED = "released"


@dataclass(frozen=True)
class Released:
    """The DP release a schema's measured parts came from: its (epsilon, delta), the parts, its report's file."""

    epsilon: float
    delta: float
    parts: tuple[str, ...]
    report: str | None = None

    def to_dict(self) -> dict[str, Any]:
        report = {} if self.report is None else {"report": self.report}
        return {"epsilon": self.epsilon, "delta": self.delta, "parts": list(self.parts), **report}

    def sentence(self) -> str:
        """The release in words, for the privacy report's public inputs."""
        where = "" if self.report is None else f"; its privacy report: {self.report}"
        return (f"its measured parts ({'; '.join(self.parts)}) came from a DP release of their own at epsilon = "
                f"{self.epsilon:.4g}, delta = {self.delta:g}, not on this run's ledger: the two together are "
                f"(epsilon + {self.epsilon:.4g}, delta + {self.delta:g})-DP{where}")


def _number(spec: dict[str, Any], key: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"schema: released.{key} must be a number")
    return float(value)


def released_from(spec: Any) -> Released | None:
    """The ``released`` key of a schema (None when absent), checked: a one-line ConfigError otherwise."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"schema: released must be a mapping with epsilon, delta and parts, got "
                          f"{type(spec).__name__}")
    epsilon, delta = _number(spec, "epsilon"), _number(spec, "delta")
    if epsilon <= 0 or not 0 <= delta < 1:
        raise ConfigError(f"schema: released.epsilon must be > 0 and released.delta in [0, 1), got {epsilon:g} "
                          f"and {delta:g}")
    parts, report = spec.get("parts"), spec.get("report")
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        raise ConfigError("schema: released.parts must be a non-empty list of the measured parts (text)")
    if report is not None and (not isinstance(report, str) or not report):
        raise ConfigError("schema: released.report must be the privacy report's file name")
    return Released(epsilon, delta, tuple(parts), report)
