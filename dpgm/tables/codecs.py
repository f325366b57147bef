"""Codecs by column kind: how one column's values become one attribute's values (items) and back.

A categorical column's attribute has one value per declared category, a number's one value per bin of
its public binning rule (``default_bins``), a datetime's the bins of its seconds; a column that may hold
missing values has one more value, ``MISSING``, its last; a categorical column declared ``other: true`` has
one more before it, which every value outside its categories encodes to. Encoding maps each non-missing value to the
index of its attribute value; decoding (post-processing of the release) maps an index back: a category
to its declared label (the other value to ``other_label``), a bin to a number drawn uniformly inside it. No
message ever shows a value.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np

from dpgm.errors import DataError
from dpgm.registry import Registry
from dpgm.tables.column import Column

#: The label of the attribute value that stands for a missing value (item ``name=<missing>``).
MISSING = "<missing>"
#: The label of a categorical column's other value where its declaration gives no ``other_label``.
OTHER = "other"
#: Bins of a numeric column whose declaration gives none: one per integer when an integer column spans
#: at most this many, else this many of equal width between its bounds (public: the bounds and this rule).
DEFAULT_BINS = 32


class Codec:
    """One column's attribute: its value labels, encoding of the column's values, decoding of indices."""

    def __init__(self, column: Column) -> None:
        self.column = column

    def labels(self) -> list[str]:
        """The attribute's values, in index order (without the missing value)."""
        raise NotImplementedError

    def encode(self, values: np.ndarray) -> np.ndarray:
        """The value index (int64) of each non-missing value; one outside the domain as documented."""
        raise NotImplementedError

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The column values of value indices ``codes`` (post-processing: ``rng`` draws inside a bin)."""
        raise NotImplementedError

    def declaration(self) -> dict[str, Any]:
        """The column as a schema declares it (JSON), with its defaults spelled out."""
        raise NotImplementedError

    def refuse(self, problem: str) -> DataError:
        """A one-line error about the column's private values: what is wrong, never the value."""
        return DataError(f"column {self.column.name!r}: {problem} (values of private records are not shown)")


CODECS: Registry[Codec] = Registry("kind")


def category_key(value: Any) -> str:
    """The text a value is matched by: ``1``, ``1.0`` and ``"1"`` are the same; ``True`` and ``"TRUE"`` too."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    text = str(value)
    return text.lower() if text.lower() in ("true", "false") else text


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float)) and not (isinstance(value, float) and not math.isfinite(value))


@CODECS.register("categorical", doc="one value per declared category (categories: [...])")
class Categorical(Codec):
    """Categories as declared; a value outside them is refused with a one-line error that does not show it, or,
    with ``other: true``, encoded as the other value (the last before ``MISSING``), decoded as its label."""

    def __init__(self, column: Column) -> None:
        super().__init__(column)
        self.categories = self.declared_categories()
        if (not self.categories and not column.other) or not all(_scalar(c) for c in self.categories):
            raise column.problem("categories must be a non-empty list of strings or numbers")
        keys = [category_key(c) for c in self.categories]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise column.problem(f"category {twice!r} is listed twice")
        self.index = {key: j for j, key in enumerate(keys)}
        self.other = self.other_value()
        _no_bounds(column)

    def other_value(self) -> str | None:
        """The other value's label (None: no other value); it must differ from every category."""
        column = self.column
        if not column.other:
            if column.other_label is not None:
                raise column.problem("other_label needs other: true")
            return None
        label = OTHER if column.other_label is None else column.other_label
        if category_key(label) in self.index:
            raise column.problem(f"other_label {label!r} is also a category; declare another other_label")
        return label

    def declared_categories(self) -> tuple[Any, ...]:
        return self.column.categories or ()

    def labels(self) -> list[str]:
        return [str(c) for c in self.categories] + ([] if self.other is None else [self.other])

    def encode(self, values: np.ndarray) -> np.ndarray:
        outside = len(self.categories) if self.other is not None else -1
        found = {value: self.index.get(category_key(value), outside) for value in dict.fromkeys(values.tolist())}
        if -1 in found.values():
            raise self.refuse("a value outside its declared categories; add it to the schema's categories, or "
                              "declare other: true")
        return np.fromiter((found[v] for v in values.tolist()), dtype=np.int64, count=len(values))

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.asarray([*self.categories, *([] if self.other is None else [self.other])], dtype=object)[codes]

    def declaration(self) -> dict[str, Any]:
        other = {} if self.other is None else {"other": True, "other_label": self.other}
        return {"name": self.column.name, "kind": self.column.kind, "categories": list(self.categories),
                "missing": self.column.missing, **other}


@CODECS.register("binary", doc="categorical of two values (categories: [no, yes]; default [0, 1])")
class Binary(Categorical):
    """A categorical column of exactly two categories."""

    def declared_categories(self) -> tuple[Any, ...]:
        categories = (0, 1) if self.column.categories is None else self.column.categories
        if self.column.other or self.column.other_label is not None:
            raise self.column.problem("a binary column has no other value; declare it categorical for one")
        if len(categories) != 2:
            raise self.column.problem(f"a binary column has exactly two categories, got {len(categories)}")
        return categories


def _no_bounds(column: Column) -> None:
    if column.lower is not None or column.upper is not None or column.bins is not None:
        raise column.problem(f"a {column.kind} column takes categories, not lower, upper or bins")


def _number(column: Column, key: str, value: Any, integral: bool) -> float:
    """A declared bound or cut: a finite number (a whole one for an integer column)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (integral and not float(value).is_integer()):
        raise column.problem(f"{key} must be a {'whole ' if integral else ''}number, got {value!r}")
    return float(value)


class Numeric(Codec):
    """Numbers between inclusive bounds, in bins: equal width (``bins: N``) or cut at declared points
    (``bins: [c1, c2, ...]``, a bin from each cut to the next). A value outside the bounds is clipped to them."""

    integral = False  # integer values (and bins of whole integers)

    def __init__(self, column: Column) -> None:
        super().__init__(column)
        if column.categories is not None:
            raise column.problem(f"a {column.kind} column takes lower and upper, not categories")
        if column.other or column.other_label is not None:
            raise column.problem(f"other is for categorical columns (a {column.kind} outside the bounds is clipped)")
        if column.lower is None or column.upper is None:
            raise column.problem(f"a {column.kind} column needs lower and upper (inclusive bounds)")
        self.lower, self.upper = self.bound("lower", column.lower), self.bound("upper", column.upper)
        if not self.lower < self.upper and not (self.integral and self.lower == self.upper):
            raise column.problem(f"lower {column.lower!r} must be below upper {column.upper!r}")
        self.edges = self.bin_edges()

    def bound(self, key: str, value: Any) -> float:
        return _number(self.column, key, value, self.integral)

    def span(self) -> float:
        """How far the values reach: upper - lower, plus one for whole numbers (each integer is a unit)."""
        return self.upper - self.lower + (1 if self.integral else 0)

    def bin_edges(self) -> np.ndarray:
        """Edges e_0 = lower < e_1 < ... < e_B = upper (upper + 1 for integers): bin j holds [e_j, e_j+1)."""
        bins, top = self.column.bins, self.lower + self.span()
        if isinstance(bins, tuple):
            cuts = [self.bound("bins", c) for c in bins]
            if not cuts or any(b <= a for a, b in zip([self.lower, *cuts], [*cuts, top])):
                raise self.column.problem("bins: the cuts must increase strictly inside (lower, upper]")
            return np.array([self.lower, *cuts, top])
        count = default_bins(self.span(), self.integral) if bins is None else bins
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise self.column.problem(f"bins must be a whole number >= 1 or a list of cuts, got {bins!r}")
        if self.integral and count > self.span():
            raise self.column.problem(f"bins {count} is more than the {int(self.span())} integers from lower to upper")
        edges = np.linspace(self.lower, top, count + 1)
        return np.floor(edges) if self.integral else edges

    def labels(self) -> list[str]:
        lo, hi = self.edges[:-1], self.edges[1:]
        if self.integral:
            return [self.text(a) if b - a == 1 else f"{self.text(a)}..{self.text(b - 1)}" for a, b in zip(lo, hi)]
        return [f"[{self.text(a)}, {self.text(b)}{']' if j == len(lo) - 1 else ')'}"
                for j, (a, b) in enumerate(zip(lo, hi))]

    def text(self, value: float) -> str:
        return str(int(value)) if self.integral else f"{value:.6g}"

    def numbers(self, values: np.ndarray) -> np.ndarray:
        """The values as float64 (a value that is not a number is refused)."""
        try:
            numbers = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise self.refuse(f"a value that is not a number in a {self.column.kind} column") from None
        if np.isnan(numbers).any():
            raise self.refuse("a value that is not a number (NaN); declare missing: true and leave such cells empty")
        return numbers

    def encode(self, values: np.ndarray) -> np.ndarray:
        numbers = np.clip(self.numbers(values), self.lower, self.upper)
        if self.integral:
            numbers = np.clip(np.rint(numbers), self.lower, self.upper)
        return np.clip(np.searchsorted(self.edges, numbers, side="right") - 1, 0, len(self.edges) - 2)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lo, hi = self.edges[codes], self.edges[codes + 1]
        if self.integral:
            return rng.integers(lo.astype(np.int64), hi.astype(np.int64))
        return np.minimum(lo + rng.random(len(codes)) * (hi - lo), self.upper)

    def declaration(self) -> dict[str, Any]:
        bins = self.column.bins
        cuts = list(self.edges[1:-1]) if isinstance(bins, tuple) else len(self.edges) - 1
        return {"name": self.column.name, "kind": self.column.kind, "lower": self.out(self.lower),
                "upper": self.out(self.upper), "bins": [self.out(c) for c in cuts] if isinstance(cuts, list) else cuts,
                "missing": self.column.missing}

    def out(self, value: float) -> Any:
        return int(value) if self.integral else float(value)


def default_bins(span: float, integral: bool) -> int:
    """The public binning rule: one bin per integer where an integer column spans at most DEFAULT_BINS of
    them, else DEFAULT_BINS bins of equal width between the bounds."""
    return int(span) if integral and span <= DEFAULT_BINS else DEFAULT_BINS


@CODECS.register("integer", doc="whole numbers in [lower, upper], in bins (bins: N or a list of cuts)")
class Integer(Numeric):
    """Whole numbers: a value is rounded to the nearest integer and clipped; decoded as an integer of its bin."""

    integral = True


@CODECS.register("float", doc="numbers in [lower, upper], in bins (bins: N or a list of cuts)")
class Float(Numeric):
    """Real numbers: decoded uniformly inside their bin."""


@CODECS.register("datetime", doc="dates and times in [lower, upper] (ISO text), as whole seconds in bins")
class Datetime(Integer):
    """Datetimes as whole seconds since 1970 (a numeric column of them); bounds written as ISO text."""

    def bound(self, key: str, value: Any) -> float:
        if key == "bins":
            raise self.column.problem("a datetime column takes bins as a whole number, not a list of cuts")
        try:
            return float(_seconds(np.array([value], dtype=object))[0])
        except (TypeError, ValueError):
            raise self.column.problem(f"{key} must be a date or time (ISO text such as 2024-01-31), "
                                      f"got {value!r}") from None

    def text(self, value: float) -> str:
        return str(np.datetime64(int(value), "s"))

    def numbers(self, values: np.ndarray) -> np.ndarray:
        try:
            return _seconds(values).astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            raise self.refuse("a value that is not a date or time") from None

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return super().decode(codes, rng).astype("datetime64[s]")

    def out(self, value: float) -> Any:
        return self.text(value)


def _seconds(values: np.ndarray) -> np.ndarray:
    """Whole seconds since 1970 of dates and times (ISO text, datetime, numpy or pandas datetimes)."""
    stamps = [v if isinstance(v, (str, np.datetime64)) else _as_datetime(v) for v in values.tolist()]
    return np.array(stamps, dtype="datetime64[s]").astype(np.int64)


def _as_datetime(value: Any) -> Any:
    """A datetime (pandas Timestamps are ones) or date as numpy takes it; anything else is refused."""
    if isinstance(value, _dt.datetime):
        return np.datetime64(value.replace(tzinfo=None), "s")
    if isinstance(value, _dt.date):
        return np.datetime64(value, "s")
    raise TypeError("not a date")
