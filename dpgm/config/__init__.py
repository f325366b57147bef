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
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from dpgm.config.moved import moved_model_keys
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
from dpgm.typed import build

__all__ = ["DEFAULT_CONFIG", "SHIPPED_CONFIGS", "STATISTICS_ONLY", "Config", "DataConfig", "ModelConfig",
           "PartitionConfig", "PrivacyConfig", "TrainingConfig", "component_rows", "config_from_dict", "default_of",
           "describe", "load_config", "moved_model_keys", "opt", "resolve_config_path", "shipped_config_names"]


# ---------------------------------------------------------------- loading


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
    if "model" in data:  # older configs' flat model keys (model.hidden, ...) as model.options of their kind
        data["model"] = moved_model_keys(data["model"])
    cfg = build(Config, data, "config")
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


def default_of(f: dataclasses.Field) -> Any:
    """The field's default (from its factory for lists and dicts)."""
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


def component_rows(key: str, kinds: Mapping[str, type]) -> list[tuple[str, Any, Any, str]]:
    """(dotted key, default, type, doc) of every option of every component in ``kinds`` (name -> its options
    dataclass) under the section ``key`` (``model.options``); each doc starts with the component that reads it."""
    return [(f"{key}.{f.name}", default_of(f), typing.get_type_hints(cls)[f.name],
             f"{name}: {f.metadata.get('doc', '')}".rstrip(": "))
            for name, cls in sorted(kinds.items()) for f in dataclasses.fields(cls)]


def describe(cls: type = Config, prefix: str = "", registered: Mapping[str, str] | None = None,
             kinds: Mapping[str, Mapping[str, type]] | None = None) -> list[str]:
    """One line per option: dotted key, default and documentation (``option_doc``); ``kinds``: for a section of
    components' own options (``model.options``), each component's options dataclass by name."""
    lines, registered, kinds = [], registered or {}, kinds or {}
    for f in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[f.name]
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hint):
            lines.append(f"{key}:  {f.metadata.get('doc', '')}")
            lines += describe(hint, key + ".", registered, kinds)
        else:
            lines.append(f"  {key} = {default_of(f)!r}  # {option_doc(f, key, registered)}")
            rows = component_rows(key, kinds.get(key, {}))
            lines += [f"    {name} = {default!r}  # {doc}" for name, default, _, doc in rows]
    return lines
