"""The sample-aggregate framework with smooth sensitivity (Nissim et al. 2007; paper Alg. 1).

Records fall into m disjoint blocks (each record's block drawn independently, so adding or removing
one record changes one block); a non-private solver (TSC) clusters each block; the m outputs are
aggregated by the centre of attention g(B) = s_i*, i* = argmin_i r_i(t0), in the Wasserstein metric
d_W (Eq. 2) on projection matrices. Noise: Gaussian of std c S(B) on the k d x d projection matrices of
g(B) (listed in a random order), S(B) = 2 max_k rho(t0 + (k+1) s) e^(-beta k) the paper's beta-smooth
bound with s = sqrt(m), t0 = (m + s)/2 + 1 and beta = epsilon / (4 (D + ln(2/delta))) (capped), D = k d^2. The
multiplier c is calibrated by the accountant (``SmoothSensitivityGaussianEvent``: Renyi divergence of
Gaussians whose scales differ by at most e^beta), not by the paper's alpha, which is looser.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpgm.clustering.base import STAGE
from dpgm.clustering.subspace.distance import projection, top_eigvecs, wasserstein_matrix
from dpgm.clustering.subspace.tsc import tsc
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_epsilon
from dpgm.privacy.events import SmoothSensitivityGaussianEvent
from dpgm.privacy.mechanisms import smooth_sensitivity_release

#: A non-private solver: (rows, k, q, rng) -> bases (k, d, q).
Solver = Callable[[np.ndarray, int, int, np.random.Generator], np.ndarray]


@dataclass
class AggregateResult:
    """Released subspaces (k, d, q) and the public noise parameters (the smooth bound, computed from
    the records, is not kept: it is never released)."""

    bases: np.ndarray
    noise_multiplier: float
    beta: float


def output_dim(k: int, d: int) -> int:
    """D: coordinates of the noisy output, k projection matrices of d x d entries."""
    return k * d * d


def diameter(k: int, d: int, q: int) -> float:
    """Lambda: the largest d_W between two sets of k q-dimensional subspaces of R^d."""
    return math.sqrt(k * 2.0 * min(q, d - q))


#: Largest beta used: a beta-smooth bound is also valid for any larger beta, and beyond ln(2)/2 the
#: Renyi divergence of the two noise scales is infinite already at order 2.
MAX_BETA = 0.3


def smooth_beta(epsilon: float, delta: float, dim: int) -> float:
    """beta = epsilon / (4 (D + ln(2 / delta))) (Alg. 1 line 2), at most MAX_BETA."""
    return min(float(epsilon) / (4.0 * (dim + math.log(2.0 / delta))), MAX_BETA)


def smooth_event_factory(beta: float, dim: int) -> Callable[[float], SmoothSensitivityGaussianEvent]:
    """Events of the smooth-sensitivity Gaussian release at multiplier c (for calibration)."""
    return lambda c: SmoothSensitivityGaussianEvent(noise_multiplier=c, beta=beta, dim=dim)


def block_outputs(rows: np.ndarray, m: int, k: int, q: int, solver: Solver, rng: np.random.Generator) -> np.ndarray:
    """Solve each of m disjoint random blocks (Alg. 1 lines 3-4): outputs (m, k, d, q)."""
    blocks = rng.integers(m, size=rows.shape[0])
    return np.stack([solver(rows[blocks == b], k, q, rng) for b in range(m)])


def neighbour_distances(dist: np.ndarray) -> np.ndarray:
    """Row i: distances from s_i to the others in increasing order, so r_i(t) is column t - 1."""
    m = dist.shape[0]
    off = dist[~np.eye(m, dtype=bool)].reshape(m, m - 1)
    return np.sort(off, axis=1)


def rho(sorted_d: np.ndarray, t: int, count: int, lam: float) -> float:
    """rho(t): the mean of the ``count`` smallest r_i(t); Lambda once t exceeds the m - 1 neighbours."""
    if t > sorted_d.shape[1] or t < 1:
        return lam
    col = np.sort(np.minimum(sorted_d[:, t - 1], lam))
    return float(col[: max(1, min(count, col.size))].mean())


def smooth_bound(sorted_d: np.ndarray, s: float, beta: float, lam: float) -> float:
    """S(B) = 2 max_k rho(t0 + (k+1) s) e^(-beta k) (Alg. 1 line 6); t rounded up, rho = Lambda past m - 1."""
    m = sorted_d.shape[0]
    t0 = math.ceil((m + s) / 2.0) + 1
    count = math.floor(s / beta)
    best, k = 0.0, 0
    while True:
        t = math.ceil(t0 + (k + 1) * s)
        best = max(best, rho(sorted_d, t, count, lam) * math.exp(-beta * k))
        if t > m - 1:
            return 2.0 * best
        k += 1


def centre_of_attention(sorted_d: np.ndarray, s: float) -> int:
    """i* = argmin_i r_i(t0) (Alg. 1 line 5)."""
    m = sorted_d.shape[0]
    t0 = min(math.ceil((m + s) / 2.0) + 1, m - 1)
    return int(np.argmin(sorted_d[:, t0 - 1]))


def sample_aggregate(
    rows: np.ndarray,
    *,
    k: int,
    q: int,
    blocks: int,
    epsilon: float,
    accountant: Accountant,
    rng: np.random.Generator,
    solver: Solver = tsc,
) -> AggregateResult:
    """Alg. 1 on ``rows``: ONE SmoothSensitivityGaussianEvent, calibrated to ``epsilon`` at the accountant's delta."""
    if blocks < 3:
        raise ValueError(f"sample-aggregate needs at least 3 blocks, got {blocks}")
    d = rows.shape[1]
    dim, lam = output_dim(k, d), diameter(k, d, q)
    beta = smooth_beta(epsilon, accountant.delta, dim)
    sigma = sigma_for_epsilon(steps=1, delta=accountant.delta, target_epsilon=epsilon,
                              event_factory=smooth_event_factory(beta, dim))
    accountant.refuse_unless_affordable(STAGE, smooth_event_factory(beta, dim)(sigma))
    outputs = block_outputs(rows, blocks, k, q, solver, rng)
    sorted_d = neighbour_distances(wasserstein_matrix(outputs))
    s = math.sqrt(blocks)
    bound = smooth_bound(sorted_d, s, beta, lam)
    chosen = outputs[centre_of_attention(sorted_d, s)][rng.permutation(k)]
    noisy = smooth_sensitivity_release(projection(chosen), smooth_bound=bound, noise_multiplier=sigma, beta=beta,
                                       accountant=accountant, stage=STAGE, rng=rng)
    bases = np.stack([top_eigvecs(p, q) for p in noisy])
    return AggregateResult(bases=bases, noise_multiplier=sigma, beta=beta)
