"""Binary CSV: a header row of item names, then one record per row of 0/1 values.

Plain or gzipped (``.gz``). Values may be written ``0``/``1`` (or any number equal to
0 or 1, e.g. ``1.0``). An optional label column (by name) holds integer labels. Trailing
blank lines are ignored; a blank line inside the data is a ragged row.
"""

from __future__ import annotations

import csv as _csv
import gzip
from pathlib import Path

import numpy as np

from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, file_stem, read_bytes, record_error
from dpgm.errors import DataError


def header_names(path: Path, line: str) -> list[str]:
    names = [name.strip() for name in next(_csv.reader([line]))]
    if any(not name for name in names):
        raise DataError(f"{path}: empty column name in the header")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError(f"{path}: duplicate column name {name!r} in the header")
        seen.add(name)
    return names


def _binary_value(token: str) -> int | None:
    """0 or 1 for a token naming a number equal to 0 or 1 (``1``, ``1.0``), else None."""
    try:
        value = float(token)
    except ValueError:
        return None
    return int(value) if value in (0.0, 1.0) else None  # NaN and blanks are neither


def _parse_binary(path: Path, cells: np.ndarray, names: list[str]) -> np.ndarray:
    """The 0/1 matrix of string ``cells``; a bad cell is reported by its column alone.

    The column is the first one (in header order) holding a bad cell, whatever the row order.
    """
    ones = cells == "1"
    odd = ~(ones | (cells == "0"))
    if odd.any():
        tokens, inverse = np.unique(cells[odd], return_inverse=True)
        parsed = [_binary_value(str(t)) for t in tokens]
        invalid = np.array([value is None for value in parsed])[inverse]
        if invalid.any():
            bad = np.zeros(odd.shape, dtype=bool)
            bad[odd] = invalid
            column = names[int(np.flatnonzero(bad.any(axis=0))[0])]
            raise record_error(
                path,
                f"a value in column {column!r} is not 0 or 1",
                "every cell must be a number equal to 0 or 1, such as 1 or 0.0",
            )
        ones[odd] = np.array([value == 1 for value in parsed])[inverse]
    return ones.astype(np.uint8)


def _parse_labels(path: Path, cells: np.ndarray, column: str) -> np.ndarray:
    """The integer labels of one column; a bad label is reported without its value or line."""
    try:
        return np.array([int(token) for token in cells.tolist()], dtype=np.int64)
    except (ValueError, OverflowError):
        raise record_error(
            path,
            f"a value in label column {column!r} is not an integer",
            "every label must be a whole number written in digits",
        ) from None


def csv_header(path: str | Path) -> list[str]:
    """The column names of a CSV file's first line, read without loading the rest; [] if unreadable.

    Lets a caller ask whether an optional column (a label column) is present before loading.
    """
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8-sig") as fh:
            line = fh.readline()
    except (OSError, EOFError, UnicodeDecodeError):
        return []  # the loader itself reports the problem, with its usual message
    return [name.strip() for name in next(_csv.reader([line]), [])] if line.strip() else []


def load_csv(
    path: str | Path, *, label_column: str | None = None, limit: int | None = None
) -> BinaryDataset:
    """Records of a binary CSV file; ``label_column`` names the integer label column."""
    check_limit(limit)
    path = Path(path)
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataError(f"{path}: empty file")
    names = header_names(path, lines[0])
    check_header(path, names, label_column)
    rows = lines[1:] if limit is None else lines[1 : limit + 1]
    if not rows:
        raise DataError(f"{path}: no data rows after the header (empty dataset)")
    return csv_records(path, names, rows, label_column)


def check_header(path: Path, names: list[str], label_column: str | None) -> None:
    """The label column is in the header and is not its only column (before any record is read)."""
    if label_column is not None and label_column not in names:
        raise DataError(f"{path}: label column {label_column!r} not in the header")
    if names == [label_column]:  # a header problem: reported before any record is looked at
        raise DataError(f"{path}: no item columns besides the label column (empty dataset)")


def csv_records(path: Path, names: list[str], rows: list[str], label_column: str | None) -> BinaryDataset:
    """The records of data lines ``rows`` under the header ``names`` (every line one record)."""
    if not rows:
        return BinaryDataset(records=np.zeros((0, len(names) - (label_column is not None)), dtype=np.uint8),
                             item_names=[n for n in names if n != label_column], name=file_stem(path),
                             source=str(path), labels=None if label_column is None else np.zeros(0, np.int64))
    widths = np.fromiter((row.count(",") + 1 for row in rows), dtype=np.int64, count=len(rows))
    if (widths != len(names)).any():
        raise record_error(
            path,
            f"a data line does not have the header's {len(names)} fields",
            "every line needs one value per column (a blank line inside the data counts too)",
        )
    cells = np.char.strip(
        np.array(",".join(rows).split(","), dtype=str).reshape(len(rows), len(names))
    )
    labels = None
    if label_column is not None:
        col = names.index(label_column)
        labels = _parse_labels(path, cells[:, col], label_column)
        cells = np.delete(cells, col, axis=1)
        names = names[:col] + names[col + 1 :]
    return BinaryDataset(
        records=_parse_binary(path, cells, names),
        item_names=names,
        labels=labels,
        name=file_stem(path),
        source=str(path),
    )
