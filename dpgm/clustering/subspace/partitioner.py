"""DP subspace clustering as a partitioner (Wang, Wang and Singh 2015): options and the Partitioner class.

``solver`` picks the release: "sulq" (SuLQ k-plane, Gaussian events), "gibbs" (the exponential
mechanism by Gibbs sampling: only asymptotically private, refused unless ``gibbs_asymptotic_ok``)
or "sample_aggregate" (Alg. 1 with TSC on disjoint blocks). Rows are the records as floats clipped to
the public radius. Gibbs and sample-aggregate also release the final part sizes (one Gaussian count
release, a ``size_share`` of the stage epsilon); SuLQ's last count release is those sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import scipy.sparse as sp
import torch

from dpgm.clustering.base import STAGE, Partition, saved_rule
from dpgm.clustering.noisy_lloyd import Passes, lloyd_event, resolve_sigma
from dpgm.clustering.subspace.distance import nearest_subspace, random_bases
from dpgm.clustering.subspace.gibbs import gibbs_subspaces
from dpgm.clustering.subspace.sample_aggregate import sample_aggregate
from dpgm.clustering.subspace.sulq import sulq_k_plane, sulq_releases
from dpgm.clustering.subspace.tsc import tsc
from dpgm.data.chunks import ChunkedRecords, Records, chunks_of
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_epsilon
from dpgm.privacy.clipping import clip_rows
from dpgm.privacy.events import GaussianEvent
from dpgm.privacy.mechanisms import gaussian_release

SolverName = Literal["sulq", "gibbs", "sample_aggregate"]
SOLVERS: tuple[str, ...] = ("sulq", "gibbs", "sample_aggregate")


@dataclass
class SubspaceOptions:
    """``partition.options`` of method ``subspace``.

    solver: sulq | gibbs | sample_aggregate. dim: q, the subspaces' dimension. radius: public L2
    bound each record is clipped to. iterations: SuLQ k-plane iterations or Gibbs sweeps.
    epsilon: this stage's epsilon (overrides ``partition.target_epsilon``; SuLQ without either uses
    ``partition.noise_multiplier``). size_share: share of epsilon for the final part sizes (gibbs,
    sample_aggregate). gibbs_asymptotic_ok: must be true to run gibbs, whose finite chain is only
    asymptotically private. gibbs_init: random (data-independent) or tsc (non-private TSC start, as the
    paper's experiments; the chain's output is then private only in the limit, like the chain itself).
    blocks: m, the sample-aggregate blocks. min_count: SuLQ keeps a part's subspace below this noisy count.
    """

    solver: SolverName = "sulq"
    dim: int = 1
    radius: float = 1.0
    iterations: int = 20
    epsilon: float | None = None
    size_share: float = 0.1
    gibbs_asymptotic_ok: bool = False
    gibbs_init: Literal["random", "tsc"] = "random"
    blocks: int = 10
    min_count: float = 1.0

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {self.solver!r}")
        if self.dim < 1 or self.iterations < 1 or self.blocks < 3:
            raise ValueError("need dim >= 1, iterations >= 1 and blocks >= 3")
        if not (self.radius > 0 and 0 < self.size_share < 1):
            raise ValueError("need radius > 0 and 0 < size_share < 1")
        if self.gibbs_init not in ("random", "tsc"):
            raise ValueError(f"gibbs_init must be random or tsc, got {self.gibbs_init!r}")


def float_rows(records: Any, radius: float) -> np.ndarray:
    """Records as dense float64 rows clipped to L2 norm <= radius."""
    dense = records.toarray() if sp.issparse(records) else np.asarray(records)
    return np.asarray(clip_rows(dense.astype(np.float64), radius, dtype=np.float64), dtype=np.float64)


@saved_rule("nearest_subspace")
@dataclass(frozen=True)
class NearestSubspace:
    """The released subspaces' rule (post-processing): each record's nearest subspace, its row clipped
    to the public ``radius``."""

    bases: np.ndarray
    radius: float

    def __call__(self, records: Any) -> np.ndarray:
        return nearest_subspace(float_rows(records, self.radius), self.bases)

    def state_dict(self) -> dict[str, Any]:
        return {"bases": torch.as_tensor(self.bases), "radius": self.radius}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NearestSubspace:
        return cls(state["bases"].numpy(), float(state["radius"]))


@dataclass
class DPSubspaceClustering:
    """k q-dimensional subspaces released by one of the paper's DP solvers; parts = nearest subspace."""

    k: int = 3
    options: SubspaceOptions = field(default_factory=SubspaceOptions)
    noise_multiplier: float = 40.0
    target_epsilon: float | None = None
    bases_: np.ndarray | None = field(default=None, init=False, repr=False)

    method: ClassVar[str] = "subspace"

    def __post_init__(self) -> None:
        opts = self.options
        if self.k < 1:
            raise ConfigError(f"partition: need k >= 1, got k={self.k}")
        if opts.solver == "gibbs" and not opts.gibbs_asymptotic_ok:
            raise ConfigError("partition.options.gibbs_asymptotic_ok: set it to true to run the gibbs solver, "
                              "which is only asymptotically private")
        if opts.solver != "sulq" and self.epsilon is None:
            raise ConfigError(f"partition.options.epsilon: the {opts.solver} solver needs an epsilon")

    @property
    def epsilon(self) -> float | None:
        return self.options.epsilon if self.options.epsilon is not None else self.target_epsilon

    def _sizes(self, rows: np.ndarray, accountant: Accountant, rng: np.random.Generator) -> np.ndarray:
        """Noisy sizes of the parts of the released subspaces: one Gaussian count release (sensitivity 1)."""
        share = self.epsilon * self.options.size_share
        sigma = sigma_for_epsilon(steps=1, delta=accountant.delta, target_epsilon=share,
                                  event_factory=lambda s: GaussianEvent(noise_multiplier=s))
        counts = np.bincount(nearest_subspace(rows, self.bases_), minlength=self.k)
        return gaussian_release(counts, sensitivity=1.0, noise_multiplier=sigma, accountant=accountant,
                                stage=STAGE, rng=rng)

    @property
    def streams(self) -> bool:
        """Records in chunks: SuLQ's releases are sums over records (a pass per iteration); the other
        solvers see every record at once."""
        return self.options.solver == "sulq"

    def _fit_sulq(self, rows: np.ndarray | Passes, accountant: Accountant, rng: np.random.Generator,
                  dim: int) -> dict[str, Any]:
        opts = self.options
        releases = sulq_releases(opts.iterations)
        sigma = resolve_sigma(self.noise_multiplier, self.epsilon, lloyd_event, releases, accountant.delta)
        init = random_bases(self.k, dim, opts.dim, rng)
        result = sulq_k_plane(rows, init, iterations=opts.iterations, sigma=sigma, radius=opts.radius,
                              accountant=accountant, rng=rng, min_count=opts.min_count)
        self.bases_ = result.bases
        return {"noise_multiplier": sigma, "noisy_sizes": result.noisy_sizes, "releases": releases}

    def _fit_gibbs(self, rows: np.ndarray, accountant: Accountant, rng: np.random.Generator) -> dict[str, Any]:
        opts = self.options
        d = rows.shape[1]
        init = tsc(rows, self.k, opts.dim, rng) if opts.gibbs_init == "tsc" else random_bases(self.k, d, opts.dim, rng)
        main = self.epsilon * (1.0 - opts.size_share)
        result = gibbs_subspaces(rows, init, epsilon=main, radius=opts.radius, sweeps=opts.iterations,
                                 accountant=accountant, rng=rng)
        self.bases_ = result.bases
        return {"gibbs_epsilon": main, "noisy_sizes": self._sizes(rows, accountant, rng),
                "guarantee": "only asymptotically private: exact only in the limit of the Gibbs chain"}

    def _fit_aggregate(self, rows: np.ndarray, accountant: Accountant, rng: np.random.Generator) -> dict[str, Any]:
        opts = self.options
        main = self.epsilon * (1.0 - opts.size_share)
        result = sample_aggregate(rows, k=self.k, q=opts.dim, blocks=opts.blocks, epsilon=main,
                                  accountant=accountant, rng=rng)
        self.bases_ = result.bases
        return {"aggregate_epsilon": main, "noise_multiplier": result.noise_multiplier, "beta": result.beta,
                "noisy_sizes": self._sizes(rows, accountant, rng)}

    def fit(self, data: Records, accountant: Accountant, rng: np.random.Generator) -> Partition:
        """Release k subspaces with the chosen solver (every release charged first), then sizes."""
        opts = self.options
        if opts.dim >= data.n_items:
            raise ConfigError(f"partition.options.dim: must be below the {data.n_items} items, got {opts.dim}")
        chunked = isinstance(data, ChunkedRecords)
        rows: np.ndarray | Passes = ((lambda: (float_rows(c.records, opts.radius) for c in chunks_of(data)))
                                     if chunked else float_rows(data.records, opts.radius))
        fit = {"sulq": lambda: self._fit_sulq(rows, accountant, rng, data.n_items),
               "gibbs": lambda: self._fit_gibbs(rows, accountant, rng),
               "sample_aggregate": lambda: self._fit_aggregate(rows, accountant, rng)}
        facts = fit[opts.solver]()
        sizes = facts.pop("noisy_sizes")
        info = {"method": self.method, "solver": opts.solver, "dim": opts.dim, "radius": opts.radius,
                "iterations": opts.iterations, "target_epsilon": self.epsilon, "delta": accountant.delta,
                "released_counts": np.asarray(sizes).tolist(), **facts}
        rule = NearestSubspace(self.bases_, opts.radius)
        return Partition(assignments=None if chunked else nearest_subspace(rows, self.bases_),
                         noisy_sizes=np.maximum(sizes, 0.0), centres=self.bases_, info=info, rule=rule)

    def assign(self, records: Any) -> np.ndarray:
        """Nearest released subspace of each record (post-processing)."""
        if self.bases_ is None:
            raise RuntimeError("assign() needs a fitted partitioner")
        return nearest_subspace(float_rows(records, self.options.radius), self.bases_)
