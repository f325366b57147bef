"""Thresholding-based subspace clustering (TSC; Heckel and Boelcskei 2013; paper Alg. 2): non-private.

Each point is joined to its s neighbours of largest |<x_i, x_j>| (unit-normalised rows), with
weight exp(-2 arccos |<x_i, x_j>|); the graph is made undirected and split into k parts by
spectral clustering (normalised adjacency, k leading eigenvectors, k-means on the rows). Each
part's subspace is the span of its top-q principal directions (Alg. 2 step 4 up to the choice
of spanning points), refined by a few k-plane steps.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from dpgm.clustering.subspace.distance import fit_bases, k_plane, random_bases

#: Rows per chunk of the n x n inner-product computation.
CHUNK = 2048


def default_neighbours(n: int, k: int, q: int) -> int:
    """s: about a fifth of a part's expected size, at least q + 1, below n."""
    return int(max(q + 1, min(n - 1, n // (5 * k))))


def affinity(rows: np.ndarray, neighbours: int) -> sp.csr_matrix:
    """The symmetric TSC graph: s largest |cosines| per row, weights exp(-2 arccos |cos|)."""
    norms = np.linalg.norm(rows, axis=1)
    x = rows / np.maximum(norms, 1e-12)[:, None]
    n = x.shape[0]
    s = int(min(neighbours, n - 1))
    cols = np.empty((n, s), dtype=np.int64)
    vals = np.empty((n, s))
    for start in range(0, n, CHUNK):
        block = np.abs(x[start : start + CHUNK] @ x.T)
        idx = np.arange(block.shape[0])
        block[idx, start + idx] = -1.0  # no self loops
        top = np.argpartition(-block, s - 1, axis=1)[:, :s]
        cols[start : start + CHUNK] = top
        vals[start : start + CHUNK] = np.take_along_axis(block, top, axis=1)
    weights = np.exp(-2.0 * np.arccos(np.clip(vals, 0.0, 1.0)))
    graph = sp.csr_matrix((weights.ravel(), (np.repeat(np.arange(n), s), cols.ravel())), shape=(n, n))
    return graph.maximum(graph.T).tocsr()


def spectral_labels(graph: sp.csr_matrix, k: int, rng: np.random.Generator) -> np.ndarray:
    """k parts of ``graph``: k-means on the normalised rows of the k leading eigenvectors of D^-1/2 W D^-1/2."""
    from sklearn.cluster import KMeans  # lazy: scikit-learn is imported only when TSC runs

    deg = np.asarray(graph.sum(axis=1)).ravel()
    inv = 1.0 / np.sqrt(np.maximum(deg, 1e-12))
    norm_adj = sp.diags(inv) @ graph @ sp.diags(inv)
    n = graph.shape[0]
    if n <= 4 * k + 2:
        _, vecs = np.linalg.eigh(norm_adj.toarray())
        emb = vecs[:, -k:]
    else:
        v0 = rng.random(n) + 0.5  # Lanczos start vector (ARPACK's default is uniform too)
        _, emb = eigsh(norm_adj, k=k, which="LA", v0=v0)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    seed = int(rng.integers(2**31 - 1))
    return KMeans(n_clusters=k, n_init=5, random_state=seed).fit_predict(emb)


def tsc(
    rows: np.ndarray, k: int, q: int, rng: np.random.Generator, *, neighbours: int | None = None, refine: int = 5
) -> np.ndarray:
    """TSC subspaces (k, d, q) of ``rows``; parts too small for q directions get random subspaces."""
    x = np.asarray(rows, dtype=np.float64)
    n, d = x.shape
    fallback = random_bases(k, d, q, rng)
    if n < max(k * q, k + 1):
        return fallback
    s = neighbours if neighbours is not None else default_neighbours(n, k, q)
    labels = spectral_labels(affinity(x, s), k, rng)
    bases = fit_bases(x, labels, k, q, fallback)
    return k_plane(x, bases, refine) if refine > 0 else bases
