"""Records read a chunk at a time: a file larger than memory (``data.chunk_mb``).

``ChunkedRecords`` holds no record. Every pass over it reads the file (or one rank's shard of it:
a byte range of a transaction or CSV file, ``dpgm.data.shards``, or every world-th row group of
a Parquet file) again in pieces of about ``chunk_bytes`` (cut at line breaks), parses each
piece into a ``BinaryDataset`` and applies the per-record rules the earlier stages set
(``narrowed``), so that a pass holds one chunk at a time. A statistic that is a sum over records
is the sum of its chunks' values (``summed``); an in-memory ``BinaryDataset`` is one chunk, so one
piece of code serves both (docs/guide/data.md, "Data larger than memory").
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from dpgm.data.csv import check_header, csv_records, header_names
from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, file_stem, record_error
from dpgm.data.shards import byte_range, line_start
from dpgm.data.transactions import csr_records, item_universe, parse_transactions
from dpgm.errors import ConfigError, DataError

#: A per-record rule: a dataset in, the same records narrowed (items restricted, short ones dropped) out.
Rule = Callable[[BinaryDataset], BinaryDataset]
T = TypeVar("T")


@dataclass(frozen=True)
class ChunkedRecords:
    """A file of ``source`` (transactions, csv, parquet) read ``chunk_bytes`` at a time; ``shard`` = (rank,
    world size) or None."""

    path: Path
    universe: list[str]  # the declared item universe of the file (before any rule)
    chunk_bytes: int
    shard: tuple[int, int] | None = None
    rules: tuple[Rule, ...] = ()
    name: str = "dataset"
    file_meta: dict = field(default_factory=dict)
    source: str = "transactions"
    label_column: str | None = None

    @classmethod
    def open(cls, path: str | Path, *, chunk_bytes: int, source: str = "transactions", n_items: int | None = None,
             shard: tuple[int, int] | None = None, label_column: str | None = None) -> ChunkedRecords:
        """The records of ``path`` in chunks. The item universe is declared: for transactions an items
        file or ``n_items``; for CSV the header, for Parquet the schema (less the label column)."""
        path = Path(path)
        if chunk_bytes < 1:
            raise ConfigError(f"data.chunk_mb: a chunk must hold at least one byte, got {chunk_bytes}")
        if source not in READERS:
            raise ConfigError(f"data.chunk_mb: source {source!r} cannot be read in chunks "
                              f"(readable: {', '.join(sorted(READERS))})")
        if not path.is_file():
            raise DataError(f"{path}: file not found")
        if shard is not None and path.suffix == ".gz":
            raise DataError(f"{path}: a gzip file cannot be read by byte ranges; give each rank its own file "
                            "or an uncompressed one")
        names, meta = READERS[source].universe(path, n_items, label_column)
        return cls(path, names, chunk_bytes, shard, name=file_stem(path), file_meta=meta, source=source,
                   label_column=label_column)

    # -- what a BinaryDataset also answers -------------------------------------------------
    @property
    def where(self) -> str:
        return str(self.path)

    def _template(self) -> BinaryDataset:
        """No record, with the rules applied: the item universe and metadata later stages see."""
        empty = sp.csr_matrix((0, len(self.universe)), dtype=np.uint8)
        return self._narrow(BinaryDataset(records=empty, item_names=list(self.universe), name=self.name,
                                          source=str(self.path), meta=dict(self.file_meta)))

    def _narrow(self, data: BinaryDataset) -> BinaryDataset:
        for rule in self.rules:
            data = rule(data)
        return data

    n_items = property(lambda self: self._template().n_items, doc="Number of items after the rules: public.")
    item_names = property(lambda self: self._template().item_names, doc="The items' names after the rules.")
    meta = property(lambda self: self._template().meta, doc="What the loader and the rules noted (public).")
    n_records = property(lambda self: summed(self, lambda c: c.n_records),
                         doc="Number of records (one pass): private, never released as is.")
    labels = property(lambda self: None, doc="Labels stay in the chunks (no stage that reads chunks uses them).")
    image_shape = property(lambda self: None)
    is_sparse = property(lambda self: True)

    def narrowed(self, rule: Rule) -> ChunkedRecords:
        """The same file with one more per-record rule applied to every chunk."""
        return replace(self, rules=self.rules + (rule,))

    def chunks(self) -> Iterator[BinaryDataset]:
        """One pass: the records in order, a chunk at a time, with the rules applied."""
        try:
            for data in READERS[self.source].chunks(self):
                yield self._narrow(data)
        except (gzip.BadGzipFile, EOFError, zlib.error):  # gzip's messages quote private bytes
            raise DataError(f"{self.path}: not a valid gzip file (corrupt or truncated)") from None
        except UnicodeDecodeError:
            raise DataError(f"{self.path}: not UTF-8 text") from None
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read ({exc.strerror or exc})") from None

    def byte_blocks(self, begin: int = 0) -> Iterator[bytes]:
        """The bytes of this rank's lines from offset ``begin`` on (a gzip file: all of it, decompressed),
        ``chunk_bytes`` at a time."""
        if self.path.suffix == ".gz":
            with gzip.open(self.path, "rb") as f:
                f.seek(begin)
                while block := f.read(self.chunk_bytes):
                    yield block
            return
        with self.path.open("rb") as f:
            size = self.path.stat().st_size
            lo, hi = (0, size - begin) if self.shard is None else byte_range(size - begin, *self.shard)
            start, stop = line_start(f, begin + lo, size), line_start(f, begin + hi, size)
            start = max(start, begin)
            f.seek(start)
            left = stop - start
            while left > 0 and (block := f.read(min(self.chunk_bytes, left))):
                left -= len(block)
                yield block


def _cut_at_lines(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """Re-cut a stream of byte blocks into pieces ending at line breaks (the last one may not)."""
    carry = b""
    for block in blocks:
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield data[:cut]
        carry = data[cut:]
    if carry:
        yield carry


class _Transactions:
    """Transaction lines (``dpgm.data.transactions``): the universe from an items file or ``n_items``."""

    def universe(self, path: Path, n_items: int | None, label_column: str | None) -> tuple[list[str], dict]:
        if label_column is not None:
            raise ConfigError("data.label_column: transaction files carry no labels")
        return item_universe(path, n_items, True, np.zeros(0, dtype=np.int64))

    def chunks(self, data: ChunkedRecords) -> Iterator[BinaryDataset]:
        names, universe = list(data.universe), data.file_meta.get("universe", "")
        for piece in _cut_at_lines(data.byte_blocks()):
            rows, ids, n = parse_transactions(piece, data.path, part=True)
            yield BinaryDataset(records=csr_records(data.path, rows, ids, n, names, universe), item_names=names,
                                name=data.name, source=str(data.path), meta=dict(data.file_meta))


class _Csv:
    """A binary CSV (``dpgm.data.csv``): the header names the items (and the label column)."""

    def _header(self, path: Path) -> tuple[list[str], int]:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            line = f.readline()
        if not line.strip():
            raise DataError(f"{path}: empty file")
        return header_names(path, line.decode("utf-8-sig")), len(line)

    def universe(self, path: Path, n_items: int | None, label_column: str | None) -> tuple[list[str], dict]:
        names = self._header(path)[0]
        check_header(path, names, label_column)
        return [n for n in names if n != label_column], {"universe": "the CSV header"}

    def chunks(self, data: ChunkedRecords) -> Iterator[BinaryDataset]:
        header, begin = self._header(data.path)
        pieces = _cut_at_lines(data.byte_blocks(begin))
        piece = next(pieces, None)
        while piece is not None:
            following = next(pieces, None)
            lines = piece.decode("utf-8").split("\n")
            lines = lines[:-1] if piece.endswith(b"\n") else lines
            if following is None:  # blank lines at the end of the file are not records
                while lines and not lines[-1].strip():
                    lines.pop()
            yield csv_records(data.path, header, [line.rstrip("\r") for line in lines], data.label_column)
            piece = following


class _Parquet:
    """A Parquet file of 0/1 (or boolean) columns, one record per row, read a batch of rows at a time
    (pyarrow); a rank reads every world-th row group."""

    def _file(self, path: Path) -> Any:
        try:
            import pyarrow
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError("Parquet files need pyarrow: pip install 'dpgm[parquet]'") from None
        try:
            return pq.ParquetFile(path)
        except (pyarrow.ArrowException, OSError):  # pyarrow's messages may quote the file's bytes
            raise DataError(f"{path}: not a readable Parquet file") from None

    def universe(self, path: Path, n_items: int | None, label_column: str | None) -> tuple[list[str], dict]:
        names = list(self._file(path).schema_arrow.names)
        check_header(path, names, label_column)
        return [n for n in names if n != label_column], {"universe": "the Parquet schema"}

    def chunks(self, data: ChunkedRecords) -> Iterator[BinaryDataset]:
        f = self._file(data.path)
        groups = list(range(f.num_row_groups))
        if data.shard is not None:
            groups = groups[data.shard[0]::data.shard[1]]
        columns = list(data.universe) + ([data.label_column] if data.label_column else [])
        rows = max(1, data.chunk_bytes // max(1, len(columns)))
        for batch in f.iter_batches(batch_size=rows, row_groups=groups, columns=columns) if groups else ():
            yield parquet_records(data.path, batch, list(data.universe), data.label_column)


def parquet_records(path: Path, batch: Any, names: list[str], label_column: str | None) -> BinaryDataset:
    """The records of one pyarrow record batch; a null or non-0/1 cell is a one-line error naming its column."""
    cells = []
    for name in names:
        column = batch.column(name)
        if column.null_count:
            raise record_error(path, f"a value in column {name!r} is missing", "every cell must be 0 or 1")
        values = column.to_numpy(zero_copy_only=False)
        if values.size and not np.isin(values, (0, 1)).all():
            raise record_error(path, f"a value in column {name!r} is not 0 or 1", "every cell must be 0 or 1")
        cells.append(values.astype(np.uint8))
    records = np.column_stack(cells) if cells and batch.num_rows else np.zeros((batch.num_rows, len(names)), np.uint8)
    labels = None
    if label_column is not None:
        column = batch.column(label_column)
        values = column.to_numpy(zero_copy_only=False)
        if column.null_count or (values.size and not np.issubdtype(values.dtype, np.integer)):
            raise record_error(path, f"a value in label column {label_column!r} is not an integer",
                               "every label must be a whole number")
        labels = values.astype(np.int64)
    return BinaryDataset(records=records, item_names=names, labels=labels, name=file_stem(path), source=str(path))


def load_parquet(path: str | Path, *, label_column: str | None = None, limit: int | None = None) -> BinaryDataset:
    """The records of a Parquet file held in memory (``source: parquet``); ``limit`` keeps the first N."""
    check_limit(limit)
    data = ChunkedRecords.open(path, chunk_bytes=1 << 26, source="parquet", label_column=label_column)
    chunks = list(data.chunks())
    records = np.concatenate([c.dense(np.uint8) for c in chunks]) if chunks else np.zeros((0, data.n_items), np.uint8)
    labels = np.concatenate([c.labels for c in chunks]) if label_column and chunks else None
    if limit is not None:
        records, labels = records[:limit], None if labels is None else labels[:limit]
    if records.shape[0] == 0:
        raise DataError(f"{path}: no rows (empty dataset)")
    return BinaryDataset(records=records, item_names=list(data.universe), labels=labels, name=data.name,
                         source=str(path), meta=dict(data.file_meta))


#: The formats a file can be read in chunks from, by ``data.source``.
READERS: dict[str, Any] = {"transactions": _Transactions(), "csv": _Csv(), "parquet": _Parquet()}


Records = BinaryDataset | ChunkedRecords


def chunks_of(data: Records) -> Iterator[BinaryDataset]:
    """The chunks of one pass over ``data``: an in-memory dataset is its own single chunk."""
    return data.chunks() if isinstance(data, ChunkedRecords) else iter((data,))


def narrowed(data: Records, rule: Rule) -> Records:
    """``rule`` applied to every record of ``data``: at once in memory, chunk by chunk otherwise."""
    return data.narrowed(rule) if isinstance(data, ChunkedRecords) else rule(data)


def summed(data: Records, statistic: Callable[[BinaryDataset], T]) -> T:
    """The sum over one pass of ``statistic`` (a sum over records) of each chunk: one call in memory."""
    total: Any = None
    for chunk in chunks_of(data):
        value = statistic(chunk)
        total = value if total is None else total + value
    if total is None:  # a rank whose shard holds no record: the statistic of no record
        return statistic(data._template())  # type: ignore[union-attr]
    return total
