"""Data: the BinaryDataset type and loaders (MNIST IDX, scikit-learn digits, transactions, CSV)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.data.chunks import READERS, ChunkedRecords, Records, chunks_of, gathered, load_parquet, narrowed, summed
from dpgm.data.csv import load_csv
from dpgm.data.dataset import BinaryDataset, drop_short_records, drop_undeclared_labels
from dpgm.data.digits import load_digits
from dpgm.data.mnist import load_mnist
from dpgm.data.paths import data_dir, resolve_data_files, resolve_data_path
from dpgm.data.table import load_table
from dpgm.data.transactions import (
    item_counts,
    load_transactions,
    restrict_items,
    top_item_ids,
)
from dpgm.errors import ConfigError
from dpgm.privacy import collective
from dpgm.tables import table_schema

if TYPE_CHECKING:
    from dpgm.config import DataConfig

__all__ = [
    "BinaryDataset",
    "ChunkedRecords",
    "Records",
    "chunks_of",
    "data_dir",
    "drop_short_records",
    "drop_undeclared_labels",
    "gathered",
    "item_counts",
    "load_csv",
    "load_dataset",
    "load_digits",
    "load_mnist",
    "load_parquet",
    "load_public_sample",
    "load_transactions",
    "narrowed",
    "resolve_data_files",
    "resolve_data_path",
    "restrict_items",
    "summed",
    "top_item_ids",
]


def load_dataset(cfg: DataConfig) -> Records:
    """The private records described by ``cfg`` (source, path, split, threshold, limit, ...).

    A relative ``cfg.path`` is tried as given, then under ``data_dir()``; it may name one file, a
    folder of files or a glob pattern (``resolve_data_files``): the files, in name order, are one
    dataset. Records with fewer than ``cfg.min_items`` items are dropped (``drop_short_records``).
    With ``cfg.schema`` the CSV file is a declared table, encoded as attribute=value items
    (``dpgm.data.table``). ``cfg.top_items`` is NOT applied here: choosing items looks at the data, so the training run
    does it privately. In a distributed run each rank gets its shard: whole files of several
    (``dpgm.data.shards.files_for_rank``), a transaction file's lines in the rank's byte range, else a
    contiguous slice of the records loaded in memory. With ``cfg.chunk_mb`` the records stay on disk
    (``dpgm.data.chunks.ChunkedRecords``).
    """
    world = collective.world_size()
    shard = None if world == 1 else (collective.rank(), world)
    if cfg.source not in LOADERS:
        raise ConfigError(f"data.source: unknown source {cfg.source!r}")
    files: list[Path] = []
    if cfg.schema is not None:
        return drop_short_records(_whole(_table)(cfg, _table_file(cfg), shard), cfg.min_items)
    if cfg.source in READERS:
        if not cfg.path:
            raise ConfigError(f"data.path: is required for source {cfg.source}")
        files = resolve_data_files(cfg.path)
        if cfg.chunk_mb is not None or len(files) > 1:
            chunk_mb = 64.0 if cfg.chunk_mb is None else cfg.chunk_mb
            chunked = ChunkedRecords.open(files, chunk_bytes=max(1, round(chunk_mb * 2**20)), source=cfg.source,
                                          n_items=cfg.n_items, shard=shard, label_column=cfg.label_column)
            if cfg.chunk_mb is None:  # several files, held in memory
                return drop_short_records(gathered(chunked, limit=cfg.limit), cfg.min_items)
            return narrowed(chunked, lambda d: drop_short_records(d, cfg.min_items))
    return drop_short_records(LOADERS[cfg.source](cfg, files[0] if files else None, shard), cfg.min_items)


Loader = Callable[[Any, Path | None], BinaryDataset]


def _whole(load: Loader) -> Callable[..., BinaryDataset]:
    """A loader of whole files: with several ranks each keeps its contiguous share of the records."""
    def sliced(cfg: DataConfig, path: Path | None, shard: tuple[int, int] | None) -> BinaryDataset:
        dataset = load(cfg, path)
        if shard is None:
            return dataset
        return dataset.subset(np.array_split(np.arange(dataset.n_records), shard[1])[shard[0]])
    return sliced


def _table_file(cfg: DataConfig) -> Path:
    """The one CSV file of a declared table (data.schema)."""
    if cfg.source != "csv" or not cfg.path:
        raise ConfigError("data.schema: declares the columns of a CSV file: set data.source: csv and data.path")
    files = resolve_data_files(cfg.path)
    if len(files) > 1:
        raise ConfigError(f"data.path: a declared table is one CSV file, {cfg.path} names {len(files)}")
    return files[0]


def _table(cfg: DataConfig, path: Path) -> BinaryDataset:
    return load_table(path, table_schema(cfg.schema), limit=cfg.limit)


def _mnist(cfg: DataConfig, path: Path | None) -> BinaryDataset:
    folder = None if cfg.path is None else resolve_data_path(cfg.path)
    return load_mnist(cfg.split, threshold=cfg.threshold, directory=folder, download=cfg.download, limit=cfg.limit)


#: How each ``data.source`` is read into memory: (config, its file or None, this rank's shard or None).
#: A transaction file is read by byte ranges; the others are loaded whole and sliced.
LOADERS: dict[str, Callable[..., BinaryDataset]] = {
    "mnist": _whole(_mnist),
    "digits": _whole(lambda cfg, path: load_digits(threshold=cfg.threshold, limit=cfg.limit)),
    "transactions": lambda cfg, path, shard: load_transactions(
        path, limit=cfg.limit, n_items=cfg.n_items, require_universe=True, shard=shard),
    "csv": _whole(lambda cfg, path: load_csv(path, label_column=cfg.label_column, limit=cfg.limit)),
    "parquet": _whole(lambda cfg, path: load_parquet(path, label_column=cfg.label_column, limit=cfg.limit)),
}


def load_public_sample(cfg: DataConfig) -> BinaryDataset | None:
    """Public data for data-independent initialisation (e.g. k-means centres), or None.

    For MNIST it is the OTHER published split (the test split when training on train), loaded
    with the same threshold and no limit; other sources have no public sample.
    """
    if cfg.source != "mnist":
        return None
    folder = None if cfg.path is None else resolve_data_path(cfg.path)
    other = "test" if cfg.split == "train" else "train"
    return load_mnist(other, threshold=cfg.threshold, directory=folder, download=cfg.download)
