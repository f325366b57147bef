"""The private route to a table's schema: what a declaration leaves to the data, and the schema once measured.

An owner who cannot declare a column's bounds or categories writes ``private`` in their place (``lower: private,
upper: private`` with a public ``range: [a, b]`` or ``candidates: [...]``; ``categories: private``; ``missing:
private``). Here no data is read: ``unknowns`` lists what must be measured, ``resolved`` writes what the DP
releases gave (``dpgm.data.private_schema``) into the declaration, with an ``other`` value for each column whose
categories were measured: its values under the threshold train as that value (docs/guide/tables.md, "The private
route").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.tables.codecs import CODECS, OTHER, Numeric, category_key
from dpgm.tables.column import Column
from dpgm.tables.draft import plain

#: The word that marks a part of a column's declaration as measured from the data by a DP release.
PRIVATE = "private"
#: A declared range becomes this many candidate bounds, evenly spaced (fewer for a short integer range).
GRID_POINTS = 1001
#: The quantile levels at which the lower and upper bounds are released: 1% of the values lie below, 1% above.
LEVELS = (0.01, 0.99)


@dataclass(frozen=True)
class Unknown:
    """One column's parts left to the data: its bounds among ``grid`` (read with ``codec``, whose bounds are the
    public range), its categories, whether it holds missing values."""

    name: str
    position: int
    codec: Numeric | None
    grid: np.ndarray | None
    categories: bool
    missing: bool


def _columns(spec: Any) -> list[Any]:
    columns = spec.get("columns") if isinstance(spec, dict) else spec
    if not isinstance(columns, list) or not columns:
        raise ConfigError("schema: expected a non-empty 'columns' list of column declarations")
    return columns


def _grid(column: dict[str, Any], name: str) -> tuple[Numeric, np.ndarray]:
    """The public candidate bounds of a column whose bounds are private: its ``candidates``, else ``range`` cut
    into GRID_POINTS; read by the column's codec over the public range (datetimes as seconds)."""
    given = column.get("candidates", column.get("range"))
    if not isinstance(given, list) or len(given) < 2:
        raise ConfigError(f"column {name!r}: private bounds need a public range: [lower, upper] or candidates: "
                          "[...] (at least two) that the bounds are chosen among")
    kind = column.get("kind")
    if kind not in CODECS.entries or not issubclass(CODECS.entry(kind).factory, Numeric):
        raise ConfigError(f"column {name!r}: private bounds are for integer, float or datetime columns")
    if isinstance(column.get("bins"), list):
        raise ConfigError(f"column {name!r}: cut points need declared bounds; give bins as a number")
    span = Column(name, kind, lower=given[0], upper=given[-1])
    codec = CODECS.entry(kind).factory(span)
    points = np.array([codec.bound("candidates", v) for v in given])
    if "candidates" not in column:
        count = GRID_POINTS if not codec.integral else int(min(GRID_POINTS, codec.span()))
        points = np.linspace(codec.lower, codec.upper, count)
    points = np.unique(np.rint(points) if codec.integral else points)
    if len(points) < 2:
        raise ConfigError(f"column {name!r}: the candidates must hold at least two different bounds")
    return codec, points


def unknowns(spec: Any) -> list[Unknown]:
    """The columns of a declaration (a dict with ``columns``, or the list) that leave parts to the data."""
    out = []
    for j, column in enumerate(_columns(spec)):
        if not isinstance(column, dict) or not isinstance(column.get("name"), str):
            raise ConfigError(f"column {j + 1}: expected a mapping with name and kind")
        name, marks = column["name"], {k for k in ("lower", "upper", "categories", "missing")
                                       if column.get(k) == PRIVATE}
        if not marks:
            continue
        if len(marks & {"lower", "upper"}) == 1:
            raise ConfigError(f"column {name!r}: lower and upper are private together, or both declared")
        if "categories" in marks and column.get("kind") != "categorical":
            raise ConfigError(f"column {name!r}: private categories are for categorical columns (declare a "
                              "binary column's two values)")
        codec, grid = _grid(column, name) if "lower" in marks else (None, None)
        out.append(Unknown(name, j, codec, grid, "categories" in marks, "missing" in marks))
    return out


def ordered_bounds(unknown: Unknown, released: list[float]) -> tuple[Any, Any]:
    """The released lower and upper bounds in order, apart by at least one candidate step where the column's
    values are real (post-processing of the release, on the public grid), as the schema writes them."""
    assert unknown.codec is not None and unknown.grid is not None
    grid = unknown.grid
    lo, hi = sorted(int(np.searchsorted(grid, v)) for v in released)
    if lo == hi and not unknown.codec.integral:
        lo, hi = (lo, lo + 1) if lo + 1 < len(grid) else (lo - 1, lo)
    return unknown.codec.out(float(grid[lo])), unknown.codec.out(float(grid[hi]))


def other_value(column: dict[str, Any], categories: list[Any]) -> dict[str, Any]:
    """``other: true`` for a column whose categories were measured, so that a value under the threshold trains
    as the other value, whether or not one exists (unless the owner declares ``other: false``); its label is the
    declared ``other_label``, else OTHER, bracketed until it differs from every category (post-processing)."""
    if column.get("other") is False:
        return {}
    label, keys = column.get("other_label"), {category_key(c) for c in categories}
    if label is None:
        label = OTHER
        while category_key(label) in keys:
            label = f"<{label}>"
    return {"other": True, "other_label": label}


def resolved(spec: Any, measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The declaration with each column's private parts replaced by ``measured[name]`` (bounds, categories in
    sorted order and an other value, missing), and its public ``target`` where it declares one: a schema as
    ``table_schema`` reads it."""
    columns = []
    for column in _columns(spec):
        found = measured.get(column.get("name"), {})
        if "categories" in found:
            categories = [plain(key) for key in sorted(found["categories"])]
            found = {**found, "categories": categories, **other_value(column, categories)}
        columns.append({**column, **found})
    target = spec.get("target") if isinstance(spec, dict) else None
    return {"columns": columns, **({} if target is None else {"target": target})}
