"""One declared column of a table: its name, kind and public domain (categories, or bounds and bins)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpgm.errors import ConfigError

#: The keys of a column declaration that dpgm reads; any other key (a note, where the domain came from) is ignored.
COLUMN_KEYS = ("name", "kind", "categories", "lower", "upper", "bins", "missing", "other", "other_label")


@dataclass(frozen=True)
class Column:
    """A column's declaration: ``kind`` names its codec (``dpgm.tables.codecs.CODECS``); ``categories`` for
    categorical and binary columns, ``lower``/``upper`` (inclusive) and ``bins`` for numbers and datetimes;
    ``missing``: whether the column may hold missing values; ``other`` (categorical): whether a value outside
    the categories trains as one more value, decoded as ``other_label``. Checked by its codec."""

    name: str
    kind: str
    categories: tuple[Any, ...] | None = None
    lower: Any = None
    upper: Any = None
    bins: int | tuple[Any, ...] | None = None
    missing: bool = False
    other: bool = False
    other_label: str | None = None

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
        other, other_label = spec.get("other", False), spec.get("other_label")
        if not isinstance(other, bool):
            raise ConfigError(f"column {name!r}: other must be true or false")
        if other_label is not None and (not isinstance(other_label, str) or not other_label):
            raise ConfigError(f"column {name!r}: other_label must be a non-empty string")
        categories, bins = spec.get("categories"), spec.get("bins")
        if categories is not None and not isinstance(categories, (list, tuple)):
            raise ConfigError(f"column {name!r}: categories must be a list")
        return cls(name=name, kind=spec["kind"], categories=None if categories is None else tuple(categories),
                   lower=spec.get("lower"), upper=spec.get("upper"),
                   bins=tuple(bins) if isinstance(bins, (list, tuple)) else bins, missing=missing, other=other,
                   other_label=other_label)

    def problem(self, text: str) -> ConfigError:
        """A one-line error naming this column and what is wrong with its declaration."""
        return ConfigError(f"column {self.name!r}: {text}")
