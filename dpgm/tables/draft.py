"""A draft schema read off a table's cells, for its owner to review: NOT public until the owner declares it.

Every bound and category of the draft comes from the private data (the observed minimum and maximum, the
values that occur); the owner replaces them with what they know in advance (documented ranges and codes)
before declaring it, or the release reveals them (docs/guide/tables.md, "Drafting a schema").
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

#: The draft's first line and its top-level key ``read_off_the_data``: what the draft is and is not.
WARNING = ("DRAFT READ OFF THE DATA: its bounds and categories are private values of the records; the schema "
           "becomes public only when the owner reviews it, replaces them with what is known in advance, and "
           "declares it (data.schema)")
#: At most this many distinct values make a categorical column of text; more are flagged for the owner.
MAX_CATEGORIES = 1000


def _numbers(values: list[str]) -> np.ndarray | None:
    try:
        return np.array(values, dtype=np.float64)
    except ValueError:
        return None


def _datetimes(values: list[str]) -> np.ndarray | None:
    try:
        for value in values[:100]:
            _dt.datetime.fromisoformat(value)
        return np.array(values, dtype="datetime64[s]")
    except ValueError:
        return None


def draft_column(name: str, cells: list[str]) -> dict[str, Any]:
    """A column's draft declaration from its text cells (an empty cell: missing)."""
    present = [c for c in cells if c != ""]
    column: dict[str, Any] = {"name": name, "missing": len(present) < len(cells)}
    distinct = sorted(set(present))
    numbers = _numbers(present) if present else None
    if len(distinct) == 2:
        ordered = sorted(distinct, key=float) if numbers is not None else distinct
        return {**column, "kind": "binary", "categories": [plain(v) for v in ordered]}
    if numbers is not None and present:
        integral = bool(np.all(numbers == np.rint(numbers)))
        lower, upper = numbers.min(), numbers.max()
        return {**column, "kind": "integer" if integral else "float",
                "lower": int(lower) if integral else float(lower), "upper": int(upper) if integral else float(upper)}
    stamps = _datetimes(present) if present else None
    if stamps is not None:
        return {**column, "kind": "datetime", "lower": str(stamps.min()), "upper": str(stamps.max())}
    out = {**column, "kind": "categorical", "categories": distinct}
    if len(distinct) > MAX_CATEGORIES:
        out["note"] = f"{len(distinct)} distinct values: an identifier or free text? drop it or group its values"
    return out


def plain(text: str) -> Any:
    """A category as JSON keeps it: a whole number as a number, else the text."""
    try:
        return int(text)
    except ValueError:
        return text


def draft_schema(names: list[str], cells: np.ndarray) -> dict[str, Any]:
    """The draft schema (JSON) of a table's text cells [rows, columns] under the header ``names``."""
    return {"read_off_the_data": WARNING,
            "columns": [draft_column(name, cells[:, j].tolist()) for j, name in enumerate(names)]}
