"""Records read a chunk at a time: a file larger than memory (``data.chunk_mb``).

``ChunkedRecords`` holds no record. Every pass over it reads the file (or one rank's shard of it: a
byte range of a transaction or CSV file, ``dpgm.data.shards``, or every world-th row group of a
Parquet file; of a dataset in several files, the rank's whole files) again in pieces of about
``chunk_bytes`` (cut at line breaks), parses each piece into a ``BinaryDataset`` and applies the
per-record rules the earlier stages set (``narrowed``), so that a pass holds one chunk at a time. A
statistic that is a sum over records is the sum of its chunks' values (``summed``); an in-memory
``BinaryDataset`` is one chunk, so one piece of code serves both (docs/guide/data.md, "Data larger
than memory").
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from dpgm.data.csv import check_header, csv_records, header_names
from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, file_stem, record_error
from dpgm.data.shards import byte_range, files_for_rank, line_start
from dpgm.data.transactions import csr_records, item_universe, parse_transactions
from dpgm.errors import ConfigError, DataError

#: A per-record rule: a dataset in, the same records narrowed (items restricted, short ones dropped) out.
Rule = Callable[[BinaryDataset], BinaryDataset]
T = TypeVar("T")


@dataclass(frozen=True)
class ChunkedRecords:
    """The files of one dataset of ``source`` (transactions, csv, parquet) read ``chunk_bytes`` at a time;
    ``shard`` = (rank, world size) or None."""

    paths: tuple[Path, ...]
    universe: list[str]  # the declared item universe of the file (before any rule)
    chunk_bytes: int
    shard: tuple[int, int] | None = None
    rules: tuple[Rule, ...] = ()
    name: str = "dataset"
    file_meta: dict = field(default_factory=dict)
    source: str = "transactions"
    label_column: str | None = None

    @classmethod
    def open(cls, path: str | Path | Sequence[Path], *, chunk_bytes: int, source: str = "transactions",
             n_items: int | None = None, shard: tuple[int, int] | None = None,
             label_column: str | None = None) -> ChunkedRecords:
        """The records of ``path`` (one file, or the files of one dataset in order) in chunks. The item
        universe is declared: for transactions an items file or ``n_items``; for CSV the header, for
        Parquet the schema (less the label column); every file must declare the same one."""
        paths = (Path(path),) if isinstance(path, (str, Path)) else tuple(Path(p) for p in path)
        if not paths:
            raise ConfigError("data.path: names no file")
        if chunk_bytes < 1:
            raise ConfigError(f"data.chunk_mb: a chunk must hold at least one byte, got {chunk_bytes}")
        if source not in READERS:
            raise ConfigError(f"data.chunk_mb: source {source!r} cannot be read in chunks "
                              f"(readable: {', '.join(sorted(READERS))})")
        for file in paths:
            if not file.is_file():
                raise DataError(f"{file}: file not found")
        if shard is not None and len(paths) == 1 and paths[0].suffix == ".gz":
            raise DataError(f"{paths[0]}: a gzip file cannot be read by byte ranges; give each rank its own file "
                            "or an uncompressed one")
        names, meta = READERS[source].universe(paths[0], n_items, label_column)
        for file in paths[1:]:
            if READERS[source].universe(file, n_items, label_column)[0] != names:
                raise DataError(f"{file}: its items differ from those of {paths[0]}; the files of one dataset "
                                "declare the same items")
        name = file_stem(paths[0]) if len(paths) == 1 else paths[0].parent.name or "dataset"
        return cls(paths, names, chunk_bytes, shard, name=name, file_meta=meta, source=source,
                   label_column=label_column)

    # -- what a BinaryDataset also answers -------------------------------------------------
    @property
    def where(self) -> str:
        return str(self.paths[0]) if len(self.paths) == 1 else f"{self.paths[0].parent} ({len(self.paths)} files)"

    def reads(self) -> list[tuple[Path, tuple[int, int] | None]]:
        """This rank's reads: (file, its shard inside the file). One file is cut by bytes or row groups;
        several are shared out whole (``files_for_rank``)."""
        if len(self.paths) == 1:
            return [(self.paths[0], self.shard)]
        mine = self.paths if self.shard is None else files_for_rank(self.paths, *self.shard)
        return [(file, None) for file in mine]

    @cached_property
    def template(self) -> BinaryDataset:
        """No record, with the rules applied: the item universe and metadata later stages see (built once
        per set of rules)."""
        empty = sp.csr_matrix((0, len(self.universe)), dtype=np.uint8)
        return self._narrow(BinaryDataset(records=empty, item_names=list(self.universe), name=self.name,
                                          source=self.where, meta=dict(self.file_meta)))

    def _narrow(self, data: BinaryDataset) -> BinaryDataset:
        for rule in self.rules:
            data = rule(data)
        return data

    n_items = property(lambda self: self.template.n_items, doc="Number of items after the rules: public.")
    item_names = property(lambda self: self.template.item_names, doc="The items' names after the rules.")
    meta = property(lambda self: self.template.meta, doc="What the loader and the rules noted (public).")
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
        for path, shard in self.reads():
            try:
                for data in READERS[self.source].chunks(self, path, shard):
                    yield self._narrow(data)
            except (gzip.BadGzipFile, EOFError, zlib.error):  # gzip's messages quote private bytes
                raise DataError(f"{path}: not a valid gzip file (corrupt or truncated)") from None
            except UnicodeDecodeError:
                raise DataError(f"{path}: not UTF-8 text") from None
            except OSError as exc:
                raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None

    def byte_blocks(self, path: Path, shard: tuple[int, int] | None, begin: int = 0) -> Iterator[bytes]:
        """The bytes of ``path``'s lines in ``shard`` from offset ``begin`` on (a gzip file: all of it,
        decompressed), ``chunk_bytes`` at a time."""
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                f.seek(begin)
                while block := f.read(self.chunk_bytes):
                    yield block
            return
        with path.open("rb") as f:
            size = path.stat().st_size
            lo, hi = (0, size - begin) if shard is None else byte_range(size - begin, *shard)
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

    def chunks(self, data: ChunkedRecords, path: Path, shard: tuple[int, int] | None) -> Iterator[BinaryDataset]:
        names, universe = list(data.universe), data.file_meta.get("universe", "")
        for piece in _cut_at_lines(data.byte_blocks(path, shard)):
            rows, ids, n = parse_transactions(piece, path, part=True)
            yield BinaryDataset(records=csr_records(path, rows, ids, n, names, universe), item_names=names,
                                name=data.name, source=str(path), meta=dict(data.file_meta))


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

    def chunks(self, data: ChunkedRecords, path: Path, shard: tuple[int, int] | None) -> Iterator[BinaryDataset]:
        header, begin = self._header(path)
        pieces = _cut_at_lines(data.byte_blocks(path, shard, begin))
        piece = next(pieces, None)
        while piece is not None:
            following = next(pieces, None)
            lines = piece.decode("utf-8").split("\n")
            lines = lines[:-1] if piece.endswith(b"\n") else lines
            if following is None:  # blank lines at the end of the file are not records
                while lines and not lines[-1].strip():
                    lines.pop()
            yield csv_records(path, header, [line.rstrip("\r") for line in lines], data.label_column)
            piece = following


def open_parquet(path: Path) -> Any:
    """A Parquet file opened by pyarrow (an optional dependency); one-line errors that quote none of its bytes."""
    try:
        import pyarrow
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("Parquet files need pyarrow: pip install 'dpgm[parquet]'") from None
    try:
        return pq.ParquetFile(path)
    except (pyarrow.ArrowException, OSError):  # pyarrow's messages may quote the file's bytes
        raise DataError(f"{path}: not a readable Parquet file") from None


class _Parquet:
    """A Parquet file of 0/1 (or boolean) columns, one record per row, read a batch of rows at a time
    (pyarrow); a rank reads every world-th row group."""

    def _file(self, path: Path) -> Any:
        return open_parquet(path)

    def universe(self, path: Path, n_items: int | None, label_column: str | None) -> tuple[list[str], dict]:
        names = list(self._file(path).schema_arrow.names)
        check_header(path, names, label_column)
        return [n for n in names if n != label_column], {"universe": "the Parquet schema"}

    def chunks(self, data: ChunkedRecords, path: Path, shard: tuple[int, int] | None) -> Iterator[BinaryDataset]:
        f = self._file(path)
        groups = list(range(f.num_row_groups))
        if shard is not None:
            groups = groups[shard[0]::shard[1]]
        columns = list(data.universe) + ([data.label_column] if data.label_column else [])
        rows = max(1, data.chunk_bytes // max(1, len(columns)))
        for batch in f.iter_batches(batch_size=rows, row_groups=groups, columns=columns) if groups else ():
            yield parquet_records(path, batch, list(data.universe), data.label_column)


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


def gathered(data: ChunkedRecords, *, limit: int | None = None) -> BinaryDataset:
    """Every chunk of ``data`` held in memory as one dataset (``limit``: the first N records only)."""
    check_limit(limit)
    chunks = list(data.chunks())
    if not chunks:
        return data.template
    if limit is not None:
        kept, left = [], limit
        for chunk in chunks:
            kept.append(chunk if chunk.n_records <= left else chunk.subset(np.arange(left)))
            left -= kept[-1].n_records
            if left == 0:
                break
        chunks = kept
    if all(c.is_sparse for c in chunks):
        records: Any = sp.vstack([c.records for c in chunks], format="csr")
    else:
        records = np.concatenate([c.dense(np.uint8) for c in chunks])
    labels = np.concatenate([c.labels for c in chunks]) if all(c.labels is not None for c in chunks) else None
    return BinaryDataset(records=records, item_names=list(chunks[0].item_names), labels=labels, name=data.name,
                         source=data.where, meta=dict(chunks[0].meta))


def load_parquet(path: str | Path, *, label_column: str | None = None, limit: int | None = None) -> BinaryDataset:
    """The records of a Parquet file held in memory (``source: parquet``); ``limit`` keeps the first N."""
    dataset = gathered(ChunkedRecords.open(path, chunk_bytes=1 << 26, source="parquet", label_column=label_column),
                       limit=limit)
    if dataset.n_records == 0:
        raise DataError(f"{path}: no rows (empty dataset)")
    return dataset


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
        return statistic(data.template)  # type: ignore[union-attr]
    return total
