"""DP partitioners (paper section 4.1; docs/development.md) and the config factory.

``make_partitioner(cfg.partition, public=...)`` returns the partitioner registered under
``partition.method`` (``PARTITIONERS``): kernel_kmeans (Alg. 2), lloyd (SuLQ baseline), label (one part
per label), sketch (compressive k-means) or none (one part; only a noisy record count is
released, because later stages need an expected batch size).
"""

from __future__ import annotations

from typing import Any

from dpgm.clustering.base import STAGE, Partition, Partitioner, shards
from dpgm.clustering.by_label import ByColumn, ByLabel, ColumnOptions, SinglePart
from dpgm.clustering.kernel_kmeans import DPKernelKMeans
from dpgm.clustering.lloyd import DPLloyd
from dpgm.clustering.lsh_tree import LshTreeOptions, LshTreePartitioner
from dpgm.clustering.sketch.partitioner import SketchOptions
from dpgm.clustering.sketch.partitioner import from_config as sketch_from_config
from dpgm.config import PartitionConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy import collective
from dpgm.registry import Registry

__all__ = [
    "PARTITIONERS",
    "STAGE",
    "ByColumn",
    "ByLabel",
    "ColumnOptions",
    "DPKernelKMeans",
    "DPLloyd",
    "LshTreeOptions",
    "LshTreePartitioner",
    "Partition",
    "Partitioner",
    "SinglePart",
    "make_partitioner",
]


#: Partitioners by ``partition.method``: each factory takes (partition config, options, public sample).
PARTITIONERS: Registry[Partitioner] = Registry("partition.method")


def make_partitioner(cfg: PartitionConfig, *, public: BinaryDataset | None = None,
                     device: str | None = None) -> Partitioner:
    """The partitioner ``cfg.method`` names, configured from ``cfg`` and its ``options`` (``public``: init sample;
    ``device``: a torch device for the statistics of the partitioners that take one, None: NumPy on the CPU).
    On more than one rank a partitioner that does not declare ``shards`` is refused (``base.shards``)."""
    options = PARTITIONERS.options(cfg.method, cfg.options)
    partitioner = PARTITIONERS.entry(cfg.method).factory(cfg, options, public)
    if collective.world_size() > 1 and not shards(partitioner):
        raise ConfigError(f"partition.method {cfg.method!r} with these options sees every record at once and runs in "
                          "one process only: run it without torchrun, or choose a partitioner whose releases are "
                          "sums over records (docs/guide/distributed.md)")
    if device is not None and hasattr(partitioner, "device"):
        partitioner.device = device
    return partitioner


def _common(cfg: PartitionConfig) -> dict[str, Any]:
    return {"noise_multiplier": cfg.noise_multiplier, "target_epsilon": cfg.target_epsilon}


def _lloyd_common(cfg: PartitionConfig, public: BinaryDataset | None) -> dict[str, Any]:
    return {"k": cfg.k, "iterations": cfg.iterations, "init": cfg.init, "public": public, **_common(cfg)}


@PARTITIONERS.register("kernel_kmeans", doc="DP kernel k-means on random Fourier features (paper Alg. 2)")
def _kernel_kmeans(cfg: PartitionConfig, _options: None, public: BinaryDataset | None) -> Partitioner:
    return DPKernelKMeans(features=cfg.features, feature_map=cfg.feature_map, gamma=cfg.gamma,
                          **_lloyd_common(cfg, public))


@PARTITIONERS.register("lloyd", doc="DP Lloyd on the records (SuLQ k-means)")
def _lloyd(cfg: PartitionConfig, _options: None, public: BinaryDataset | None) -> Partitioner:
    return DPLloyd(clip_norm=cfg.clip_norm, **_lloyd_common(cfg, public))


@PARTITIONERS.register("label", doc="one part per declared label (noisy label counts)")
def _label(cfg: PartitionConfig, _options: None, _public: BinaryDataset | None) -> Partitioner:
    return ByLabel(k=cfg.k, **_common(cfg))


@PARTITIONERS.register("column", options=ColumnOptions,
                       doc="one part per value of a declared table's column (noisy value counts)")
def _column(cfg: PartitionConfig, options: ColumnOptions, _public: BinaryDataset | None) -> Partitioner:
    return ByColumn(k=cfg.k, first=int(options.first), **_common(cfg))  # type: ignore[arg-type]


@PARTITIONERS.register("none", doc="a single part (only a noisy record count is released)")
def _none(cfg: PartitionConfig, _options: None, _public: BinaryDataset | None) -> Partitioner:
    return SinglePart(k=1, **_common(cfg))


@PARTITIONERS.register("sketch", options=SketchOptions, doc="DP compressive k-means: a noisy sketch decoded by CL-OMPR")
def _sketch(cfg: PartitionConfig, options: SketchOptions, public: BinaryDataset | None) -> Partitioner:
    return sketch_from_config(cfg, options, public=public)


@PARTITIONERS.register("lsh_tree", options=LshTreeOptions,
                       doc="private LSH-tree coreset, then k-means on it (Google's learning/clustering design)")
def _lsh_tree(cfg: PartitionConfig, options: LshTreeOptions, public: BinaryDataset | None) -> Partitioner:
    return LshTreePartitioner(k=cfg.k, noise_multiplier=cfg.noise_multiplier, target_epsilon=cfg.target_epsilon,
                              options=options, public=public)


def _subspace_options() -> type:
    from dpgm.clustering.subspace.partitioner import SubspaceOptions

    return SubspaceOptions


@PARTITIONERS.register("subspace", options=_subspace_options(),
                       doc="DP subspace clustering (Wang, Wang and Singh 2015): SuLQ, Gibbs or sample-aggregate")
def _subspace(cfg: PartitionConfig, options: Any, _public: BinaryDataset | None) -> Partitioner:
    from dpgm.clustering.subspace.partitioner import DPSubspaceClustering

    return DPSubspaceClustering(k=cfg.k, options=options, noise_multiplier=cfg.noise_multiplier,
                                target_epsilon=cfg.target_epsilon)
