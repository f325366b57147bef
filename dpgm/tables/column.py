"""One declared column of a table: its name, kind and public domain (categories, or bounds and bins)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpgm.errors import ConfigError

#: The keys of a column declaration that dpgm reads; any other key (a note, where the domain came from) is ignored.
COLUMN_KEYS = ("name", "kind", "categories", "lower", "upper", "bins", "missing")


@dataclass(frozen=True)
class Column:
    """A column's declaration: ``kind`` names its codec (``dpgm.tables.codecs.CODECS``); ``categories`` for
    categorical and binary columns, ``lower``/``upper`` (inclusive) and ``bins`` for numbers and datetimes;
    ``missing``: whether the column may hold missing values. Checked by its codec."""

    name: str
    kind: str
    categories: tuple[Any, ...] | None = None
    lower: Any = None
    upper: Any = None
    bins: int | tuple[Any, ...] | None = None
    missing: bool = False

    @classmethod
    def from_dict(cls, spec: Any, position: int) -> Column:
        """A column from its declaration (a mapping); ``position`` names it while its name is unknown."""
        if not isinstance(spec, dict):
            raise ConfigError(f"column {position + 1}: expected a mapping with name and kind, "
                              f"got {type(spec).__name__}")
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"column {position + 1}: name must be a non-empty string")
        if not isinstance(spec.get("kind"), str):
            raise ConfigError(f"column {name!r}: kind must be a string")
        missing = spec.get("missing", False)
        if not isinstance(missing, bool):
            raise ConfigError(f"column {name!r}: missing must be true or false")
        categories, bins = spec.get("categories"), spec.get("bins")
        if categories is not None and not isinstance(categories, (list, tuple)):
            raise ConfigError(f"column {name!r}: categories must be a list")
        return cls(name=name, kind=spec["kind"], categories=None if categories is None else tuple(categories),
                   lower=spec.get("lower"), upper=spec.get("upper"),
                   bins=tuple(bins) if isinstance(bins, (list, tuple)) else bins, missing=missing)

    def problem(self, text: str) -> ConfigError:
        """A one-line error naming this column and what is wrong with its declaration."""
        return ConfigError(f"column {self.name!r}: {text}")
