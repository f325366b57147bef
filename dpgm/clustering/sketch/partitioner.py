"""DP compressive k-means (SPARS 2019 + CL-OMPR) as the partitioner of ``partition.method: sketch``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args

import numpy as np
import torch

from dpgm.clustering.base import Partition, saved_rule
from dpgm.clustering.noisy_lloyd import nearest_centre
from dpgm.clustering.sketch.decoder import decode_sketch, part_sizes
from dpgm.clustering.sketch.frequencies import FrequencyLaw
from dpgm.clustering.sketch.private import (
    DEFAULT_COUNT_SHARE,
    Mechanism,
    plan_noise,
    release_sketch,
)
from dpgm.clustering.sketch.projection import Projection
from dpgm.clustering.sketch.signature import Signature
from dpgm.clustering.sketch.spec import draw_sketcher, require_positive
from dpgm.config import PartitionConfig
from dpgm.data.chunks import ChunkedRecords, Records, chunks_of
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DataError
from dpgm.privacy.accountant import Accountant


@dataclass
class SketchOptions:
    """Options of ``partition.method: sketch`` (the section ``partition.options``)."""

    size: int = 1000
    """m, the number of random frequencies."""
    signature: Signature = "exp"
    """The signature function: f_e (``exp``) or the 1-bit f_q (``quantised``)."""
    mechanism: Mechanism = "gaussian"
    """Gaussian noise (RDP; L2 sensitivity sqrt(r)) or Laplace (pure epsilon, SPARS Theorem 1; L1 sensitivity
    r c_f / 2); laplace without a target epsilon spends epsilon = 1 / noise_multiplier."""
    measurements: int | None = None
    """r, the entries of the sketch each record contributes to (a uniform random mask; null: all m)."""
    sigma2: float | None = None
    """Public frequency scale sigma^2, about the per-item variance within a cluster (null: the public sample's
    mean item variance, else 1/4)."""
    frequencies: FrequencyLaw = "adapted_radius"
    """The frequency law: adapted radius (Keriven et al.) or N(0, I / sigma^2)."""
    projection: int | None = 10
    """Records with more items are decoded in this many public dimensions (top principal directions of the
    public sample, else a random orthonormal basis); null: never project."""
    decodes: int = 3
    """CL-OMPR runs on the released sketch; the smallest residual wins (post-processing)."""

    def __post_init__(self) -> None:
        require_positive("partition.options", size=self.size, decodes=self.decodes, sigma2=self.sigma2,
                         projection=self.projection, measurements=self.measurements)
        if self.measurements is not None and self.measurements > self.size:
            raise ValueError(f"measurements must be in 1..size={self.size}, got {self.measurements}")
        for name, kind in (("signature", Signature), ("mechanism", Mechanism), ("frequencies", FrequencyLaw)):
            if getattr(self, name) not in get_args(kind):
                raise ValueError(f"{name} must be one of {', '.join(get_args(kind))}, got {getattr(self, name)!r}")


@saved_rule("nearest_decoded")
@dataclass(frozen=True)
class NearestDecoded:
    """The decoded centroids' rule (post-processing): each record's nearest centroid in the public
    projected space."""

    projection: Projection
    centres: np.ndarray

    def __call__(self, records: Any) -> np.ndarray:
        return nearest_centre(self.projection.apply(records), self.centres)

    def state_dict(self) -> dict[str, Any]:
        """Released centroids and the public projection, as tensors and built-ins."""
        tensor = lambda a: None if a is None else torch.as_tensor(a)
        p = self.projection
        return {"centres": tensor(self.centres), "projection": {
            "kind": p.kind, "basis": tensor(p.basis), "mean": tensor(p.mean), "lower": tensor(p.lower),
            "upper": tensor(p.upper)}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NearestDecoded:
        p = {key: value.numpy() if isinstance(value, torch.Tensor) else value
             for key, value in state["projection"].items()}
        return cls(Projection(**p), state["centres"].numpy())


@dataclass
class SketchPartitioner:
    """DP compressive k-means (SPARS 2019 + CL-OMPR) as a dpgm partitioner.

    One private release: the noisy sketch sum and the noisy count (``release_sketch``).
    Records with more than ``projection`` items are seen through a public projection
    (``make_projection``) folded into the frequencies, so the sketch is still one pass over
    the raw records. Everything after the release is post-processing: CL-OMPR decodes k
    centroids in the public box (best of ``decodes`` by sketch residual), records go to
    their nearest centroid, part sizes are the decoded weight shares times the released
    count. sigma2 is public: ``sigma2``, else the mean variance of the projected public
    sample, else 1/4 (the largest variance of a [0, 1] variable). Laplace without a target
    epsilon spends epsilon = 1 / noise_multiplier.
    """

    k: int = 10
    sketch_size: int = 1000
    signature: Signature = "exp"
    mechanism: Mechanism = "gaussian"
    measurements: int | None = None
    noise_multiplier: float = 40.0
    target_epsilon: float | None = None
    sigma2: float | None = None
    frequencies: FrequencyLaw = "adapted_radius"
    decodes: int = 3
    projection: int | None = 10
    count_share: float = DEFAULT_COUNT_SHARE
    public: BinaryDataset | None = None
    projection_: Projection | None = field(default=None, init=False, repr=False)
    centres_: np.ndarray | None = field(default=None, init=False, repr=False)

    method: ClassVar[str] = "sketch"
    #: Records in chunks: the sketch is a sum over records (one pass); the rule is ``NearestDecoded``.
    streams: ClassVar[bool] = True

    def __post_init__(self) -> None:
        require_positive("partition", k=self.k)
        require_positive("partition.options", size=self.sketch_size, decodes=self.decodes, sigma2=self.sigma2,
                         projection=self.projection)

    def _public_rows(self, n_items: int) -> np.ndarray | None:
        if self.public is None:
            return None
        if self.public.n_items != n_items:
            raise DataError(
                f"{self.public.where}: public sample has {self.public.n_items} items, "
                f"data has {n_items}"
            )
        return self.public.dense(np.float64)

    def fit(
        self, data: Records, accountant: Accountant, rng: np.random.Generator
    ) -> Partition:
        """Sketch, charge, release (eq. 3), decode (CL-OMPR), assign: one release in the ledger."""
        noise = plan_noise(
            self.mechanism,
            target_epsilon=self.target_epsilon,
            noise_multiplier=self.noise_multiplier,
            delta=accountant.delta,
            count_share=self.count_share,
        )
        public = self._public_rows(data.n_items)
        sketcher = draw_sketcher(
            data.n_items, size=self.sketch_size, rng=rng, sigma2=self.sigma2,
            signature=self.signature, measurements=self.measurements, law=self.frequencies,
            projection=self.projection, public=public,
        )
        op, proj = sketcher.operator, sketcher.projection
        records = (c.records for c in chunks_of(data)) if isinstance(data, ChunkedRecords) else data.records
        released = release_sketch(
            sketcher.raw.sum(records, rng), sketcher.raw, noise, accountant=accountant, rng=rng
        )
        result = decode_sketch(released, sketcher, self.k, rng, decodes=self.decodes, public=public)
        self.projection_, self.centres_ = proj, result.centres
        info = {
            "method": self.method,
            **released.privacy,
            "stage_epsilon": noise.stage_epsilon(accountant.delta),
            "target_epsilon": self.target_epsilon,
            "delta": accountant.delta,
            "sketch_size": op.m,
            "measurements": op.r,
            "signature": op.signature,
            "frequencies": self.frequencies,
            "sigma2": sketcher.sigma2,
            "projection": proj.kind,
            "decoded_dims": len(proj.lower),
            "released_count": released.count,
            "weights": result.weights.tolist(),
            "relative_residual": result.residual,
        }
        rule = NearestDecoded(proj, result.centres)
        return Partition(
            assignments=None if isinstance(data, ChunkedRecords) else rule(data.records),
            noisy_sizes=part_sizes(result, released),
            centres=proj.lift(result.centres),
            info=info,
            rule=rule,
        )

    def assign(self, records: Any) -> np.ndarray:
        """Nearest decoded centroid for each record, in the projected space (post-processing)."""
        if self.centres_ is None or self.projection_ is None:
            raise RuntimeError("assign() needs a fitted partitioner")
        return NearestDecoded(self.projection_, self.centres_)(records)


def from_config(cfg: PartitionConfig, options: SketchOptions, *, public: BinaryDataset | None = None
                ) -> SketchPartitioner:
    """The partitioner ``partition.method: sketch`` builds (make_partitioner calls this)."""
    return SketchPartitioner(
        k=cfg.k, sketch_size=options.size, signature=options.signature, mechanism=options.mechanism,
        measurements=options.measurements, noise_multiplier=cfg.noise_multiplier, target_epsilon=cfg.target_epsilon,
        sigma2=options.sigma2, frequencies=options.frequencies, decodes=options.decodes,
        projection=options.projection, public=public,
    )
