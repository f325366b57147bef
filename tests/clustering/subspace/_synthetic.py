"""Small unions of subspaces for the subspace clustering tests."""

from __future__ import annotations

import numpy as np


def coordinate_union(n: int = 600, d: int = 6, q: int = 2, noise: float = 0.01, seed: int = 0):
    """(rows, truth bases (3, d, q), labels): subspace j spans coordinates j*q..(j+1)*q-1 (orthogonal)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((3, d, q))
    for j in range(3):
        truth[j, j * q : (j + 1) * q, :] = np.eye(q)
    labels = np.arange(n) % 3
    y = rng.normal(size=(n, q))
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    rows = np.einsum("ndq,nq->nd", truth[labels], y) + noise * rng.normal(size=(n, d))
    rows /= np.maximum(1.0, np.linalg.norm(rows, axis=1, keepdims=True))
    return rows, truth, labels
