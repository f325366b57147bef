"""Clustering metrics: unsupervised accuracy (paper section 6, ACC) and the k-means objective."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from dpgm.errors import DataError


def _as_int_vector(values: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"{name} must be a 1-d array, got shape {arr.shape}")
    if arr.size and (arr.dtype.kind not in "iub" or arr.min() < 0):
        raise DataError(f"{name} must hold non-negative integers")
    return arr.astype(np.int64, copy=False)


def contingency(labels: np.ndarray, assignments: np.ndarray) -> np.ndarray:
    """Counts table[part, label]: how many records of each label fell in each part."""
    labels = _as_int_vector(labels, "labels")
    parts = _as_int_vector(assignments, "assignments")
    if labels.shape != parts.shape:
        raise DataError(f"{labels.size} labels for {parts.size} assignments")
    n_parts = int(parts.max()) + 1 if parts.size else 0
    n_labels = int(labels.max()) + 1 if labels.size else 0
    table = np.zeros((n_parts, n_labels), dtype=np.int64)
    np.add.at(table, (parts, labels), 1)
    return table


def clustering_accuracy(labels: np.ndarray, assignments: np.ndarray) -> float:
    """ACC = max over one-to-one maps u of |{x : label(x) = u(part(x))}| / n (Hungarian algorithm).

    Works when the numbers of parts and labels differ (unmatched parts count as errors).
    """
    table = contingency(labels, assignments)
    if table.size == 0:
        return 0.0
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / table.sum())


def kmeans_objective(
    x: np.ndarray | sp.spmatrix,
    *,
    assignments: np.ndarray | None = None,
    centres: np.ndarray | None = None,
) -> float:
    """Sum over rows of ||x_i - c_{a(i)}||^2.

    With only ``centres``, each row goes to its nearest centre; with only ``assignments``,
    the centres are the part means; with both, those are used as given.
    """
    if assignments is None and centres is None:
        raise ValueError("kmeans_objective needs assignments, centres, or both")
    x_sq = (
        np.asarray(x.multiply(x).sum(axis=1)).ravel()
        if sp.issparse(x)
        else np.einsum("ij,ij->i", x, x)
    )
    x_sq = x_sq.astype(np.float64)
    if centres is None:
        parts = _as_int_vector(assignments, "assignments")
        k = int(parts.max()) + 1
        onehot = sp.csr_matrix(
            (np.ones(parts.size), (parts, np.arange(parts.size))), shape=(k, parts.size)
        )
        sums = onehot @ x
        sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums, dtype=np.float64)
        counts = np.bincount(parts, minlength=k).astype(np.float64)
        centres = sums / np.maximum(counts, 1.0)[:, None]
    centres = np.asarray(centres, dtype=np.float64)
    cross = np.asarray(x @ centres.T, dtype=np.float64)
    dist = x_sq[:, None] - 2.0 * cross + np.einsum("ij,ij->i", centres, centres)[None, :]
    if assignments is None:
        best = dist.min(axis=1)
    else:
        best = dist[np.arange(dist.shape[0]), _as_int_vector(assignments, "assignments")]
    return float(np.maximum(best, 0.0).sum())
