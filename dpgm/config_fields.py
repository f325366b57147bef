"""What every config option is made of: a documented field, a check, and how a noise option is released."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from dpgm.errors import ConfigError


def opt(default: Any, doc: str) -> Any:
    """A dataclass field with a default and its one line of documentation."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


def released(sensitivity: str, stage: str, multiplier: str = "this multiplier") -> str:
    """How a noise option's statistic is released, in the words every such option's help uses."""
    return f"(Gaussian with {multiplier}, L2 sensitivity {sensitivity}; ledger stage {stage})"


def require(cond: bool, section: str, key: str, msg: str) -> None:
    """Raise ConfigError naming ``section.key`` unless ``cond``."""
    if not cond:
        raise ConfigError(f"{section}.{key}: {msg}")


#: The largest epsilon a run or a baseline accepts (public, docs/privacy.md): far past any guarantee that
#: means something (a likelihood ratio of e^1000), and small enough that every quantity derived from it
#: (N epsilon in the rules, the calibrated noise, the accountant's curves) stays finite.
MAX_EPSILON = 1000.0


def check_epsilon(epsilon: float, key: str) -> None:
    """Refuse an epsilon that is not a finite number in (0, MAX_EPSILON], naming ``key``."""
    ok = isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and 0 < epsilon <= MAX_EPSILON
    if not ok:
        raise ConfigError(f"{key}: must be a number in (0, {MAX_EPSILON:g}], got {epsilon!r}")


def check_delta(delta: float, magnitude: int, key: str) -> None:
    """Refuse a delta outside (0, 1/N], N the records' order of magnitude: a larger delta would allow
    releasing a whole record with probability delta, and a data set holds n >= N records."""
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ConfigError(f"{key}: must be in (0, 1), got {delta!r}")
    if delta > 1.0 / magnitude:
        raise ConfigError(f"{key} = {delta:g} is above 1/N for the records' order of magnitude N = {magnitude}: "
                          "choose delta well below 1/N (default 1/(100 N))")
