"""A declared table read for evaluation: each column's cells and its value indices under the schema.

The value index of a cell is the codec's (a category, a bin of a number; a missing value the column's last),
so every table metric sees the domain the synthesizer models. Reading refuses bad values in one line, as
training does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpgm.data.paths import resolve_data_path
from dpgm.data.table import read_cells
from dpgm.errors import DataError
from dpgm.tables import TableSchema
from dpgm.tables.records import Cells, encode


@dataclass(frozen=True)
class Table:
    """A table read against its schema: each column's cells and value indices (missing: the last value)."""

    schema: TableSchema
    cells: list[Cells]
    codes: np.ndarray  # (n, k) int64, column j's value index among schema.attribute_sizes[j]
    name: str = "table"

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    def rows(self, index: np.ndarray) -> Table:
        """The table of the records at ``index``."""
        return Table(self.schema, [(v[index], m[index]) for v, m in self.cells], self.codes[index], self.name)

    def numbers(self, j: int) -> np.ndarray:
        """Column ``j``'s present values as numbers clipped to its bounds (a numeric column)."""
        codec = self.schema.codecs[j]
        values, missing = self.cells[j]
        return np.clip(codec.numbers(values[~missing]), codec.lower, codec.upper)


def table_of(schema: TableSchema, cells: list[Cells], name: str = "table") -> Table:
    """The table of the schema's columns' cells (its order); encoding refuses bad values in one line."""
    if not cells or len(cells[0][0]) == 0:
        raise DataError(f"{name}: no records (empty table)")
    records = encode(schema, cells)
    records.sort_indices()
    offsets = np.cumsum([0, *schema.attribute_sizes[:-1]])
    codes = records.indices.reshape(records.shape[0], len(cells)).astype(np.int64) - offsets
    return Table(schema, cells, codes, name)


def read_table(path: str | Path, schema: TableSchema, *, limit: int | None = None) -> Table:
    """A CSV table (plain or .gz; as given, else under $DPGM_DATA_DIR) whose header lists the schema's columns
    in its order."""
    header, cells = read_cells(resolve_data_path(path), limit=limit)
    if header != schema.names:
        raise DataError(f"{path}: the header does not list the schema's columns in its order "
                        f"(schema: {', '.join(schema.names)})")
    return table_of(schema, [(cells[:, j], cells[:, j] == "") for j in range(len(header))], str(path))
