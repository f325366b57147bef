"""DP partitioners (paper section 4.1; docs/development.md) and the config factory.

``make_partitioner(cfg.partition, public=...)`` returns the partitioner that
``partition.method`` names: kernel_kmeans (Alg. 2), lloyd (SuLQ baseline), label (one part
per label), sketch (compressive k-means) or none (one part; only a noisy record count is
released, because later stages need an expected batch size).
"""

from __future__ import annotations

from dpgm.clustering.base import STAGE, Partition, Partitioner
from dpgm.clustering.by_label import ByLabel, SinglePart
from dpgm.clustering.kernel_kmeans import DPKernelKMeans
from dpgm.clustering.lloyd import DPLloyd
from dpgm.config import PartitionConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError

__all__ = [
    "STAGE",
    "ByLabel",
    "DPKernelKMeans",
    "DPLloyd",
    "Partition",
    "Partitioner",
    "SinglePart",
    "make_partitioner",
]


def make_partitioner(cfg: PartitionConfig, *, public: BinaryDataset | None = None) -> Partitioner:
    """The partitioner ``cfg.method`` names, configured from ``cfg`` (``public``: init sample)."""
    common = {"noise_multiplier": cfg.noise_multiplier, "target_epsilon": cfg.target_epsilon}
    lloyd = {"k": cfg.k, "iterations": cfg.iterations, "init": cfg.init, "public": public, **common}
    if cfg.method == "kernel_kmeans":
        return DPKernelKMeans(
            features=cfg.features, feature_map=cfg.feature_map, gamma=cfg.gamma, **lloyd
        )
    if cfg.method == "lloyd":
        return DPLloyd(clip_norm=cfg.clip_norm, **lloyd)
    if cfg.method == "label":
        return ByLabel(k=cfg.k, **common)
    if cfg.method == "none":
        return SinglePart(k=1, **common)
    if cfg.method == "sketch":
        from dpgm.clustering import sketch  # lazy: the compressive k-means module is optional here

        return sketch.from_config(cfg, public=public)
    raise ConfigError(f"partition.method: unknown method {cfg.method!r}")
