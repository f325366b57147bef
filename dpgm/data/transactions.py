"""Transaction files: one record per line, whitespace-separated item ids, read into scipy CSR.

Format (../shared/data/*/README.md): ``NAME.txt[.gz]``, line i = record i, non-negative
integer item ids. Every line is a record: a blank line is an empty basket, and records
that lose all their items to ``top_items`` are kept (an empty basket is a valid record),
unless the user declares ``data.min_items`` (``dataset.drop_short_records``). An id repeated within a line counts once.
Item names come from ``NAME.items.tsv[.gz]`` beside the file when present (column ``name``,
else ``original_id``; that file also fixes the item universe). The universe is public
information the user declares: an items file or ``n_items`` (ids 0..n_items-1). Only where
``require_universe`` is off (evaluation, a non-private act of the custodian) may it be read off
the data as 0..max id: one record with a rare large id would change the release's columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, file_stem, read_bytes, record_error
from dpgm.data.shards import read_shard
from dpgm.errors import ConfigError, DataError

MAX_DIGITS = 9  # ids below 10**9; a larger id is a malformed file, not a real item universe
MAX_ITEMS = 10_000_000  # without an items file, 0..max id must stay a sane universe
_OTHER, _SPACE, _DIGIT = 0, 1, 2
_CLASS = np.zeros(256, dtype=np.int8)
_CLASS[list(b" \t\r\n")] = _SPACE
_CLASS[ord("0") : ord("9") + 1] = _DIGIT
_POW10 = 10 ** np.arange(MAX_DIGITS, dtype=np.int64)


def parse_transactions(
    raw: bytes, path: Path, limit: int | None = None, part: bool = False
) -> tuple[np.ndarray, np.ndarray, int]:
    """Vectorised parse: (record index of each id, item ids, number of records). ``part``: the bytes
    are one rank's shard, which may hold no record or no item without being an error."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    empty = np.zeros(0, dtype=np.int64)
    if buf.size == 0:
        if part:
            return empty, empty, 0
        raise DataError(f"{path}: empty file")
    newlines = np.flatnonzero(buf == ord("\n"))
    if limit is not None and newlines.size >= limit:
        buf, newlines = buf[: newlines[limit - 1] + 1], newlines[:limit]
    cls = _CLASS[buf]
    if (cls == _OTHER).any():
        raise record_error(
            path,
            "a record holds a token that is not an item id",
            "item ids are integers >= 0 separated by spaces or tabs",
        )
    n_records = newlines.size + (buf[-1] != ord("\n"))
    is_digit = cls == _DIGIT
    digit_pos = np.flatnonzero(is_digit)
    if digit_pos.size == 0:
        if part:
            return empty, empty, int(n_records)
        raise DataError(f"{path}: no item ids in the file (empty dataset)")
    starts = np.ones(digit_pos.size, dtype=bool)
    starts[1:] = digit_pos[1:] != digit_pos[:-1] + 1
    token = np.cumsum(starts) - 1
    lengths = np.bincount(token)
    first = np.flatnonzero(starts)
    if lengths.max() > MAX_DIGITS:
        raise record_error(
            path,
            f"an item id is too large (more than {MAX_DIGITS} digits)",
            f"item ids are below 10**{MAX_DIGITS}",
        )
    exponent = (first + lengths - 1)[token] - np.arange(digit_pos.size)
    digits = buf[digit_pos].astype(np.int64) - ord("0")
    ids = np.add.reduceat(digits * _POW10[exponent], first)
    rows = np.searchsorted(newlines, digit_pos[first])
    return rows, ids, int(n_records)


def items_file_for(path: Path) -> Path | None:
    """``NAME.items.tsv.gz`` (or ``.tsv``) beside ``NAME.txt[.gz]``, if present."""
    stem = file_stem(path)
    for candidate in (path.parent / f"{stem}.items.tsv.gz", path.parent / f"{stem}.items.tsv"):
        if candidate.is_file():
            return candidate
    return None


def read_item_names(path: Path) -> list[str]:
    """Item names by id from an items TSV (header with ``new_id``; ``name`` or ``original_id``)."""
    try:
        lines = read_bytes(path).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    header = lines[0].split("\t") if lines else []
    if "new_id" not in header:
        raise DataError(f"{path}: header must name a 'new_id' column, got {header}")
    column = next(c for c in ("name", "original_id", "new_id") if c in header)
    id_col, name_col = header.index("new_id"), header.index(column)
    ids, names = [], []
    for line_no, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataError(
                f"{path}: line {line_no} has {len(fields)} fields, header has {len(header)}"
            )
        if not fields[id_col].isdigit():
            raise DataError(
                f"{path}: new_id {fields[id_col]!r} on line {line_no} is not an integer >= 0"
            )
        ids.append(int(fields[id_col]))
        names.append(fields[name_col])
    order = np.argsort(ids)
    if not np.array_equal(np.asarray(ids, dtype=np.int64)[order], np.arange(len(ids))):
        raise DataError(f"{path}: new_id values must be 0..{len(ids) - 1}, each once")
    return [names[i] for i in order]


def item_counts(dataset: BinaryDataset) -> np.ndarray:
    """Exact number of records containing each item (NOT private: never release it as is)."""
    return np.asarray(dataset.records.sum(axis=0)).ravel().astype(np.int64)


def top_item_ids(counts: np.ndarray, m: int) -> np.ndarray:
    """Ids of the ``m`` largest counts (ties: lower id first), in ascending id order."""
    if m < 1:
        raise ConfigError(f"data.top_items: must be >= 1, got {m}")
    return np.sort(np.argsort(-np.asarray(counts), kind="stable")[:m])


def restrict_items(dataset: BinaryDataset, item_ids: np.ndarray) -> BinaryDataset:
    """Keep only the columns ``item_ids`` (records left empty stay); meta['item_ids'] maps back."""
    item_ids = np.asarray(item_ids, dtype=np.int64)
    previous = np.asarray(dataset.meta.get("item_ids", np.arange(dataset.n_items)))
    meta = dict(dataset.meta, item_ids=previous[item_ids].tolist())
    return BinaryDataset(
        records=dataset.records[:, item_ids],
        item_names=[dataset.item_names[j] for j in item_ids],
        labels=dataset.labels,
        name=dataset.name,
        image_shape=None,
        source=dataset.source,
        meta=meta,
    )


def _universe(
    path: Path, items_path: Path | None, n_items: int | None, required: bool, ids: np.ndarray
) -> tuple[list[str], str]:
    """Item names and where the universe came from: items file, declared n_items, or the data."""
    if items_path is not None:
        names = read_item_names(items_path)
        if n_items is not None and n_items != len(names):
            raise ConfigError(f"data.n_items = {n_items} but {items_path.name} lists {len(names)} items")
        return names, f"the items file {items_path.name}"
    if n_items is not None:
        if n_items < 1:
            raise ConfigError(f"data.n_items: must be >= 1, got {n_items}")
        return [str(j) for j in range(n_items)], "data.n_items"
    if required:
        raise ConfigError(
            f"{path}: the item universe must be declared, not read off the private data: put "
            f"{file_stem(path)}.items.tsv beside it (columns new_id, name) or set data.n_items"
        )
    if ids.max() >= MAX_ITEMS:
        raise record_error(
            path,
            f"an item id is {MAX_ITEMS:,} or more, too large without an items file",
            "declare the item universe with an items file or data.n_items",
        )
    return [str(j) for j in range(int(ids.max()) + 1)], "the data itself (0..largest id; evaluation only)"


def item_universe(path: Path, n_items: int | None, required: bool, ids: np.ndarray) -> tuple[list[str], dict]:
    """Item names and the dataset's meta (the items file beside ``path`` and where the universe came from)."""
    items_path = items_file_for(path)
    names, universe = _universe(path, items_path, n_items, required, ids)
    return names, {"items_file": None if items_path is None else str(items_path), "universe": universe}


def csr_records(path: Path, rows: np.ndarray, ids: np.ndarray, n_records: int, names: list[str],
                universe: str) -> sp.csr_matrix:
    """The parsed (record, id) pairs as binary CSR over the universe ``names`` (an id repeated in a
    record counts once); a one-line error for an id outside it."""
    if ids.size and ids.max() >= len(names):
        raise record_error(
            path,
            f"an item id is outside the {len(names)} items of {universe}",
            f"item ids run from 0 to {len(names) - 1}",
        )
    indptr = np.zeros(n_records + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_records), out=indptr[1:])
    records = sp.csr_matrix(
        (np.ones(ids.size, dtype=np.int32), ids, indptr), shape=(n_records, len(names))
    )
    records.sum_duplicates()
    records.data[:] = 1
    return records


def load_transactions(
    path: str | Path,
    *,
    top_items: int | None = None,
    limit: int | None = None,
    name: str | None = None,
    n_items: int | None = None,
    require_universe: bool = False,
    shard: tuple[int, int] | None = None,
) -> BinaryDataset:
    """Records of a transaction file as CSR (see the module docstring for the format).

    ``top_items`` keeps the m items in most records, counted WITHOUT noise: fine for
    benchmark set-up or a public item ranking, not inside a private release (use
    ``dpgm.stages.items`` + ``restrict_items`` there). ``limit`` reads the first N lines.
    ``n_items`` declares the universe 0..n_items-1 when there is no items file;
    ``require_universe`` refuses a file whose universe is declared by neither. ``shard`` = (rank,
    world size) reads only the lines starting in that rank's byte range (``dpgm.data.shards``).
    """
    check_limit(limit)
    if top_items is not None and top_items < 1:
        raise ConfigError(f"data.top_items: must be >= 1, got {top_items}")
    path = Path(path)
    raw = read_bytes(path) if shard is None else read_shard(path, *shard)
    rows, ids, n_records = parse_transactions(raw, path, limit, part=shard is not None)
    names, meta = item_universe(path, n_items, require_universe, ids)
    dataset = BinaryDataset(records=csr_records(path, rows, ids, n_records, names, meta["universe"]),
                            item_names=names, name=name or file_stem(path), source=str(path), meta=meta)
    if top_items is None or top_items >= dataset.n_items:
        return dataset
    restricted = restrict_items(dataset, top_item_ids(item_counts(dataset), top_items))
    restricted.meta["top_items"] = {"m": int(top_items), "counts": "exact (not private)"}
    return restricted
