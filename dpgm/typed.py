"""Typed values from YAML-like mappings: a dataclass built from a mapping, each value checked against its annotation.

The run's config (``dpgm.config``) and every registered component's options (``dpgm.registry``) load
through here, so a value of the wrong type is the same one-line error wherever it is given.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Literal

from dpgm.errors import ConfigError


def check_type(value: Any, tp: Any, where: str) -> Any:
    """Check (and gently coerce int -> float) ``value`` against annotation ``tp``; ``where`` names it in errors."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arm in typing.get_args(tp):
            try:
                return check_type(value, arm, where)
            except ConfigError:
                pass
        raise ConfigError(f"{where}: {value!r} does not match {tp}")
    if tp is type(None):
        if value is None:
            return None
        raise ConfigError(f"{where}: expected null, got {value!r}")
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        raise ConfigError(f"{where}: {value!r} is not one of {list(typing.get_args(tp))}")
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{where}: expected a mapping of names to values, got {value!r}")
        return dict(value)
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [check_type(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        return value if isinstance(value, tp) else build(tp, value, where)  # type: ignore[arg-type]
    if tp is float:
        return _number(value, where)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp in (bool, str):
        if not isinstance(value, tp):
            raise ConfigError(f"{where}: expected {'true or false' if tp is bool else 'a string'}, got {value!r}")
        return value
    if tp is Any:
        return value
    raise ConfigError(f"{where}: unsupported type {tp}")  # pragma: no cover


def _number(value: Any, where: str) -> float:
    """A finite float from a number (or a string YAML 1.1 left unread: ``1e-5``)."""
    if isinstance(value, str):  # YAML 1.1 reads 1e-5 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{where}: must be finite, got {value!r}")
    return float(value)


def build(cls: type, data: Any, section: str) -> Any:
    """``cls`` from the mapping ``data`` (None: every default); unknown keys and mistyped values are
    errors naming ``section`` (``"config"``: the top level, whose keys stand alone)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{section}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in section {section!r} (known: {', '.join(sorted(names))})")
    kwargs = {k: check_type(v, hints[k], f"{section}.{k}" if section != "config" else k) for k, v in data.items()}
    return cls(**kwargs)
