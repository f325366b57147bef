"""Components by name: a registry maps a name to a factory and, optionally, its typed options.

Partitioners (``partition.method``) and models (``model.kind``) register here under the name a
config gives; a component from outside the package registers the same way (``register``) and
then runs through the same stages, ledger and report. Options of a registered component come
from its own section (``partition.options`` / ``model.options``), checked against its dataclass.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dpgm.errors import ConfigError
from dpgm.typed import check_type

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered component: its factory, the dataclass of its options (or None), one line of doc."""

    factory: Callable[..., T]
    options: type | None = None
    doc: str = ""


class Registry(Generic[T]):
    """Named factories of one kind of component; ``key`` is the config key that names them."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.entries: dict[str, Entry[T]] = {}

    def register(
        self, name: str, *, options: type | None = None, doc: str = ""
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: register ``factory`` under ``name`` (a name is registered once)."""

        def add(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self.entries:
                raise ConfigError(f"{self.key}: {name!r} is already registered")
            self.entries[name] = Entry(factory, options, doc)
            return factory

        return add

    def unregister(self, name: str) -> None:
        self.entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self.entries)

    def listing(self) -> str:
        """Every registered name with its line of doc, for the help of the option that names them."""
        return "; ".join(f"{name}: {self.entries[name].doc}" if self.entries[name].doc else name
                         for name in self.names())

    def entry(self, name: str) -> Entry[T]:
        """The entry of ``name``; an unknown name is a one-line error listing the known ones."""
        if name not in self.entries:
            raise ConfigError(f"{self.key}: unknown {name!r} (registered: {', '.join(self.names())})")
        return self.entries[name]

    def options(self, name: str, values: dict[str, Any] | None) -> Any:
        """The typed options of ``name`` built from its config section ``values`` (None: no options)."""
        cls = self.entry(name).options
        values = dict(values or {})
        if cls is None:
            if values:
                raise ConfigError(f"{self.key}: {name!r} takes no options (got {', '.join(sorted(values))})")
            return None
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"{self.key} {name!r}: unknown option {unknown[0]!r} (known: {', '.join(sorted(known))})")
        hints = typing.get_type_hints(cls)
        values = {key: check_type(value, hints[key], f"{self.key} {name!r}: option {key}")
                  for key, value in values.items()}
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{self.key} {name!r}: {exc}") from None
