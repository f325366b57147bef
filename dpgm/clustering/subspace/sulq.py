"""SuLQ k-plane (paper Sec. 5 and App. E): k-plane iterations on noisy counts and second moments.

Rows are clipped to a public L2 radius r. Each iteration assigns every row to its nearest current
subspace, then releases per part a noisy count (L2 sensitivity 1 over the count vector) and a
noisy second moment sum x x^T (sensitivity r^2 in Frobenius norm over the k moments), both by
``gaussian_releases`` with one multiplier: TWO Gaussian releases per iteration. Each new subspace
is the top-q eigenvectors of its noisy moment; a part whose noisy count is <= ``min_count`` keeps
its previous subspace. The final sizes of the parts of the last subspaces are one more release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.clustering.base import STAGE
from dpgm.clustering.noisy_lloyd import Passes, lloyd_event, lloyd_releases, passes_of
from dpgm.clustering.subspace.distance import nearest_subspace, top_eigvecs
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import gaussian_release, gaussian_releases


@dataclass
class SulqResult:
    """Released subspaces (k, d, q), final noisy part sizes, and the final (post-processed) assignment
    (None for rows in chunks: the nearest released subspace is the rule)."""

    bases: np.ndarray
    noisy_sizes: np.ndarray
    assignments: np.ndarray | None


def sulq_releases(iterations: int) -> int:
    """Gaussian releases of a SuLQ k-plane run: 2 per iteration plus the final sizes."""
    return lloyd_releases(iterations)


def part_moments(rows: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-part counts (k,), integers, and second-moment sums sum x x^T (k, d, d), float64."""
    d = rows.shape[1]
    counts = np.bincount(labels, minlength=k)
    moments = np.zeros((k, d, d))
    for j in range(k):
        part = rows[labels == j]
        moments[j] = part.T @ part
    return counts, moments


def sulq_step(
    rows: np.ndarray | Passes,
    bases: np.ndarray,
    *,
    sigma: float,
    radius: float,
    min_count: float,
    accountant: Accountant,
    rng: np.random.Generator,
) -> np.ndarray:
    """One SuLQ k-plane iteration: assign, charge and release counts and moments, re-fit the subspaces."""
    k, _, q = bases.shape
    counts, moments = (sum(parts) for parts in zip(*(part_moments(chunk, nearest_subspace(chunk, bases), k)
                                                    for chunk in passes_of(rows)())))
    noisy_counts, noisy_moments = gaussian_releases(
        [counts, moments], [1.0, radius**2], noise_multiplier=sigma, accountant=accountant, stage=STAGE, rng=rng
    )
    new = np.array(bases, copy=True)
    for j in np.flatnonzero(noisy_counts > min_count):
        new[j] = top_eigvecs(noisy_moments[j], q)
    return new


def sulq_k_plane(
    rows: np.ndarray | Passes,
    init: np.ndarray,
    *,
    iterations: int,
    sigma: float,
    radius: float,
    accountant: Accountant,
    rng: np.random.Generator,
    min_count: float = 1.0,
) -> SulqResult:
    """T SuLQ k-plane iterations from data-independent ``init`` bases; rows must satisfy ||x|| <= radius
    (``rows`` may be a function giving one pass over them in chunks: then no assignment is kept)."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    accountant.refuse_unless_affordable(STAGE, lloyd_event(sigma), count=sulq_releases(iterations))
    bases = np.asarray(init, dtype=np.float64)
    for _ in range(iterations):
        bases = sulq_step(rows, bases, sigma=sigma, radius=radius, min_count=min_count,
                          accountant=accountant, rng=rng)
    counts = sum(np.bincount(nearest_subspace(chunk, bases), minlength=bases.shape[0]) for chunk in passes_of(rows)())
    sizes = gaussian_release(counts, sensitivity=1.0, noise_multiplier=sigma, accountant=accountant, stage=STAGE,
                             rng=rng)
    return SulqResult(bases=bases, noisy_sizes=sizes,
                      assignments=None if callable(rows) else nearest_subspace(rows, bases))
