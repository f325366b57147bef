"""Data: the BinaryDataset type and loaders (MNIST IDX, scikit-learn digits, transactions, CSV)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpgm.data.chunks import ChunkedRecords, Records, chunks_of, load_parquet, narrowed, summed
from dpgm.data.csv import load_csv
from dpgm.data.dataset import BinaryDataset, drop_short_records, drop_undeclared_labels
from dpgm.data.digits import load_digits
from dpgm.data.mnist import load_mnist
from dpgm.data.paths import data_dir, resolve_data_path
from dpgm.data.transactions import (
    item_counts,
    load_transactions,
    restrict_items,
    top_item_ids,
)
from dpgm.errors import ConfigError
from dpgm.privacy import collective

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
    "item_counts",
    "load_csv",
    "load_dataset",
    "load_digits",
    "load_mnist",
    "load_parquet",
    "load_public_sample",
    "load_transactions",
    "narrowed",
    "resolve_data_path",
    "restrict_items",
    "summed",
    "top_item_ids",
]


def load_dataset(cfg: DataConfig) -> Records:
    """The private records described by ``cfg`` (source, path, split, threshold, limit, ...).

    A relative ``cfg.path`` is tried as given, then under ``data_dir()``. Records with fewer
    than ``cfg.min_items`` items are dropped (``drop_short_records``). ``cfg.top_items`` is
    NOT applied here: choosing items looks at the data, so the training run does it privately.
    In a distributed run each rank gets its shard: a transaction file's lines in the rank's byte
    range (``dpgm.data.shards``), else a contiguous slice of the records loaded in memory. With
    ``cfg.chunk_mb`` the records stay on disk (``dpgm.data.chunks.ChunkedRecords``).
    """
    world = collective.world_size()
    shard = None if world == 1 else (collective.rank(), world)
    if cfg.chunk_mb is not None:  # never whole in memory: a chunk at a time, on every pass
        chunked = ChunkedRecords.open(resolve_data_path(cfg.path), chunk_bytes=max(1, round(cfg.chunk_mb * 2**20)),
                                      source=cfg.source, n_items=cfg.n_items, shard=shard,
                                      label_column=cfg.label_column)
        return narrowed(chunked, lambda d: drop_short_records(d, cfg.min_items))
    dataset = _load(cfg, shard)
    if shard is not None and cfg.source != "transactions":
        dataset = dataset.subset(np.array_split(np.arange(dataset.n_records), world)[shard[0]])
    return drop_short_records(dataset, cfg.min_items)


def _load(cfg: DataConfig, shard: tuple[int, int] | None = None) -> BinaryDataset:
    """The records of ``cfg``'s source, as the file holds them (a transaction file's ``shard``)."""
    if cfg.source == "mnist":
        folder = None if cfg.path is None else resolve_data_path(cfg.path)
        return load_mnist(
            cfg.split,
            threshold=cfg.threshold,
            directory=folder,
            download=cfg.download,
            limit=cfg.limit,
        )
    if cfg.source == "digits":
        return load_digits(threshold=cfg.threshold, limit=cfg.limit)
    if cfg.source in ("transactions", "csv", "parquet") and not cfg.path:
        raise ConfigError(f"data.path: is required for source {cfg.source}")
    if cfg.source == "transactions":
        return load_transactions(resolve_data_path(cfg.path), limit=cfg.limit, n_items=cfg.n_items,
                                 require_universe=True, shard=shard)
    if cfg.source == "csv":
        return load_csv(resolve_data_path(cfg.path), label_column=cfg.label_column, limit=cfg.limit)
    if cfg.source == "parquet":
        return load_parquet(resolve_data_path(cfg.path), label_column=cfg.label_column, limit=cfg.limit)
    raise ConfigError(f"data.source: unknown source {cfg.source!r}")


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
