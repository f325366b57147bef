"""A maximum-entropy tilt of a sampler towards measured item and pair frequencies.

Given draws x from a model q and target frequencies t of features f(x) (every item, and the
product x_a x_b of each measured pair), the distribution closest to q in KL divergence whose
feature means are t is q(x) exp(theta . f(x)) / Z (Csiszar 1975; the raking of survey weights).
``fit_tilt`` finds theta on a pool of draws by minimising the convex dual
log mean exp(F theta) - theta . t + ridge |theta|^2 / 2 (the ridge keeps theta finite when noisy
targets lie outside what the pool can reach); ``tilt_weights`` gives each draw of the pool its
weight, and ``tilted_picks`` resamples the pool by them (the release fits each chunk's own pool,
dpgm/release.py: a theta fitted on one pool over-weights another's rare draws). Post-processing of
the model and of the measured frequencies: nothing here reads the records.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

#: L2 penalty on theta in the dual, small beside the frequencies' noise (a larger one biased every target).
RIDGE = 1e-5
#: L-BFGS iterations at most, and the gradient size (largest feature-mean gap) that ends them.
MAX_ITERATIONS, TOLERANCE = 500, 1e-7


def features(records: Any, edges: np.ndarray, *, empty: bool = False) -> sp.csr_matrix:
    """[n, m + e (+ 1)] sparse: the records' items, then x_a x_b for each pair (a, b) of ``edges`` [e, 2],
    then (``empty``) whether the record holds no item. Sparse, as records hold few items: each fit step
    costs the items held, not n x m."""
    x = sp.csr_matrix(records, dtype=np.float64)
    columns = [x]
    if len(edges):
        columns.append(x[:, edges[:, 0]].multiply(x[:, edges[:, 1]]))
    if empty:
        columns.append(sp.csr_matrix((np.diff(x.indptr) == 0).astype(np.float64)[:, None]))
    return sp.hstack(columns, format="csr") if len(columns) > 1 else x


def feature_means(records: Any, edges: np.ndarray, *, empty: bool = False) -> np.ndarray:
    """The plain means of ``features`` over the records (what the tilt is fitted to match)."""
    return np.asarray(features(records, edges, empty=empty).mean(axis=0)).ravel()


def tilt_targets(means: np.ndarray, joints: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Feasible targets: the item frequencies in [0, 1], each pair's in [max(0, p_a + p_b - 1), min(p_a, p_b)]
    (what two items of those frequencies allow; the projection of ``item_pairs.fit_tree``)."""
    p = np.clip(np.asarray(means, dtype=np.float64), 0.0, 1.0)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        return p
    pa, pb = p[edges[:, 0]], p[edges[:, 1]]
    pairs = np.clip(np.asarray(joints, dtype=np.float64), np.maximum(0.0, pa + pb - 1.0), np.minimum(pa, pb))
    return np.concatenate([p, pairs])


def fit_tilt(f: sp.csr_matrix, targets: np.ndarray, *, ridge: float = RIDGE,
             start: np.ndarray | None = None) -> np.ndarray:
    """theta such that the rows of ``f`` (``features`` of a pool of draws) reweighted by exp(f . theta) have
    means ``targets``; ``start``: where the search begins (another pool's theta: fewer steps)."""

    def dual(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = f @ theta
        top = z.max()
        w = np.exp(z - top)
        total = w.sum()
        value = top + np.log(total / len(z)) - theta @ targets + 0.5 * ridge * theta @ theta
        return float(value), f.T @ (w / total) - targets + ridge * theta

    result = minimize(dual, np.zeros(f.shape[1]) if start is None else start, jac=True, method="L-BFGS-B",
                      options={"maxiter": MAX_ITERATIONS, "gtol": TOLERANCE})
    return result.x


def tilt_weights(f: sp.csr_matrix, theta: np.ndarray) -> np.ndarray:
    """Each row's weight exp(f . theta), normalised to sum to 1."""
    z = f @ theta
    w = np.exp(z - z.max())
    return w / w.sum()


def tilted_picks(pool: Any, edges: np.ndarray, targets: np.ndarray, *, count: int, offset: float,
                 empty: bool = False, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(indices of ``count`` pool records, theta): the pool's tilt to ``targets`` (``fit_tilt`` from ``start``),
    then a systematic resample by its weights (one uniform ``offset`` in [0, 1): each record is picked
    its expected number of times, rounded down or up)."""
    f = features(pool, edges, empty=empty)
    theta = fit_tilt(f, targets, start=start)
    cumulative = np.cumsum(tilt_weights(f, theta))
    picks = np.searchsorted(cumulative, (offset + np.arange(count)) / count * cumulative[-1])
    return picks.clip(0, len(cumulative) - 1), theta
