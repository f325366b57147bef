"""DP compressive k-means: sketch operator, private sketch release, mergeable sketches, partitioner.

The dataset is compressed into one vector of random generalised moments, the sketch
(Schellekens et al., SPARS 2019, eq. 2-3): S(X) = sum_i f(Omega^T x_i + xi) (.) b_i, with
public frequencies Omega (d x m), public dithers xi, a bounded signature f (f_e(t) = exp(i t)
or the 1-bit f_q(t) = sign(cos t) + i sign(sin t)) and a uniform random mask b_i with r of the
m entries per record. Laplace or Gaussian noise on S makes it private; CL-OMPR (cl_ompr.py)
decodes k centroids from the normalised sketch S / (alpha_r n), alpha_r = r/m.

Privacy (add/remove neighbours, DESIGN.md 2). S is a plain SUM (no division by the private
n); n is released separately with noise, so nothing assumes a public n. The masks are the
mechanism's own randomness, independent of the data: conditioned on every mask, adding or
removing record x changes S by f(Omega^T x + xi) (.) b, which has r non-zero entries, so
  L1 sensitivity (real and imaginary parts of the 2m coordinates) = r * c_f / 2,
  L2 sensitivity = sqrt(r) * max_t |f(t)|,
with c_f = 2 max_t (|Re f| + |Im f|) of Theorem 1 (2 sqrt 2 for f_e, 4 for f_q). The
record count has sensitivity 1. Under replace-one both sketch sensitivities double. The
released value is a mixture, over the data-independent masks, of mechanisms that each meet
the bound, which keeps both the pure and the Renyi guarantee.

Theorem 1 of the SPARS paper is replace-one with a public n; its noise is right only if each
record's sketch is scaled by 1/sqrt(m) (eq. 2 as printed omits the factor, which would
understate the noise by sqrt(m)). ``theorem1_sigma_xi`` gives its sigma_xi; the tests check
that our replace-one Laplace scale equals it once put in the paper's normalisation.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from threadpoolctl import threadpool_limits

from dpgm.clustering.base import STAGE, Partition, size_shares
from dpgm.clustering.cl_ompr import decode
from dpgm.clustering.noisy_lloyd import nearest_centre
from dpgm.config import PartitionConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant, rdp_curve
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon
from dpgm.privacy.events import GaussianEvent, LaplaceEvent, Neighbouring
from dpgm.privacy.mechanisms import noisy_releases

Signature = Literal["exp", "quantised"]
Mechanism = Literal["laplace", "gaussian"]
FrequencyLaw = Literal["adapted_radius", "gaussian"]

#: Theorem 1's c_f = 2 max_t (|Re f(t)| + |Im f(t)|).
C_F: dict[str, float] = {"exp": 2.0 * math.sqrt(2.0), "quantised": 4.0}
#: max_t |f(t)| (for the L2 sensitivity).
MAX_ABS: dict[str, float] = {"exp": 1.0, "quantised": math.sqrt(2.0)}
#: First Fourier coefficient of f: E f(t + U) ~ gain * exp(i t); the decoder's atoms use it.
GAIN: dict[str, float] = {"exp": 1.0, "quantised": 4.0 / math.pi}
#: Entries of the (chunk x m) phase block computed at once (cache-sized): memory O(m + chunk).
CHUNK_ENTRIES = 128_000
#: Default share of the stage's budget spent on the noisy record count.
DEFAULT_COUNT_SHARE = 0.05

Records = np.ndarray | sp.spmatrix | Iterable[np.ndarray | sp.spmatrix]


# ---------------------------------------------------------------- frequencies


def adapted_radius(count: int, rng: np.random.Generator, grid: int = 20001) -> np.ndarray:
    """Radii R with density ~ sqrt(R^2 + R^4/4) exp(-R^2/2) (Keriven et al. 2016), inverse CDF."""
    r = np.linspace(0.0, 12.0, grid)
    pdf = np.sqrt(r**2 + r**4 / 4.0) * np.exp(-(r**2) / 2.0)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (pdf[1:] + pdf[:-1]) * np.diff(r))])
    return np.interp(rng.random(count), cdf / cdf[-1], r)


def draw_frequencies(
    dim: int,
    m: int,
    *,
    sigma2: float,
    rng: np.random.Generator,
    law: FrequencyLaw = "adapted_radius",
) -> np.ndarray:
    """Omega (dim x m), data-independent: N(0, I / sigma2), or R / sigma on random directions."""
    if not (math.isfinite(sigma2) and sigma2 > 0):
        raise ConfigError(f"partition.sketch_sigma2: must be > 0, got {sigma2!r}")
    g = rng.normal(size=(dim, m))
    if law == "gaussian":
        return g / math.sqrt(sigma2)
    if law != "adapted_radius":
        raise ConfigError(f"partition.sketch_frequencies: unknown law {law!r}")
    return g / np.linalg.norm(g, axis=0) * adapted_radius(m, rng) / math.sqrt(sigma2)


# ---------------------------------------------------------------- the sketch operator


def signature_parts(theta: np.ndarray, signature: str) -> tuple[np.ndarray, np.ndarray]:
    """(Re f(theta), Im f(theta)) elementwise (eq. 2). f_q from the quadrant of theta: Re = +1 on
    [-pi/2, pi/2), Im = +1 on [0, pi) (mod 2 pi), i.e. sign(cos), sign(sin) with the boundaries
    (measure zero) on half-open quadrants, so |Re f_q| = |Im f_q| = 1 everywhere."""
    if signature == "exp":
        return np.cos(theta), np.sin(theta)
    quadrant = np.floor(theta * (2.0 / math.pi)).astype(np.int64) & 3  # 0..3, also for theta < 0
    one = theta.dtype.type(1.0)
    return one - ((quadrant + 1) & 2).astype(theta.dtype), one - (quadrant & 2).astype(theta.dtype)


def signature_sums(
    theta: np.ndarray,
    signature: str,
    work: np.ndarray | None = None,
    iwork: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Column sums of (Re f(theta), Im f(theta)) over a block of records.

    ``work`` (float, like theta) and ``iwork`` (int32): optional scratch of at least its shape.
    """
    rows = theta.shape[0]
    work = np.empty_like(theta) if work is None else work[:rows]
    if signature == "exp":
        re = np.cos(theta, out=work).sum(0).astype(np.float64)
        return re, np.sin(theta, out=work).sum(0).astype(np.float64)
    q = np.empty(theta.shape, dtype=np.int32) if iwork is None else iwork[:rows]
    np.multiply(theta, 2.0 / math.pi, out=work)
    np.floor(work, out=work)
    # q = the quadrant of theta; Im = -1 where (q & 2), Re = -1 where ((q + 1) & 2)
    np.copyto(q, work, casting="unsafe")
    im_neg = np.bitwise_and(q, 2, out=q).sum(0, dtype=np.int32)  # int32 is exact: rows < 2^30
    np.copyto(q, work, casting="unsafe")
    np.add(q, 1, out=q)
    re_neg = np.bitwise_and(q, 2, out=q).sum(0, dtype=np.int32)
    return (rows - re_neg).astype(np.float64), (rows - im_neg).astype(np.float64)


def _chunks(records: Records, rows: int) -> Iterator[np.ndarray | sp.spmatrix]:
    """Blocks of at most ``rows`` records from an array, a sparse matrix, or an iterable of blocks."""
    if isinstance(records, np.ndarray) or sp.issparse(records):
        if records.ndim != 2:
            raise DataError(f"records must be a 2-d array, got shape {records.shape}")
        for start in range(0, records.shape[0], rows):
            yield records[start : start + rows]
        return
    for block in records:
        if not sp.issparse(block):
            block = np.asarray(block)
            if block.ndim != 2:
                raise DataError(f"each block of records must be 2-d, got shape {block.shape}")
        for start in range(0, block.shape[0], rows):
            yield block[start : start + rows]


def random_subsets(rows: int, m: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(rows x size) indices, each row a uniform random size-subset of 0..m-1 (size <= m/2 is fastest).

    Draws with replacement, then redraws the repeats until none is left; every step treats the
    m labels alike, so each row is uniform over subsets and holds entry j with probability size/m.
    """
    idx = rng.integers(0, m, size=(rows, size))
    while size > 1:
        idx.sort(axis=1)
        repeat = np.zeros_like(idx, dtype=bool)
        repeat[:, 1:] = idx[:, 1:] == idx[:, :-1]
        count = int(repeat.sum())
        if count == 0:
            break
        idx[repeat] = rng.integers(0, m, size=count)
    return idx


@dataclass(frozen=True)
class SketchSum:
    """The EXACT (private) sketch sum sum_i f(Omega^T x_i + xi) (.) b_i and record count n.

    Sums of disjoint shards add (``+``). Never release this: ``release_sketch`` adds noise.
    """

    re: np.ndarray
    im: np.ndarray
    n: int
    fingerprint: str

    def __add__(self, other: SketchSum) -> SketchSum:
        _check_same_operator(self.fingerprint, other.fingerprint)
        return SketchSum(self.re + other.re, self.im + other.im, self.n + other.n, self.fingerprint)


def _check_same_operator(a: str, b: str) -> None:
    if a != b:
        raise ValueError(
            "sketches come from different sketch operators (frequencies/signature/r differ)"
        )


@dataclass(frozen=True, eq=False)
class SketchOperator:
    """Public frequencies ``omega`` (d x m), dithers ``dither`` (m), signature and r per record."""

    omega: np.ndarray
    dither: np.ndarray
    signature: Signature = "exp"
    measurements: int | None = None

    def __post_init__(self) -> None:
        if self.signature not in C_F:
            raise ConfigError(f"partition.sketch_signature: unknown signature {self.signature!r}")
        if self.omega.ndim != 2 or self.dither.shape != (self.omega.shape[1],):
            raise ValueError(
                f"omega must be d x m and dither of length m, got {self.omega.shape}, {self.dither.shape}"
            )
        r = self.m if self.measurements is None else int(self.measurements)
        if not 1 <= r <= self.m:
            raise ConfigError(f"partition.sketch_measurements: r must be in 1..m={self.m}, got {r}")
        object.__setattr__(self, "measurements", r)

    @classmethod
    def draw(
        cls,
        dim: int,
        m: int,
        *,
        sigma2: float,
        rng: np.random.Generator,
        signature: Signature = "exp",
        measurements: int | None = None,
        law: FrequencyLaw = "adapted_radius",
    ) -> SketchOperator:
        """A fresh data-independent operator: frequencies from ``law`` at scale sigma2, uniform dithers."""
        omega = draw_frequencies(dim, m, sigma2=sigma2, rng=rng, law=law)
        return cls(omega, rng.uniform(0.0, 2.0 * math.pi, size=m), signature, measurements)

    @property
    def m(self) -> int:
        return int(self.omega.shape[1])

    @property
    def dim(self) -> int:
        return int(self.omega.shape[0])

    @property
    def r(self) -> int:
        return int(self.measurements)  # type: ignore[arg-type]

    @property
    def alpha(self) -> float:
        """The subsampling parameter alpha_r = r / m of eq. (3)."""
        return self.r / self.m

    @property
    def gain(self) -> float:
        return GAIN[self.signature]

    def fingerprint(self) -> str:
        """Identifies the operator (frequencies, dithers, signature, r): sketches merge only if equal."""
        h = hashlib.sha256()
        for arr in (self.omega, self.dither):
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        h.update(f"{self.signature}/{self.r}".encode())
        return h.hexdigest()[:16]

    @staticmethod
    def _phases(
        block: np.ndarray | sp.spmatrix, omega: np.ndarray, dither: np.ndarray, out: np.ndarray
    ) -> np.ndarray:
        """Omega^T x + xi for a block of records, written into ``out[:rows]`` (dtype of omega)."""
        theta = out[: block.shape[0]]
        if sp.issparse(block):
            theta[...] = sp.csr_matrix(block, dtype=omega.dtype) @ omega
        else:
            np.matmul(np.asarray(block, dtype=omega.dtype), omega, out=theta)
        theta += dither
        return theta

    def sum(
        self,
        records: Records,
        rng: np.random.Generator,
        *,
        chunk_rows: int | None = None,
        dtype: type = np.float32,
    ) -> SketchSum:
        """Exact sketch sum of eq. (3) in one streaming pass, O(m + chunk) memory.

        ``records``: array, sparse matrix or an iterable of blocks; the masks come from ``rng``.
        """
        rows = chunk_rows or max(1, CHUNK_ENTRIES // self.m)
        re, im = np.zeros(self.m), np.zeros(self.m)
        n = 0
        omega, dither = self.omega.astype(dtype), self.dither.astype(dtype)
        # Scratch reused by every block: fresh large temporaries per block cost page faults.
        scratch = np.empty((2, rows, self.m), dtype=dtype), np.empty((rows, self.m), dtype=np.int32)
        with threadpool_limits(1, user_api="blas"):  # small blocks: BLAS threads only add overhead
            for block in _chunks(records, rows):
                if block.shape[1] != self.dim:
                    raise DataError(
                        f"records have {block.shape[1]} columns, the sketch operator expects {self.dim}"
                    )
                theta = self._phases(block, omega, dither, scratch[0][0])
                n += theta.shape[0]
                fr, fi = self._block_sums(theta, rng, scratch[0][1], scratch[1])
                re += fr
                im += fi
        if n == 0:
            raise DataError("no records to sketch")
        return SketchSum(re, im, n, self.fingerprint())

    def _block_sums(
        self, theta: np.ndarray, rng: np.random.Generator, work: np.ndarray, iwork: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Masked column sums of f(theta): all m entries (r = m), the r kept (r <= m/2), or all
        entries minus the m - r dropped ones (r > m/2)."""
        keep = 2 * self.r <= self.m
        re, im = (0.0, 0.0) if keep else signature_sums(theta, self.signature, work, iwork)
        if self.r == self.m:
            return re, im
        sign = 1.0 if keep else -1.0
        idx = random_subsets(theta.shape[0], self.m, self.r if keep else self.m - self.r, rng)
        fr, fi = signature_parts(np.take_along_axis(theta, idx, axis=1), self.signature)
        flat = idx.ravel()
        re = re + sign * np.bincount(flat, weights=fr.ravel(), minlength=self.m)
        im = im + sign * np.bincount(flat, weights=fi.ravel(), minlength=self.m)
        return re, im


# ---------------------------------------------------------------- privacy


def l1_sensitivity(
    signature: str, r: int, neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
) -> float:
    """L1 sensitivity of the sketch SUM over its 2m real coordinates: r c_f / 2 (add/remove), r c_f (replace)."""
    per_entry = C_F[signature] / 2.0
    return r * per_entry * (2.0 if neighbouring == Neighbouring.REPLACE_ONE else 1.0)


def l2_sensitivity(
    signature: str, r: int, neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
) -> float:
    """L2 sensitivity of the sketch SUM: sqrt(r) max|f| (add/remove), twice that (replace-one)."""
    return (
        math.sqrt(r)
        * MAX_ABS[signature]
        * (2.0 if neighbouring == Neighbouring.REPLACE_ONE else 1.0)
    )


def theorem1_sigma_xi(c_f: float, r: int, m: int, n: int, epsilon: float) -> float:
    """sigma_xi = 2 c_f sqrt(r m) / (sqrt(n) epsilon) of Theorem 1 (SPARS 2019; replace-one, public n)."""
    return 2.0 * c_f * math.sqrt(r * m) / (math.sqrt(n) * epsilon)


@dataclass(frozen=True)
class PrivateSketch:
    """A released sketch: noisy sum (re, im), noisy count, and how it was made. Mergeable.

    ``normalised()`` = sum / (alpha_r count): the sketch s_X of eq. (3). ``merge`` of shards
    (one per data holder, each with its own noise) gives the count-weighted average of
    their normalised sketches (SPARS Fig. 4). Each record lies in one shard, so the merged
    release is as private as the least private shard (parallel composition).
    """

    re: np.ndarray
    im: np.ndarray
    count: float
    alpha: float
    fingerprint: str
    privacy: dict[str, Any] = field(default_factory=dict)
    holders: int = 1

    def normalised(self) -> np.ndarray:
        """The complex normalised sketch; the count is floored at 1 (post-processing)."""
        return (self.re + 1j * self.im) / (self.alpha * max(self.count, 1.0))

    @staticmethod
    def merge(sketches: Iterable[PrivateSketch]) -> PrivateSketch:
        """Combine shard sketches: sums and counts add, i.e. normalised sketches average with weights n_l."""
        items = list(sketches)
        if not items:
            raise ValueError("nothing to merge")
        for s in items[1:]:
            _check_same_operator(items[0].fingerprint, s.fingerprint)
        return PrivateSketch(
            re=np.sum([s.re for s in items], axis=0),
            im=np.sum([s.im for s in items], axis=0),
            count=float(sum(s.count for s in items)),
            alpha=items[0].alpha,
            fingerprint=items[0].fingerprint,
            privacy={"shards": [s.privacy for s in items]},
            holders=sum(s.holders for s in items),
        )


@dataclass(frozen=True)
class SketchNoise:
    """Noise plan of one release: Laplace (pure eps, split) or Gaussian (multiplier, split)."""

    mechanism: Mechanism
    epsilon: float | None = None
    noise_multiplier: float | None = None
    count_share: float = DEFAULT_COUNT_SHARE

    def __post_init__(self) -> None:
        if self.mechanism not in ("laplace", "gaussian"):
            raise ConfigError(f"partition.sketch_mechanism: unknown mechanism {self.mechanism!r}")
        if not 0.0 < self.count_share < 1.0:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share}")
        value = self.epsilon if self.mechanism == "laplace" else self.noise_multiplier
        if value is None or not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"{self.mechanism} sketch noise needs a finite positive "
                f"{'epsilon' if self.mechanism == 'laplace' else 'noise_multiplier'}"
            )

    def stage_epsilon(self, delta: float) -> float:
        """Epsilon of the two releases together, alone: Laplace pure epsilon; Gaussian by RDP at delta."""
        if self.mechanism == "laplace":
            return float(self.epsilon)
        sketch_event, count_event = self.events()
        extra = rdp_curve(count_event)
        return plan_epsilon(sketch_event, steps=1, delta=delta, extra_rdp=extra)

    def events(self) -> tuple[LaplaceEvent | GaussianEvent, LaplaceEvent | GaussianEvent]:
        """(sketch event, count event). Laplace: eps split (1-s, s); Gaussian: RDP split (1-s, s)."""
        s = self.count_share
        if self.mechanism == "laplace":
            return LaplaceEvent(epsilon=(1 - s) * self.epsilon), LaplaceEvent(
                epsilon=s * self.epsilon
            )
        return (
            GaussianEvent(noise_multiplier=self.noise_multiplier / math.sqrt(1 - s)),
            GaussianEvent(noise_multiplier=self.noise_multiplier / math.sqrt(s)),
        )


def release_sketch(
    total: SketchSum,
    operator: SketchOperator,
    noise: SketchNoise,
    *,
    accountant: Accountant,
    rng: np.random.Generator,
    stage: str = STAGE,
) -> PrivateSketch:
    """Charge both events, THEN add noise: Laplace(L1 sens / eps) or N(0, (sigma L2 sens)^2) per coordinate.

    Add/remove neighbours: the sum's sensitivity is ``l1_sensitivity``/``l2_sensitivity``,
    the count's is 1. The two releases compose (pure eps adds; Gaussian RDP adds).
    """
    if total.fingerprint != operator.fingerprint():
        raise ValueError("the sketch sum was not made by this operator")
    sketch_event, count_event = noise.events()
    if noise.mechanism == "laplace":
        scale = l1_sensitivity(operator.signature, operator.r) / sketch_event.epsilon
        count_scale = 1.0 / count_event.epsilon
    else:
        scale = sketch_event.noise_multiplier * l2_sensitivity(operator.signature, operator.r)
        count_scale = count_event.noise_multiplier
    (re, im), count = noisy_releases(  # re then im: one complex sketch, one event
        [np.stack([total.re, total.im]), total.n], [scale, count_scale], [sketch_event, count_event],
        accountant=accountant, stage=stage, rng=rng,
    )
    privacy = {
        "mechanism": noise.mechanism,
        "neighbouring": Neighbouring.ADD_REMOVE.value,
        "sketch_event": sketch_event.to_dict(),
        "count_event": count_event.to_dict(),
        "sketch_noise_scale": scale,
        "count_noise_scale": count_scale,
        "l1_sensitivity": l1_sensitivity(operator.signature, operator.r),
        "l2_sensitivity": l2_sensitivity(operator.signature, operator.r),
    }
    return PrivateSketch(re, im, float(count), operator.alpha, total.fingerprint, privacy)


def plan_noise(
    mechanism: Mechanism,
    *,
    target_epsilon: float | None,
    noise_multiplier: float,
    delta: float,
    count_share: float = DEFAULT_COUNT_SHARE,
) -> SketchNoise:
    """Laplace: total eps = target (or 1/noise_multiplier); Gaussian: multiplier calibrated to the target."""
    if mechanism == "laplace":
        eps = target_epsilon if target_epsilon is not None else 1.0 / noise_multiplier
        return SketchNoise("laplace", epsilon=eps, count_share=count_share)
    sigma = noise_multiplier
    if target_epsilon is not None:  # the two Gaussians together are one with multiplier sigma
        sigma = sigma_for_epsilon(
            steps=1,
            delta=delta,
            target_epsilon=target_epsilon,
            event_factory=lambda s: GaussianEvent(noise_multiplier=s),
        )
    return SketchNoise("gaussian", noise_multiplier=sigma, count_share=count_share)


# ---------------------------------------------------------------- the partitioner


@dataclass(frozen=True)
class Projection:
    """Public map of 0/1 records to the space where centroids are decoded: y = (x - mean) basis.

    ``basis`` (items x dims) is None for the identity. ``lower``/``upper`` bound every y (the
    decoder's box); all of it comes from public data or data-independent randomness.
    """

    kind: str
    basis: np.ndarray | None
    mean: np.ndarray | None
    lower: np.ndarray
    upper: np.ndarray

    def sketch_operator(self, op: SketchOperator) -> SketchOperator:
        """The operator that sketches raw records as ``op`` sketches projected ones (Omega folded in)."""
        if self.basis is None:
            return op
        omega = self.basis @ op.omega
        return SketchOperator(omega, op.dither - self.mean @ omega, op.signature, op.r)

    def apply(self, records: Any) -> np.ndarray | sp.csr_matrix:
        """Projected records (dense), or the records themselves for the identity."""
        if self.basis is None:
            return records
        return np.asarray(records @ self.basis) - (self.mean @ self.basis)

    def lift(self, centres: np.ndarray) -> np.ndarray:
        """Centroids back in item space, clipped to [0, 1] (for reports and display only)."""
        if self.basis is None:
            return centres
        return np.clip(self.mean + centres @ self.basis.T, 0.0, 1.0)


def make_projection(
    n_items: int, dims: int | None, public: np.ndarray | None, rng: np.random.Generator
) -> Projection:
    """Identity (dims None or >= n_items); top principal directions of the public sample, box
    from its range; else a random orthonormal basis, box = the exact image of [0, 1]^items."""
    if dims is None or n_items <= dims:
        return Projection("none", None, None, np.zeros(n_items), np.ones(n_items))
    if public is not None:
        mean = public.mean(axis=0)
        centred = public - mean
        top = (n_items - dims, n_items - 1)  # the principal axes: top eigenvectors of the scatter
        with threadpool_limits(1, user_api="blas"):  # threads lose on a shared, busy machine
            basis = linalg.eigh(centred.T @ centred, subset_by_index=top)[1][:, ::-1]
        y = (public - mean) @ basis
        pad = 0.1 * (y.max(axis=0) - y.min(axis=0))
        return Projection("public_pca", basis, mean, y.min(axis=0) - pad, y.max(axis=0) + pad)
    basis = np.linalg.qr(rng.normal(size=(n_items, dims)))[0]
    lower, upper = np.minimum(basis, 0.0).sum(axis=0), np.maximum(basis, 0.0).sum(axis=0)
    return Projection("random", basis, np.zeros(n_items), lower, upper)


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

    def __post_init__(self) -> None:
        if self.k < 1 or self.sketch_size < 1 or self.decodes < 1:
            raise ConfigError(
                f"partition: k, sketch_size and sketch_decodes must be >= 1 "
                f"(got {self.k}, {self.sketch_size}, {self.decodes})"
            )
        if self.sigma2 is not None and not self.sigma2 > 0:
            raise ConfigError(f"partition.sketch_sigma2: must be > 0, got {self.sigma2}")
        if self.projection is not None and self.projection < 1:
            raise ConfigError(f"partition.sketch_projection: must be >= 1, got {self.projection}")

    def _public_rows(self, n_items: int) -> np.ndarray | None:
        if self.public is None:
            return None
        if self.public.n_items != n_items:
            raise DataError(
                f"{self.public.where}: public sample has {self.public.n_items} items, "
                f"data has {n_items}"
            )
        return self.public.dense(np.float64)

    def _sigma2(self, public: np.ndarray | None, proj: Projection) -> float:
        if self.sigma2 is not None:
            return float(self.sigma2)
        if public is not None:
            return float(max(np.var(proj.apply(public), axis=0).mean(), 1e-3))
        return 0.25

    def fit(
        self, data: BinaryDataset, accountant: Accountant, rng: np.random.Generator
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
        proj = make_projection(data.n_items, self.projection, public, rng)
        sigma2 = self._sigma2(public, proj)
        op = SketchOperator.draw(
            len(proj.lower),
            self.sketch_size,
            sigma2=sigma2,
            rng=rng,
            signature=self.signature,
            measurements=self.measurements,
            law=self.frequencies,
        )
        raw_op = proj.sketch_operator(op)
        released = release_sketch(
            raw_op.sum(data.records, rng), raw_op, noise, accountant=accountant, rng=rng
        )
        candidates = proj.apply(public if public is not None else random_records(data.n_items, rng))
        result = decode(
            released.normalised(),
            op,
            self.k,
            proj.lower,
            proj.upper,
            rng,
            restarts=self.decodes,
            candidates=candidates,
        )
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
            "sigma2": sigma2,
            "projection": proj.kind,
            "decoded_dims": len(proj.lower),
            "released_count": released.count,
            "weights": result.weights.tolist(),
            "relative_residual": result.residual,
        }
        return Partition(
            assignments=self.assign(data.records),
            noisy_sizes=size_shares(result.weights) * max(released.count, 0.0),
            centres=proj.lift(result.centres),
            info=info,
        )

    def assign(self, records: Any) -> np.ndarray:
        """Nearest decoded centroid for each record, in the projected space (post-processing)."""
        if self.centres_ is None or self.projection_ is None:
            raise RuntimeError("assign() needs a fitted partitioner")
        return nearest_centre(self.projection_.apply(records), self.centres_)


#: Densities of the data-independent random 0/1 records that seed CL-OMPR without a public sample.
SEED_DENSITIES = (0.01, 0.03, 0.1, 0.3, 0.5)


def random_records(n_items: int, rng: np.random.Generator, per_density: int = 50) -> np.ndarray:
    """Random 0/1 records of several densities: start points for the atom search (no public data)."""
    p = np.repeat(SEED_DENSITIES, per_density)[:, None]
    return (rng.random((len(p), n_items)) < p).astype(np.float64)


def from_config(cfg: PartitionConfig, *, public: BinaryDataset | None = None) -> SketchPartitioner:
    """The partitioner ``partition.method: sketch`` builds (make_partitioner calls this)."""
    return SketchPartitioner(
        k=cfg.k,
        sketch_size=cfg.sketch_size,
        signature=cfg.sketch_signature,
        mechanism=cfg.sketch_mechanism,
        measurements=cfg.sketch_measurements,
        noise_multiplier=cfg.noise_multiplier,
        target_epsilon=cfg.target_epsilon,
        sigma2=cfg.sketch_sigma2,
        frequencies=cfg.sketch_frequencies,
        decodes=cfg.sketch_decodes,
        projection=cfg.sketch_projection,
        public=public,
    )
