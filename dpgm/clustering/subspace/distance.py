"""Subspace geometry of Wang, Wang and Singh (2015): bases, distances and the k-means subspace cost.

A set of k q-dimensional subspaces of R^d is an array of orthonormal bases, shape (k, d, q).
Distances use the projection form of Eq. (1), d(S, S') = ||U U^T - U' U'^T||_F, which equals
sqrt(2) ||sin Theta(S, S')||_F: orthogonal lines are at distance sqrt(2).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linear_sum_assignment

from dpgm.clustering.noisy_lloyd import random_unit_centres


def orthonormal(matrix: np.ndarray) -> np.ndarray:
    """An orthonormal basis (d, q) of the column span of ``matrix`` (thin QR)."""
    q, _ = np.linalg.qr(np.asarray(matrix, dtype=np.float64))
    return q


def random_bases(k: int, d: int, q: int, rng: np.random.Generator) -> np.ndarray:
    """k uniformly random q-dimensional subspaces of R^d (spans of q isotropic directions), (k, d, q).

    Data-independent: the directions come from ``random_unit_centres``, the partitioners' random start.
    """
    return np.stack([orthonormal(random_unit_centres(q, d, 1.0, rng).T) for _ in range(k)])


def top_eigvecs(matrix: np.ndarray, q: int) -> np.ndarray:
    """The q leading eigenvectors (d, q) of the symmetric part of ``matrix``."""
    sym = 0.5 * (matrix + matrix.T)
    _, vecs = np.linalg.eigh(sym)
    return vecs[:, ::-1][:, :q].copy()


def projection(basis: np.ndarray) -> np.ndarray:
    """U U^T: the orthogonal projection onto range(U); works on (..., d, q) stacks."""
    return basis @ np.swapaxes(basis, -1, -2)


def principal_angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Principal angles (radians, increasing) between range(u) and range(v) of equal dimension."""
    cosines = np.linalg.svd(u.T @ v, compute_uv=False)
    return np.arccos(np.clip(cosines, -1.0, 1.0))  # cosines decrease: angles increase


def subspace_distance(u: np.ndarray, v: np.ndarray) -> float:
    """d(S, S') = ||U U^T - V V^T||_F (paper Eq. 1), i.e. sqrt(2) ||sin Theta||_F for equal dimensions."""
    return float(np.linalg.norm(projection(u) - projection(v)))


def pair_sq_distances(us: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Squared distances ||P_i - Q_j||_F^2 = q_i + q_j - 2 ||U_i^T V_j||_F^2 for all pairs, (k, l)."""
    cross = np.einsum("adq,bdr->abqr", us, vs)
    sq = us.shape[-1] + vs.shape[-1] - 2.0 * np.einsum("abqr,abqr->ab", cross, cross)
    return np.maximum(sq, 0.0)


def wasserstein_distance(us: np.ndarray, vs: np.ndarray) -> float:
    """d_W(C, C') = min over label permutations of sqrt(sum_i d^2(S_i, S'_pi(i))) (paper Eq. 2)."""
    cost = pair_sq_distances(us, vs)
    rows, cols = linear_sum_assignment(cost)
    return float(np.sqrt(cost[rows, cols].sum()))


def permutations_matrix(k: int) -> np.ndarray:
    """All k! permutations of 0..k-1 as rows (small k only)."""
    return np.array(list(itertools.permutations(range(k))), dtype=np.int64)


def wasserstein_matrix(sets: np.ndarray) -> np.ndarray:
    """d_W between every two of m subspace sets (m, k, d, q) by enumerating the k! permutations, (m, m)."""
    m, k = sets.shape[:2]
    flat = sets.reshape(m * k, *sets.shape[2:])
    sq = pair_sq_distances(flat, flat).reshape(m, k, m, k).transpose(0, 2, 1, 3)  # (m, m, k, k)
    perms = permutations_matrix(k)
    totals = sq[:, :, np.arange(k)[None, :], perms].sum(axis=-1)  # (m, m, k!)
    return np.sqrt(totals.min(axis=-1))


def residuals(rows: np.ndarray, bases: np.ndarray) -> np.ndarray:
    """Squared distances d^2(x_i, S_j) = ||x_i||^2 - ||U_j^T x_i||^2 of every row to every subspace, (n, k)."""
    x = np.asarray(rows, dtype=np.float64)
    proj = np.einsum("nd,kdq->nkq", x, bases)
    sq = np.einsum("nd,nd->n", x, x)[:, None] - np.einsum("nkq,nkq->nk", proj, proj)
    return np.maximum(sq, 0.0)


def nearest_subspace(rows: np.ndarray, bases: np.ndarray) -> np.ndarray:
    """Index of the nearest subspace of every row (the k-plane assignment step)."""
    return np.argmin(residuals(rows, bases), axis=1)


def kmeans_cost(rows: np.ndarray, bases: np.ndarray) -> float:
    """The k-means subspace cost (1/n) sum_i min_j d^2(x_i, S_j) (paper Eq. 3)."""
    return float(residuals(rows, bases).min(axis=1).mean())


def fit_bases(rows: np.ndarray, labels: np.ndarray, k: int, q: int, fallback: np.ndarray) -> np.ndarray:
    """Per part the top-q eigenvectors of its second moment; ``fallback[j]`` for parts with < q rows."""
    out = np.array(fallback, dtype=np.float64, copy=True)
    for j in range(k):
        part = rows[labels == j]
        if part.shape[0] >= q:
            out[j] = top_eigvecs(part.T @ part, q)
    return out


def k_plane(rows: np.ndarray, init: np.ndarray, iterations: int = 20) -> np.ndarray:
    """Non-private k-plane clustering (Bradley and Mangasarian 2000) from ``init`` bases."""
    bases = np.array(init, dtype=np.float64, copy=True)
    k, _, q = bases.shape
    labels = nearest_subspace(rows, bases)
    for _ in range(iterations):
        bases = fit_bases(rows, labels, k, q, bases)
        new = nearest_subspace(rows, bases)
        if np.array_equal(new, labels):
            break
        labels = new
    return bases
