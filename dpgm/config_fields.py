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
