"""The noisy Lloyd iteration shared by DP kernel k-means (paper Alg. 2) and DP Lloyd (SuLQ).

One iteration on rows z_i with ||z_i|| <= B (add/remove neighbours, docs/privacy.md):
assign each row to its nearest centre; release per part a noisy count (Gaussian, std
sigma_K, L2 sensitivity 1 over the whole count vector) and a noisy sum (Gaussian, std
sigma_K * B, sensitivity B); new centre = noisy sum / noisy count. Each iteration is charged
to the accountant as TWO ``GaussianEvent(noise_multiplier=sigma_K)`` BEFORE its release
(RDP a / sigma_K^2 per iteration; the same as one Gaussian with multiplier sigma_K / sqrt(2)).

Empty-part rule (data-independent): a part whose NOISY count is <= ``min_count`` or
``noise_floor`` keeps its previous (already released) centre; its noisy sum is drawn and
discarded. Below the noise floor a centre is mostly noise: its debiased squared norm (below)
is clipped to 0, it looks nearest to every record it points at, swallows them, drains again,
and the parts collapse into a few large ones. Every new centre is projected onto the ball of
radius B, where every true mean lies (post-processing). No centre is NaN.

Debiased assignment (post-processing; on by default): a noisy centre's squared norm
exceeds the true one by about dim (sigma_K B / count)^2, which makes noisier (smaller)
parts look far from everything and lets one part swallow the rest at small epsilon. The
nearest-centre rule uses ||c||^2 minus that bias, computed from released values only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dpgm.clustering.base import STAGE, saved_rule
from dpgm.errors import DataError
from dpgm.features.rff import RandomFourierFeatures
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon
from dpgm.privacy.clipping import Rows, clip_rows
from dpgm.privacy.events import DpEvent, GaussianEvent
from dpgm.privacy.mechanisms import gaussian_release, gaussian_releases
from dpgm.progress import stage_bar

#: Default floor on a noisy count below which a part keeps its previous centre.
DEFAULT_MIN_COUNT = 1.0
#: A part keeps its previous centre at most this many times sigma_K sqrt(dim) noisy records (``noise_floor``).
NOISE_FLOOR = 1.0

#: Rows per chunk when computing nearest centres and part sums (bounds the n x k distance
#: block and the float64 copy of the rows).
ASSIGN_CHUNK = 65536


def on_device(rows: Rows, device: str | torch.device) -> torch.Tensor:
    """Clipped rows as a dense float32 tensor on ``device`` (``partition`` statistics on a GPU: the
    nearest centres and the part sums of every pass are computed there, the noise stays on the CPU)."""
    dense = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    return torch.as_tensor(dense, dtype=torch.float32).to(device)


def nearest_centre(
    rows: Rows | torch.Tensor, centres: np.ndarray, sq_norms: np.ndarray | None = None
) -> np.ndarray:
    """Index of the nearest centre (squared L2) for every row; one matmul per chunk (on the rows'
    device when they are a tensor, ``on_device``).

    ``sq_norms`` replaces ||c_j||^2 (e.g. the debiased estimate of a noisy centre's norm).
    """
    if isinstance(rows, torch.Tensor):
        return _nearest_centre_on_device(rows, centres, sq_norms)
    c = np.asarray(centres, dtype=np.float32)
    sq = np.einsum("ij,ij->i", c, c) if sq_norms is None else np.asarray(sq_norms)
    half_sq = (0.5 * sq).astype(np.float32)
    out = np.empty(rows.shape[0], dtype=np.int64)
    for start in range(0, rows.shape[0], ASSIGN_CHUNK):
        chunk = rows[start : start + ASSIGN_CHUNK]
        scores = np.asarray(chunk @ c.T, dtype=np.float32) - half_sq  # argmax <z,c> - ||c||^2/2
        out[start : start + ASSIGN_CHUNK] = np.argmax(scores, axis=1)
    return out


def _nearest_centre_on_device(rows: torch.Tensor, centres: np.ndarray, sq_norms: np.ndarray | None) -> np.ndarray:
    c = torch.as_tensor(np.asarray(centres, dtype=np.float32), device=rows.device)
    sq = (c * c).sum(dim=1) if sq_norms is None else torch.as_tensor(np.asarray(sq_norms), device=rows.device)
    half_sq = (0.5 * sq).to(torch.float32)
    parts = [(rows[start : start + ASSIGN_CHUNK] @ c.T - half_sq).argmax(dim=1)
             for start in range(0, rows.shape[0], ASSIGN_CHUNK)]
    return torch.cat(parts).cpu().numpy() if parts else np.zeros(0, dtype=np.int64)


def part_sums(rows: Rows | torch.Tensor, assignments: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-part counts (k,) and row sums (k x dim), float64: each row is converted to float64
    before it is added (float32 sums of 200,000 rows move by 1e-2 when one row is added); on the
    rows' device when they are a tensor."""
    if isinstance(rows, torch.Tensor):
        sums = torch.zeros(k, rows.shape[1], dtype=torch.float64, device=rows.device)
        parts = torch.as_tensor(assignments, dtype=torch.int64, device=rows.device)
        for start in range(0, rows.shape[0], ASSIGN_CHUNK):
            sums.index_add_(0, parts[start : start + ASSIGN_CHUNK], rows[start : start + ASSIGN_CHUNK].double())
        return np.bincount(assignments, minlength=k).astype(np.float64), sums.cpu().numpy()
    n = rows.shape[0]
    sums = np.zeros((k, rows.shape[1]), dtype=np.float64)
    for start in range(0, n, ASSIGN_CHUNK):
        stop = min(start + ASSIGN_CHUNK, n)
        onehot = sp.csr_matrix(
            (np.ones(stop - start), (assignments[start:stop], np.arange(stop - start))),
            shape=(k, stop - start),
        )
        chunk = rows[start:stop]
        chunk = chunk.astype(np.float64) if sp.issparse(chunk) else np.asarray(chunk, np.float64)
        block = onehot @ chunk
        sums += block.toarray() if sp.issparse(block) else block
    return np.bincount(assignments, minlength=k).astype(np.float64), sums


#: One pass over the rows, a chunk at a time (records larger than memory, ``dpgm.data.chunks``).
Passes = Callable[[], Iterable[Rows]]
#: The parts of one chunk's rows (a chunk in, one part per row out).
Assign = Callable[[Rows], np.ndarray]


def passes_of(rows: Rows | Passes) -> Passes:
    """Rows held in memory are one pass of one chunk."""
    return rows if callable(rows) else lambda: (rows,)


def summed_parts(passes: Passes, assign: Assign, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``part_sums`` over one pass, each chunk's rows split by ``assign``: (counts (k,), sums (k x dim))."""
    counts, sums = np.zeros(k), None
    for chunk in passes():
        c, s = part_sums(chunk, assign(chunk), k)
        counts += c
        sums = s if sums is None else sums + s
    return counts, sums


def centred_rows(records: Rows, offset: np.ndarray | None, bound: float) -> Rows:
    """Records minus a public centre (``offset``; None: none, the records stay sparse), clipped to L2 norm
    ``bound``."""
    if offset is None:
        return clip_rows(sp.csr_matrix(records), bound)
    dense = records.toarray() if sp.issparse(records) else np.asarray(records)
    return clip_rows(dense.astype(np.float64) - offset, bound)


@saved_rule("nearest_centre")
@dataclass(frozen=True)
class NearestCentre:
    """The released centres' rule (post-processing): each record's nearest centre, its row clipped to
    ``bound`` (or, with a public ``feature_map``, its clipped features), nearness by the debiased
    squared norms ``sq_norms`` when given (module docstring)."""

    centres: np.ndarray
    sq_norms: np.ndarray | None
    bound: float
    feature_map: RandomFourierFeatures | None = None
    offset: np.ndarray | None = None  # a public centre subtracted before the clip

    def __call__(self, records: Rows) -> np.ndarray:
        rows = (centred_rows(records, self.offset, self.bound) if self.feature_map is None
                else self.feature_map.transform(records, clip=True))
        return nearest_centre(rows, self.centres, self.sq_norms)

    def state_dict(self) -> dict[str, Any]:
        """Released centres and public randomness only, as tensors: what a checkpoint may hold."""
        tensor = lambda a: None if a is None else torch.as_tensor(a)
        features = self.feature_map
        return {"centres": tensor(self.centres), "sq_norms": tensor(self.sq_norms), "bound": self.bound,
                "offset": tensor(self.offset), "feature_map": None if features is None else {
                    "frequencies": tensor(features.frequencies), "phases": tensor(features.phases),
                    "kind": features.kind, "gamma": features.gamma}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NearestCentre:
        array = lambda t: None if t is None else t.numpy()
        features = state.get("feature_map")
        return cls(array(state["centres"]), array(state["sq_norms"]), float(state["bound"]),
                   None if features is None else RandomFourierFeatures(
                       array(features["frequencies"]), array(features["phases"]), features["kind"],
                       features["gamma"]), array(state.get("offset")))


def kmeans_pp_seeds(rows: Rows, k: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy k-means++ seeding on PUBLIC rows (Arthur & Vassilvitskii 2007; 2 + ln k trials).

    Each new seed is the best of a few D^2-sampled candidates (as scikit-learn does);
    returns k public rows (k x dim) as initial centres.
    """
    n = rows.shape[0]
    if n < k:
        raise DataError(f"public sample has {n} records, fewer than k={k}")
    dense = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    dense = dense.astype(np.float64)
    sq = np.einsum("ij,ij->i", dense, dense)
    trials = 2 + int(np.log(k))
    chosen = [int(rng.integers(n))]
    best = np.maximum(sq + sq[chosen[0]] - 2.0 * dense @ dense[chosen[0]], 0.0)
    for _ in range(1, k):
        total = best.sum()
        if total > 0:
            candidates = rng.choice(n, size=trials, p=best / total)
        else:
            candidates = rng.integers(n, size=trials)
        dist = np.maximum(
            sq[candidates, None] + sq[None, :] - 2.0 * dense[candidates] @ dense.T, 0.0
        )
        updated = np.minimum(best[None, :], dist)
        pick = int(np.argmin(updated.sum(axis=1)))
        chosen.append(int(candidates[pick]))
        best = updated[pick]
    return dense[chosen].copy()


def random_unit_centres(k: int, dim: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """Data-independent initial centres: k random directions, all of norm ``radius``."""
    g = rng.normal(size=(k, dim))
    return radius * g / np.linalg.norm(g, axis=1, keepdims=True)


#: Releases per noisy Lloyd iteration: the count vector and the sum matrix.
RELEASES_PER_ITERATION = 2


def lloyd_releases(iterations: int) -> int:
    """Gaussian releases of a whole noisy Lloyd run: 2 per iteration plus the final sizes."""
    return RELEASES_PER_ITERATION * iterations + 1


def lloyd_event(sigma: float) -> GaussianEvent:
    """One release of an iteration: Gaussian with multiplier sigma_K (counts: sensitivity 1, sums: B)."""
    return GaussianEvent(noise_multiplier=sigma)


def resolve_sigma(
    noise_multiplier: float,
    target_epsilon: float | None,
    make_event: Callable[[float], DpEvent],
    releases: int,
    delta: float,
) -> float:
    """sigma_K: ``noise_multiplier``, or the smallest sigma whose ``releases`` events cost <= target."""
    if target_epsilon is None:
        return float(noise_multiplier)
    return sigma_for_epsilon(
        steps=releases, delta=delta, target_epsilon=target_epsilon, event_factory=make_event
    )


def stage_epsilon(event: DpEvent, releases: int, delta: float) -> float:
    """Epsilon of ``releases`` repetitions of ``event`` alone, at ``delta``."""
    return plan_epsilon(event, steps=releases, delta=delta)


@dataclass
class NoisyLloydResult:
    """Released centres, their norm estimates, the last noisy counts, and the final assignment."""

    centres: np.ndarray
    sq_norms: np.ndarray | None
    noisy_counts: np.ndarray
    assignments: np.ndarray | None  # None for records in chunks (``NearestCentre`` is the rule)
    kept: list[list[int]] = field(default_factory=list)


def noise_floor(sigma: float, dim: int) -> float:
    """NOISE_FLOOR sigma sqrt(dim): the count where the noise in sum / count (norm sigma B sqrt(dim) / n) is B."""
    return NOISE_FLOOR * sigma * float(np.sqrt(dim))


def noisy_centres(
    noisy_sums: np.ndarray,
    noisy_counts: np.ndarray,
    previous: np.ndarray,
    previous_sq: np.ndarray,
    *,
    sigma: float,
    bound: float,
    min_count: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres from released sums/counts (post-processing only): (centres, sq-norm estimates, ok).

    Parts with noisy count <= max(min_count, ``noise_floor``) keep their previous centre. The others
    get sum / count projected onto the radius-``bound`` ball, and the estimate
    ||c||^2 - dim (sigma bound / count)^2 of their true squared norm (noise bias removed).
    """
    ok = noisy_counts > max(min_count, noise_floor(sigma, noisy_sums.shape[1]))
    centres = np.array(previous, dtype=np.float64, copy=True)
    sq = np.array(previous_sq, dtype=np.float64, copy=True)
    raw = noisy_sums[ok] / noisy_counts[ok, None]
    norms = np.linalg.norm(raw, axis=1)
    scale = np.where(norms > bound, bound / np.maximum(norms, 1e-300), 1.0)
    bias = raw.shape[1] * (sigma * bound / noisy_counts[ok]) ** 2
    centres[ok] = raw * scale[:, None]
    sq[ok] = np.clip(norms**2 - bias, 0.0, bound**2) * scale**2
    return centres, sq, ok


def noisy_lloyd_step(
    rows: Rows | Passes,
    centres: np.ndarray,
    sq_norms: np.ndarray | None,
    *,
    sigma: float,
    bound: float,
    accountant: Accountant,
    rng: np.random.Generator,
    min_count: float = DEFAULT_MIN_COUNT,
    assignments: Assign | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """One noisy Lloyd iteration (Alg. 2 lines 9-12): charge, then release counts and sums.

    ``rows``: the rows, or a function giving one pass over them in chunks (``Passes``).
    ``assignments`` (data-independent, e.g. a random partition: an array, or a chunk's rows in and
    their parts out) replaces the nearest-centre step. Returns (new centres, their sq-norm estimates,
    noisy counts, parts that kept their centre).
    """
    k = centres.shape[0]
    if assignments is None:
        assignments = lambda chunk: nearest_centre(chunk, centres, sq_norms)
    elif not callable(assignments):  # one array for rows held in memory
        assignments = lambda chunk, fixed=assignments: fixed
    counts, sums = summed_parts(passes_of(rows), assignments, k)
    noisy_counts, noisy_sums = gaussian_releases(
        [counts, sums], [1.0, bound], noise_multiplier=sigma, accountant=accountant, stage=STAGE, rng=rng
    )
    previous_sq = np.einsum("ij,ij->i", centres, centres) if sq_norms is None else sq_norms
    new, new_sq, ok = noisy_centres(
        noisy_sums,
        noisy_counts,
        centres,
        previous_sq,
        sigma=sigma,
        bound=bound,
        min_count=min_count,
    )
    return new, new_sq, noisy_counts, [int(j) for j in np.flatnonzero(~ok)]


def noisy_lloyd(
    rows: Rows | Passes,
    init_centres: np.ndarray,
    *,
    iterations: int,
    sigma: float,
    bound: float,
    accountant: Accountant,
    rng: np.random.Generator,
    min_count: float = DEFAULT_MIN_COUNT,
    debias: bool = True,
    first_assignments: Assign | np.ndarray | None = None,
) -> NoisyLloydResult:
    """T noisy Lloyd iterations from public/data-independent ``init_centres`` (paper Alg. 2).

    ``rows`` may be a function giving one pass over them in chunks (records larger than memory):
    then no assignment array is kept (``NearestCentre`` of the result is the rule).
    ``first_assignments`` (data-independent) replaces the first nearest-centre step; then
    ``init_centres`` only serve parts whose first noisy count is below the floor.
    ``rows`` must already satisfy ||row|| <= bound. With ``debias`` the nearest-centre rule
    uses the bias-corrected squared norms of the noisy centres (else the plain ones, as the
    paper). The records are then assigned to the last released centres and the sizes of THOSE
    parts are released as one more noisy count vector (charged): the last iteration's counts
    describe the previous assignment, and when noisy centres move they describe other parts
    (a part released as 140,000 records could hold 38). ``lloyd_releases(T)`` releases in all.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    accountant.refuse_unless_affordable(STAGE, lloyd_event(sigma), count=lloyd_releases(iterations))
    centres = np.asarray(init_centres, dtype=np.float64)
    sq_norms = None
    kept: list[list[int]] = []
    bar = stage_bar("partition: noisy Lloyd", iterations, unit="iter")
    for t in range(iterations):
        centres, new_sq, _, kept_now = noisy_lloyd_step(
            rows,
            centres,
            sq_norms,
            sigma=sigma,
            bound=bound,
            accountant=accountant,
            rng=rng,
            min_count=min_count,
            assignments=first_assignments if t == 0 else None,
        )
        sq_norms = new_sq if debias else None
        kept.append(kept_now)
        bar.advance()
    bar.close()
    k = centres.shape[0]
    if callable(rows):  # records in chunks: the assignment is the rule, applied where a chunk is read
        counts = summed_parts(rows, lambda c: nearest_centre(c, centres, sq_norms), k)[0].astype(np.int64)
        assignments = None
    else:
        assignments = nearest_centre(rows, centres, sq_norms)
        counts = np.bincount(assignments, minlength=k)
    noisy_counts = gaussian_release(  # the final parts' sizes, sensitivity 1
        counts, sensitivity=1.0, noise_multiplier=sigma, accountant=accountant, stage=STAGE, rng=rng,
    )
    return NoisyLloydResult(
        centres=centres, sq_norms=sq_norms, noisy_counts=noisy_counts, assignments=assignments, kept=kept
    )
