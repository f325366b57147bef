"""A declared table as attribute=value items and back: the encoded records, one item per column per record.

``encode`` turns the columns' values into 0/1 records (CSR) whose items run column by column in the schema's
order (``TableSchema.item_names``), so that ``data.attribute_sizes`` and the attribute trees apply unchanged.
``decode`` is post-processing of synthetic records: each column's value is the item its record holds; a record
holding several of one column's items takes one of them at random, and one holding none takes the value of
another synthetic record of the same draw (uniformly, where no record holds any).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpgm.errors import DataError
from dpgm.tables.schema import TableSchema

#: One column's cells: its values, and where a value is missing (True: missing).
Cells = tuple[np.ndarray, np.ndarray]


def encode(schema: TableSchema, columns: list[Cells]) -> sp.csr_matrix:
    """The 0/1 records of the columns' cells (in the schema's order): one item per column per record."""
    rows = len(columns[0][0]) if columns else 0
    codes = np.empty((rows, len(columns)), dtype=np.int64)
    offset = 0
    for j, (codec, size, (values, missing)) in enumerate(zip(schema.codecs, schema.attribute_sizes, columns)):
        if missing.any() and not codec.column.missing:
            raise codec.refuse("a missing value, but the schema declares missing: false")
        codes[~missing, j] = codec.encode(values[~missing])
        codes[missing, j] = size - 1  # the MISSING value, the attribute's last
        codes[:, j] += offset
        offset += size
    indptr = np.arange(0, codes.size + 1, max(len(columns), 1))
    data = np.ones(codes.size, dtype=np.uint8)
    return sp.csr_matrix((data, codes.ravel(), indptr[: rows + 1]), shape=(rows, offset))


def value_codes(records: np.ndarray | sp.spmatrix, size: int, offset: int, rng: np.random.Generator) -> np.ndarray:
    """Each record's value index among the ``size`` items from ``offset`` (see the module's docstring)."""
    block = records[:, offset: offset + size]
    block = block.toarray() if sp.issparse(block) else np.asarray(block)
    held = block.astype(np.float64) * rng.random(block.shape)  # a random one of the values held
    codes = held.argmax(axis=1)
    none = block.sum(axis=1) == 0
    if none.any():
        pool = codes[~none]
        codes[none] = rng.choice(pool, none.sum()) if pool.size else rng.integers(0, size, none.sum())
    return codes


def decode(schema: TableSchema, records: np.ndarray | sp.spmatrix, rng: np.random.Generator) -> list[np.ndarray]:
    """Each column's values for synthetic records (object arrays, None where missing). Post-processing."""
    if records.shape[1] != sum(schema.attribute_sizes):
        raise DataError(f"records of {records.shape[1]} items, but the schema declares "
                        f"{sum(schema.attribute_sizes)} values")
    out, offset = [], 0
    for codec, size in zip(schema.codecs, schema.attribute_sizes):
        codes = value_codes(records, size, offset, rng)
        offset += size
        missing = codes == size - 1 if codec.column.missing else np.zeros(len(codes), dtype=bool)
        values = np.full(len(codes), None, dtype=object)
        values[~missing] = codec.decode(codes[~missing], rng)
        out.append(values)
    return out
