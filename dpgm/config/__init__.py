"""Run configuration: the typed sections (``dpgm.config_sections``) loaded from YAML and validated.

Every option is documented once, in its field's ``doc``; ``python -m dpgm.config`` (``dpgm
config``) prints them all, with the components registered for the options that name one.
Unknown keys are errors naming the key and its section; values are range-checked;
``--set section.key=value`` overrides (the value is parsed as YAML).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import math
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml

from dpgm.config_fields import opt
from dpgm.config_sections import (
    STATISTICS_ONLY,
    Config,
    DataConfig,
    ModelConfig,
    PartitionConfig,
    PrivacyConfig,
    TrainingConfig,
)
from dpgm.errors import ConfigError

__all__ = ["DEFAULT_CONFIG", "SHIPPED_CONFIGS", "STATISTICS_ONLY", "Config", "DataConfig", "ModelConfig",
           "PartitionConfig", "PrivacyConfig", "TrainingConfig", "config_from_dict", "describe", "load_config", "opt",
           "resolve_config_path", "shipped_config_names"]


# ---------------------------------------------------------------- loading


def _check_type(value: Any, tp: Any, where: str) -> Any:
    """Check (and gently coerce int -> float) ``value`` against annotation ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arm in typing.get_args(tp):
            try:
                return _check_type(value, arm, where)
            except ConfigError as exc:
                errors.append(str(exc))
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
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_check_type(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if tp is float:
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
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {tp}")  # pragma: no cover


def _build(cls: type, data: Any, section: str) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{section}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in section {section!r} (known: {', '.join(sorted(names))})")
    kwargs = {k: _check_type(v, hints[k], f"{section}.{k}" if section != "config" else k) for k, v in data.items()}
    return cls(**kwargs)


def _apply_override(data: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise ConfigError(f"override {assignment!r} must look like section.key=value")
    key, raw = assignment.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw != "" else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {assignment!r}: cannot parse value ({exc.__class__.__name__})") from None
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {assignment!r}: {part!r} is not a section")
    node[parts[-1]] = value


def config_from_dict(data: dict[str, Any], overrides: Sequence[str] = ()) -> Config:
    """Build and validate a Config from a mapping plus ``section.key=value`` overrides (applied
    to a deep copy: the caller's mapping, nested sections included, is left as it was)."""
    data = copy.deepcopy(dict(data or {}))
    for assignment in overrides:
        _apply_override(data, assignment)
    cfg = _build(Config, data, "config")
    cfg.validate()
    cfg.stated = frozenset(_dotted_keys(data))  # what ``rules: public`` must leave alone
    return cfg


def _dotted_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    """'section.key' for every key a config mapping states (top-level keys as they are)."""
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and not prefix:
            keys += _dotted_keys(value, f"{key}.")
        else:
            keys.append(prefix + key)
    return keys


def _shipped_configs() -> Path:
    """The package data ``dpgm/configs`` (in a checkout, a link to the repository's configs/ folder,
    which a checkout without links, e.g. on Windows, is read from instead)."""
    folder = Path(str(importlib.resources.files("dpgm") / "configs")).resolve()
    return folder if folder.is_dir() else Path(__file__).resolve().parents[2] / "configs"


#: The configs shipped with dpgm: package data of the installed wheel (``dpgm/configs/*.yaml``).
SHIPPED_CONFIGS = _shipped_configs()
#: The shipped config of the generic rules (``rules: public``, configs/transactions.yaml): the one
#: ``dpgm.Synthesizer``, ``dpgm.fit`` and ``dpgm plan`` use unless given another.
DEFAULT_CONFIG = "transactions"


def shipped_config_names() -> list[str]:
    """The names ``resolve_config_path`` accepts for the shipped configs: ``csv``, ``digits``, ..."""
    return sorted(p.stem for p in SHIPPED_CONFIGS.glob("*.yaml"))


def resolve_config_path(path: str | Path) -> Path:
    """``path`` as given, else a shipped config of that name (``mnist`` or ``mnist.yaml``)."""
    path = Path(path)
    if path.is_file():
        return path
    shipped = SHIPPED_CONFIGS / (path.name if path.suffix else f"{path.name}.yaml")
    if len(path.parts) == 1 and shipped.is_file():
        return shipped
    names = ", ".join(shipped_config_names()) or "none found"
    raise ConfigError(f"{path}: config file not found (shipped configs: {names})")


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> Config:
    """Read a YAML config file (or a shipped config by name); errors name the file and the key."""
    path = resolve_config_path(path)
    try:
        data = yaml.safe_load(path.read_bytes())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {_yaml_problem(exc)}") from None
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise ConfigError(f"{path}: cannot read it ({reason})") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    try:
        return config_from_dict(data or {}, overrides)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: where in the (public) config file, and what is wrong there."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        where = f" at line {mark.line + 1}, column {mark.column + 1}"
    elif isinstance(exc, yaml.reader.ReaderError):  # bytes that are not text: no line to show
        where = f" at byte {exc.position} ({exc.encoding} text expected)"
    else:
        where = ""
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or type(exc).__name__
    return f"not valid YAML{where}: {' '.join(str(problem).split())}"


def option_doc(f: dataclasses.Field, key: str, registered: Mapping[str, str]) -> str:
    """The documentation of option ``key``; an option that names a registered component (``registered``:
    config key -> the components in words, ``Registry.listing``) ends with what is registered now."""
    doc = f.metadata.get("doc", "")
    return f"{doc}. Registered: {registered[key]}" if key in registered else doc


def describe(cls: type = Config, prefix: str = "", registered: Mapping[str, str] | None = None) -> list[str]:
    """One line per option: dotted key, default and documentation (``option_doc``)."""
    lines, registered = [], registered or {}
    for f in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[f.name]
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hint):
            lines.append(f"{key}:  {f.metadata.get('doc', '')}")
            lines += describe(hint, key + ".", registered)
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            lines.append(f"  {key} = {default!r}  # {option_doc(f, key, registered)}")
    return lines
