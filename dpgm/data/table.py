"""A declared table's records (``data.schema``): read from a CSV or Parquet file or a DataFrame, and made a table
again.

The table becomes a BinaryDataset of attribute=value items (``dpgm.tables.records``), its item universe the
schema's values (public); the release's records are decoded back to the table's columns (post-processing).
A CSV table has a header of the schema's column names, in its order; missing values are empty fields (a Parquet
file: its columns in that order, missing values null).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpgm.data.chunks import open_parquet
from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, file_stem, read_bytes, record_error
from dpgm.errors import DataError
from dpgm.tables import TableSchema, table_schema
from dpgm.tables.frame import as_frame, frame_cells
from dpgm.tables.records import Cells, decode, encode

#: Where the item universe of a declared table comes from (the privacy report's public inputs).
UNIVERSE = "the declared schema (data.schema): one item per value of each column"


def table_dataset(schema: TableSchema, cells: list[Cells], name: str, source: str = "") -> BinaryDataset:
    """The records of a table's cells (the schema's columns, in its order) as attribute=value items."""
    if not cells or len(cells[0][0]) == 0:
        raise DataError(f"{name}: no records (empty table)")
    return BinaryDataset(records=encode(schema, cells), item_names=schema.item_names, name=name, source=source,
                         meta={"universe": UNIVERSE})


def load_table(path: Path, schema: TableSchema, *, limit: int | None = None) -> BinaryDataset:
    """A CSV table (plain or .gz) or a Parquet file whose header lists the schema's columns in its order."""
    header, cells = (read_parquet_cells if path.suffix == ".parquet" else read_cells)(path, limit=limit)
    if header != schema.names:
        raise DataError(f"{path}: the header does not list the schema's columns in its order "
                        f"(schema: {', '.join(schema.names)})")
    columns = [(cells[:, j], cells[:, j] == "") for j in range(len(header))]
    return table_dataset(schema, columns, file_stem(path), str(path))


def read_cells(path: Path, *, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """A CSV file's header and its cells as text [rows, columns] (an empty field: a missing value)."""
    check_limit(limit)
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    rows = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(rows, [])]
    if not header or any(not name for name in header):
        raise DataError(f"{path}: no header, or an empty column name in it")
    lines = list(rows)
    while lines and not lines[-1]:
        lines.pop()
    lines = lines if limit is None else lines[:limit]
    if any(len(row) != len(header) for row in lines):
        raise record_error(path, f"a data line does not have the header's {len(header)} fields",
                           "every line needs one value per column, an empty field where a value is missing")
    return header, np.array(lines, dtype=object).reshape(len(lines), len(header))


def read_parquet_cells(path: Path, *, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """A Parquet file's column names and its cells as the text a CSV would hold (a null: a missing value; a date
    or time in ISO form), so that one reader of cells serves both."""
    check_limit(limit)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    table = open_parquet(path).read()
    rows = table.num_rows if limit is None else min(limit, table.num_rows)
    header = [str(name) for name in table.schema.names]
    cells = np.empty((rows, len(header)), dtype=object)
    for j in range(len(header)):
        cells[:, j] = [_text(value) for value in table.column(j).slice(0, rows).to_pylist()]
    return header, cells


def _text(value: Any) -> str:
    """One Parquet value as CSV text: null (or NaN) empty, dates and times in ISO form, the rest as str."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


@dataclass(frozen=True)
class TableInput:
    """A DataFrame given with a schema: its column labels and dtypes, so that samples come back alike."""

    schema: TableSchema
    columns: list[Any]
    dtypes: list[str]

    @classmethod
    def of(cls, spec: Any, frame: Any) -> TableInput:
        """The table ``frame`` (a pandas DataFrame) declared by ``spec`` (see ``table_schema``)."""
        schema = table_schema(spec)
        if not (hasattr(frame, "columns") and hasattr(frame, "dtypes")):
            raise DataError(f"fit: a schema declares the columns of a pandas DataFrame, got {type(frame).__name__}")
        return cls(schema, list(frame.columns), [str(d) for d in frame.dtypes])

    def dataset(self, frame: Any, name: str = "data") -> BinaryDataset:
        return table_dataset(self.schema, frame_cells(self.schema, frame), name)

    def restore(self, records: Any, seed: int | None = None) -> Any:
        """Synthetic records as a DataFrame of the input's columns and dtypes (post-processing)."""
        values = decode(self.schema, records, np.random.default_rng(seed))
        return as_frame(self.schema, values, self.columns, self.dtypes)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema.to_dict(), "columns": self.columns, "dtypes": self.dtypes}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> TableInput:
        return cls(table_schema(saved["schema"]), list(saved["columns"]), list(saved["dtypes"]))
