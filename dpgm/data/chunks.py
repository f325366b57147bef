"""Records read a chunk at a time: a transaction file larger than memory (``data.chunk_mb``).

``ChunkedRecords`` holds no record. Every pass over it reads the file (or one rank's shard of it,
``dpgm.data.shards``) again in pieces of about ``chunk_bytes`` cut at line breaks, parses each
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

from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import file_stem
from dpgm.data.shards import byte_range, line_start
from dpgm.data.transactions import csr_records, item_universe, parse_transactions
from dpgm.errors import ConfigError, DataError

#: A per-record rule: a dataset in, the same records narrowed (items restricted, short ones dropped) out.
Rule = Callable[[BinaryDataset], BinaryDataset]
T = TypeVar("T")


@dataclass(frozen=True)
class ChunkedRecords:
    """A transaction file read ``chunk_bytes`` at a time; ``shard`` = (rank, world size) or None."""

    path: Path
    universe: list[str]  # the declared item universe of the file (before any rule)
    chunk_bytes: int
    shard: tuple[int, int] | None = None
    rules: tuple[Rule, ...] = ()
    name: str = "dataset"
    file_meta: dict = field(default_factory=dict)

    @classmethod
    def open(cls, path: str | Path, *, chunk_bytes: int, n_items: int | None = None,
             shard: tuple[int, int] | None = None) -> ChunkedRecords:
        """The records of ``path`` in chunks; the item universe must be declared (items file or ``n_items``)."""
        path = Path(path)
        if chunk_bytes < 1:
            raise ConfigError(f"data.chunk_mb: a chunk must hold at least one byte, got {chunk_bytes}")
        if not path.is_file():
            raise DataError(f"{path}: file not found")
        if shard is not None and path.suffix == ".gz":
            raise DataError(f"{path}: a gzip file cannot be read by byte ranges; give each rank its own file "
                            "or an uncompressed one")
        names, meta = item_universe(path, n_items, True, np.zeros(0, dtype=np.int64))
        return cls(path, names, chunk_bytes, shard, name=file_stem(path), file_meta=meta)

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
    labels = property(lambda self: None, doc="Transaction files carry no labels.")
    image_shape = property(lambda self: None)
    is_sparse = property(lambda self: True)

    def narrowed(self, rule: Rule) -> ChunkedRecords:
        """The same file with one more per-record rule applied to every chunk."""
        return replace(self, rules=self.rules + (rule,))

    def chunks(self) -> Iterator[BinaryDataset]:
        """One pass: the records in order, a chunk at a time, with the rules applied."""
        names, universe = list(self.universe), self.file_meta.get("universe", "")
        for piece in self._pieces():
            rows, ids, n = parse_transactions(piece, self.path, part=True)
            yield self._narrow(BinaryDataset(records=csr_records(self.path, rows, ids, n, names, universe),
                                             item_names=names, name=self.name, source=str(self.path),
                                             meta=dict(self.file_meta)))

    def _pieces(self) -> Iterator[bytes]:
        """The bytes of this rank's lines, about ``chunk_bytes`` at a time, each ending at a line break."""
        try:
            yield from _cut_at_lines(self._blocks(), self.chunk_bytes)
        except (gzip.BadGzipFile, EOFError, zlib.error):  # gzip's messages quote private bytes
            raise DataError(f"{self.path}: not a valid gzip file (corrupt or truncated)") from None
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read ({exc.strerror or exc})") from None

    def _blocks(self) -> Iterator[bytes]:
        if self.path.suffix == ".gz":
            with gzip.open(self.path, "rb") as f:
                while block := f.read(self.chunk_bytes):
                    yield block
            return
        with self.path.open("rb") as f:
            size = self.path.stat().st_size
            start, end = (0, size) if self.shard is None else byte_range(size, *self.shard)
            begin, stop = line_start(f, start, size), line_start(f, end, size)
            f.seek(begin)
            left = stop - begin
            while left > 0 and (block := f.read(min(self.chunk_bytes, left))):
                left -= len(block)
                yield block


def _cut_at_lines(blocks: Iterator[bytes], size: int) -> Iterator[bytes]:
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
