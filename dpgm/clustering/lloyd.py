"""DP Lloyd on the raw records (Blum et al. 2005, SuLQ): the baseline DP kernel k-means beats.

Rows are clipped to a public L2 bound (default sqrt(m), the paper's choice for binary MNIST)
and run through the shared noisy Lloyd iteration (noisy_lloyd.py). DPKernelKMeans
(kernel_kmeans.py) is this class on random Fourier features instead of raw records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import scipy.sparse as sp

from dpgm.clustering.base import STAGE, Partition
from dpgm.clustering.noisy_lloyd import (
    DEFAULT_MIN_COUNT,
    Assign,
    NearestCentre,
    Passes,
    Rows,
    kmeans_pp_seeds,
    lloyd_event,
    lloyd_releases,
    nearest_centre,
    noise_floor,
    noisy_lloyd,
    on_device,
    random_unit_centres,
    resolve_sigma,
    stage_epsilon,
)
from dpgm.data.chunks import ChunkedRecords, Records, chunks_of
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import clip_rows

Init = Literal["public", "random"]


@dataclass
class DPLloyd:
    """DP k-means by noisy Lloyd iterations on rows clipped to ``clip_norm`` (null: sqrt(m)).

    ``init="public"`` seeds with k-means++ on the ``public`` sample (free: public data);
    ``init="random"`` starts from a uniformly random partition (data-independent).
    ``target_epsilon`` (this stage alone, at the accountant's delta) overrides ``noise_multiplier``.
    """

    k: int = 10
    iterations: int = 20
    noise_multiplier: float = 40.0
    target_epsilon: float | None = None
    init: Init = "random"
    public: BinaryDataset | None = None
    clip_norm: float | None = None
    min_count: float = DEFAULT_MIN_COUNT
    debias: bool = True
    device: str | None = None  # a torch device for the passes' sums (``on_device``); None: NumPy
    centres_: np.ndarray | None = field(default=None, init=False, repr=False)
    bound_: float | None = field(default=None, init=False, repr=False)
    sq_norms_: np.ndarray | None = field(default=None, init=False, repr=False)

    method: ClassVar[str] = "lloyd"
    #: Whether records in chunks (``dpgm.data.chunks``) can be partitioned: each pass reads them again.
    streams: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.k < 1 or self.iterations < 1:
            raise ConfigError(
                f"partition: need k >= 1 and iterations >= 1, got k={self.k}, iterations={self.iterations}"
            )
        if self.init not in ("public", "random"):
            raise ConfigError(f"partition.init: must be 'public' or 'random', got {self.init!r}")
        if self.init == "public" and self.public is None:
            raise ConfigError(
                "partition.init: 'public' needs a public sample (e.g. the MNIST test split)"
            )

    # -- hooks the kernel version overrides -------------------------------------------
    def _setup(self, n_items: int, rng: np.random.Generator) -> None:
        """Fix the data-independent parts of the method (here: the public norm bound)."""
        self.bound_ = float(self.clip_norm) if self.clip_norm is not None else math.sqrt(n_items)

    def _rows(self, records: Any) -> Rows:
        """The rows the noisy sums add up: records (as float32 CSR) clipped to L2 norm <= bound."""
        return clip_rows(sp.csr_matrix(records), self.bound_)

    def _info(self) -> dict[str, Any]:
        return {"clip_norm": self.bound_}

    def _dim(self, n_items: int) -> int:
        """The dimension of the rows (here the records')."""
        return n_items

    def _rule(self, centres: np.ndarray, sq_norms: np.ndarray | None) -> NearestCentre:
        """The released centres' rule for records read in chunks (``Partition.rule``)."""
        return NearestCentre(centres, sq_norms, self.bound_)

    # -- the partitioner ----------------------------------------------------------------
    def _init(self, dim: int, n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, Assign | None]:
        """(initial centres, first assignments or None): public k-means++ seeds, or random.

        "random" is the random-partition start: the first iteration averages a uniformly
        random partition (data-independent: one uniform per record, in record order, from a
        generator seeded by one draw of the run's, however many records this rank holds or how
        they are chunked); random directions of norm bound/2 stand in for parts whose first
        noisy count is below the floor.
        """
        if self.init == "random":
            centres = random_unit_centres(self.k, dim, 0.5 * self.bound_, rng)
            per_record, k = np.random.default_rng(rng.integers(2**63)), self.k
            return centres, lambda chunk: np.minimum((per_record.random(chunk.shape[0]) * k).astype(np.int64), k - 1)
        if self.public.n_items != n_items:
            raise DataError(
                f"{self.public.where}: public sample has {self.public.n_items} items, data has {n_items}"
            )
        return kmeans_pp_seeds(self._rows(self.public.records), self.k, rng), None

    def _row_passes(self, data: Records) -> tuple[Rows | Passes, int]:
        """The clipped rows (in memory) or a function giving one pass over them (chunks), and their dimension."""
        rows_of = self._rows if self.device is None else lambda records: on_device(self._rows(records), self.device)
        if not isinstance(data, ChunkedRecords):
            rows = rows_of(data.records)
            return rows, rows.shape[1]
        return (lambda: (rows_of(c.records) for c in chunks_of(data))), self._dim(data.n_items)

    def fit(
        self, data: Records, accountant: Accountant, rng: np.random.Generator
    ) -> Partition:
        """Noisy Lloyd (Alg. 2 lines 8-12): T iterations, each charged before its release."""
        releases = lloyd_releases(self.iterations)
        sigma = resolve_sigma(
            self.noise_multiplier, self.target_epsilon, lloyd_event, releases, accountant.delta
        )
        accountant.refuse_unless_affordable(STAGE, lloyd_event(sigma), count=releases)  # before touching data
        self._setup(data.n_items, rng)
        rows, dim = self._row_passes(data)
        init, first = self._init(dim, data.n_items, rng)
        result = noisy_lloyd(
            rows,
            init,
            first_assignments=first,
            iterations=self.iterations,
            sigma=sigma,
            bound=self.bound_,
            accountant=accountant,
            rng=rng,
            min_count=self.min_count,
            debias=self.debias,
        )
        self.centres_, self.sq_norms_ = result.centres, result.sq_norms
        info = {
            "method": self.method,
            "noise_multiplier": sigma,
            "target_epsilon": self.target_epsilon,
            "stage_epsilon": stage_epsilon(lloyd_event(sigma), releases, accountant.delta),
            "delta": accountant.delta,
            "iterations": self.iterations,
            "init": self.init,
            "norm_bound": self.bound_,
            "min_count": self.min_count,
            "noise_floor": noise_floor(sigma, dim),  # a part at or below it keeps its centre (public: sigma, dim)
            "debias": self.debias,
            "released_counts": result.noisy_counts.tolist(),
            "kept_previous_centre": result.kept,
            **self._info(),
        }
        return Partition(
            assignments=result.assignments,
            noisy_sizes=np.maximum(result.noisy_counts, 0.0),
            centres=result.centres,
            info=info,
            rule=self._rule(result.centres, result.sq_norms),
        )

    def assign(self, records: Any) -> np.ndarray:
        """Nearest released centre for each record (post-processing)."""
        if self.centres_ is None:
            raise RuntimeError("assign() needs a fitted partitioner")
        return nearest_centre(self._rows(records), self.centres_, self.sq_norms_)
