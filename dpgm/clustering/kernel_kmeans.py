"""DP kernel k-means with random Fourier features (paper Alg. 2, corrected per docs/paper.md, notes 2-3).

Records are mapped by a data-independent RBF feature map whose rows are clipped to norm <= 1
(paired map: 1 up to rounding; cosine map: up to sqrt 2), so no DPNorm call is needed and the
noisy sums have sensitivity 1. Then the shared noisy Lloyd iteration runs in feature space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpgm.clustering.lloyd import DPLloyd
from dpgm.clustering.noisy_lloyd import NearestCentre, Rows
from dpgm.errors import ConfigError
from dpgm.features.rff import FEATURE_MAPS, FeatureMap, RandomFourierFeatures


@dataclass
class DPKernelKMeans(DPLloyd):
    """DP Lloyd on z(x) with D = ``features`` RBF frequencies (``gamma``; ``feature_map``).

    The paired map gives 2D features, the cosine map D. ``clip_norm`` is unused: the bound is 1.
    """

    features: int = 200
    feature_map: FeatureMap = "paired"
    gamma: float = 0.01
    feature_map_: RandomFourierFeatures | None = field(default=None, init=False, repr=False)

    method: ClassVar[str] = "kernel_kmeans"
    streams: ClassVar[bool] = True  # its rule: the nearest centre to a record's features (public map)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.feature_map not in FEATURE_MAPS:
            raise ConfigError(
                f"partition.feature_map: must be one of {list(FEATURE_MAPS)}, got {self.feature_map!r}"
            )
        if self.features < 1 or not self.gamma > 0:
            raise ConfigError(
                f"partition: need features >= 1 and gamma > 0, got {self.features}, {self.gamma}"
            )

    def _setup(self, n_items: int, rng: np.random.Generator) -> None:
        """Draw the frequencies from ``rng`` (data-independent); the norm bound is 1."""
        self.feature_map_ = RandomFourierFeatures.draw(
            n_items, self.features, gamma=self.gamma, kind=self.feature_map, rng=rng
        )
        self.bound_ = RandomFourierFeatures.norm_bound

    def _rows(self, records: Any) -> Rows:
        return self.feature_map_.transform(records, clip=True)

    def _dim(self, n_items: int) -> int:
        return self.feature_map_.dim

    def _rule(self, centres: np.ndarray, sq_norms: np.ndarray | None) -> NearestCentre:
        return NearestCentre(centres, sq_norms, self.bound_, self.feature_map_)

    def _info(self) -> dict[str, Any]:
        return {
            "feature_map": self.feature_map,
            "gamma": self.gamma,
            "frequencies": self.features,
            "feature_dim": self.feature_map_.dim,
        }
