"""A table's declared schema: its columns in order, each with its kind and public domain.

Given as a path to a JSON or YAML file, as the dict ``json.load`` gives (top-level ``columns``, an
optional ``target``: the column a classifier is meant to predict, which the table metrics default to, and an
optional ``released``: the DP release its measured parts came from, ``dpgm.tables.released``; other
top-level keys and other keys of a column are ignored, as the shared tables' ``NAME.schema.json`` carry
them), as a list of column declarations, or built in code (``TableSchema([Column(...), ...])``). The
schema is public: it sets ``data.attribute_sizes`` and the item names (``column=value``), and the release
carries it (``schema.json``) to decode its records. Every bad declaration is a one-line ConfigError.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from dpgm.errors import ConfigError
from dpgm.locations import resolve_data_path
from dpgm.tables.codecs import CODECS, MISSING, Codec, Numeric
from dpgm.tables.column import Column
from dpgm.tables.released import RELEASED, Released, released_from

#: The release's copy of the schema its records are decoded with (release/schema.json).
SCHEMA_FILE = "schema.json"


@dataclass(frozen=True)
class TableSchema:
    """The declared columns, in the order the table holds them, the prediction target (a column's name,
    or None) and the DP release of its measured parts (None: all declared); checked when built."""

    columns: tuple[Column, ...]
    target: str | None = None
    released: Released | None = None
    codecs: tuple[Codec, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        columns = tuple(self.columns)
        if not columns or not all(isinstance(c, Column) for c in columns):
            raise ConfigError("schema: columns must be a non-empty list of column declarations")
        names = [c.name for c in columns]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ConfigError(f"column {twice!r}: declared twice")
        if self.target is not None and self.target not in names:
            raise ConfigError(f"schema: target {self.target!r} is not a declared column ({', '.join(names)})")
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "codecs", tuple(_codec(c) for c in columns))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @cached_property
    def values(self) -> list[list[str]]:
        """Each column's attribute values: its codec's labels, then MISSING where missing values occur."""
        return [codec.labels() + ([MISSING] if column.missing else [])
                for column, codec in zip(self.columns, self.codecs)]

    @property
    def attribute_sizes(self) -> list[int]:
        """``data.attribute_sizes``: the number of values of each column's attribute."""
        return [len(v) for v in self.values]

    @property
    def item_names(self) -> list[str]:
        """One item per attribute value, ``column=value``, running column by column."""
        return [f"{name}={value}" for name, values in zip(self.names, self.values) for value in values]

    def to_dict(self) -> dict[str, Any]:
        """The schema as JSON declares it, every default spelled out (the release's schema.json)."""
        target = {} if self.target is None else {"target": self.target}
        released = {} if self.released is None else {RELEASED: self.released.to_dict()}
        return {"columns": [codec.declaration() for codec in self.codecs], **target, **released}


def _codec(column: Column) -> Codec:
    if column.kind not in CODECS.entries:
        raise column.problem(f"unknown kind {column.kind!r} (known: {', '.join(CODECS.names())})")
    return CODECS.entry(column.kind).factory(column)


def table_schema(spec: Any) -> TableSchema:
    """The schema ``spec`` declares: a TableSchema, a dict with ``columns``, a list of columns, or a path
    to a JSON or YAML file (as given, else under $DPGM_DATA_DIR)."""
    if isinstance(spec, TableSchema):
        return spec
    if isinstance(spec, (str, Path)):
        spec = read_declaration(Path(spec))
    target, released = None, None
    if isinstance(spec, dict):
        if "columns" not in spec:
            raise ConfigError("schema: no top-level 'columns' list")
        target = spec.get("target")
        if target is not None and not isinstance(target, str):
            raise ConfigError(f"schema: target must be a column's name, got {type(target).__name__}")
        released = released_from(spec.get(RELEASED))
        spec = spec["columns"]
    if not isinstance(spec, (list, tuple)):
        raise ConfigError(f"schema: expected a path, a mapping with 'columns' or a list of columns, got "
                          f"{type(spec).__name__}")
    columns = tuple(c if isinstance(c, Column) else Column.from_dict(c, j) for j, c in enumerate(spec))
    return TableSchema(columns, target, released)


def read_declaration(path: Path) -> Any:
    """A schema file's content: JSON, read as JSON (YAML reads ``1e-06`` as text), else YAML; a one-line error
    otherwise."""
    found = resolve_data_path(path)
    try:
        content = found.read_bytes()
        try:
            return json.loads(content)
        except ValueError:
            return yaml.safe_load(content)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the schema ({exc.strerror or type(exc).__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not a valid JSON or YAML schema{where}") from None


def schema_text(schema: TableSchema) -> str:
    """The schema as the release writes it (JSON)."""
    return json.dumps(schema.to_dict(), indent=2) + "\n"


def released_schema(folder: Path) -> TableSchema | None:
    """The schema a release folder carries (None: its records are not a declared table)."""
    path = folder / SCHEMA_FILE
    return table_schema(path) if path.is_file() else None


def outside_domain(schema: TableSchema) -> str:
    """What becomes of a value outside its column's declared domain, and that no such value is counted."""
    numeric = [isinstance(codec, Numeric) for codec in schema.codecs]
    fates = ["a number or time outside its column's bounds is clipped into them"] if any(numeric) else []
    if any(c.other for c in schema.columns):
        fates.append("a value outside a column's categories trains as its other value where the column declares "
                     "other: true (and is refused before anything is written where it does not)")
    elif not all(numeric):
        fates.append("a value outside a column's categories is refused before anything is written")
    return (f"{', '.join(fates)}: such values are neither counted nor reported (not counted: the number of such "
            "values is not released)")


def public_input(schema: TableSchema) -> dict[str, Any]:
    """The schema as the privacy report lists it among the public inputs: each column's kind and domain, what
    becomes of a value outside it, and the DP release its measured parts came from where it has one."""
    def domain(codec: Codec) -> str:
        declared = codec.declaration()
        if "categories" in declared:
            other = f" and other ({declared['other_label']!r})" if declared.get("other") else ""
            return f"{len(declared['categories'])} categories{other}"
        bins = declared["bins"]
        return f"[{declared['lower']}, {declared['upper']}] in {bins if isinstance(bins, int) else len(bins) + 1} bins"

    columns = [f"{c.name}: {c.kind}, {domain(codec)}{', may be missing' if c.missing else ''}"
               for c, codec in zip(schema.columns, schema.codecs)]
    why = ("declared as data.schema: the columns, their kinds and domains (categories, bounds and bins, missing "
           "values); it sets the item universe and data.attribute_sizes, and the release carries it "
           f"({SCHEMA_FILE}) to decode its records; {outside_domain(schema)}")
    if schema.released is None:
        return {"quantity": "table schema", "value": columns, "why": why}
    return {"quantity": "table schema", "value": columns, "why": f"{why}; {schema.released.sentence()}",
            RELEASED: schema.released.to_dict()}
