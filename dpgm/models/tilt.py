"""A maximum-entropy tilt of a sampler towards measured item and pair frequencies.

Given draws x from a model q and target frequencies t of features f(x) (every item, and the
product x_a x_b of each measured pair), the distribution closest to q in KL divergence whose
feature means are t is q(x) exp(theta . f(x)) / Z (Csiszar 1975; the raking of survey weights).
``fit_tilt`` finds theta on a pool of draws by minimising the convex dual
log mean exp(F theta) - theta . t + theta . (ridge theta) / 2 (the ridge keeps theta finite when noisy
targets lie outside what the pool can reach; per feature, the primal pays gap^2 / (2 ridge) for missing a
target, so a noisier target gets a larger ridge); ``tilt_weights`` gives each draw of the pool its
weight, and ``resample`` resamples the pool by them, balanced (``balance``; the release fits each
chunk's own pool, dpgm/release.py: a theta fitted on one pool over-weights another's rare draws). ``length_problem``
poses the tilt of a mixture's draws to a noisy histogram of record lengths that keeps what the models
measured: each part's share, items and tree pairs. Post-processing of the model and of the measured
frequencies: nothing here reads the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from dpgm.models.balance import balance

#: L2 penalty on theta in the dual, small beside the frequencies' noise (a larger one biased every target).
RIDGE = 1e-5
#: A measured pair's penalty is this times its noise (``item_pairs.pair_noise``, per record of the pool): 1 is the
#: posterior of the noisy counts with the models' draws worth as many records as the release; below 1 the pairs
#: weigh more, as the models are themselves fitted to noisy statistics.
PAIR_RIDGE = 0.03
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
    (what two items of those frequencies allow; the projection of ``tree_fit.fit_tree``)."""
    p = np.clip(np.asarray(means, dtype=np.float64), 0.0, 1.0)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        return p
    pa, pb = p[edges[:, 0]], p[edges[:, 1]]
    pairs = np.clip(np.asarray(joints, dtype=np.float64), np.maximum(0.0, pa + pb - 1.0), np.minimum(pa, pb))
    return np.concatenate([p, pairs])


def fit_tilt(f: sp.csr_matrix, targets: np.ndarray, *, ridge: float | np.ndarray | None = None,
             start: np.ndarray | None = None) -> np.ndarray:
    """theta such that the rows of ``f`` (``features`` of a pool of draws) reweighted by exp(f . theta) have
    means ``targets``; ``ridge``: default RIDGE, or one per feature; ``start``: where the search begins (another
    pool's theta: fewer steps). A feature no row holds moves no weight: its theta stays 0 and the search runs over
    the others alone (``held_features``), which is cheaper and better conditioned (a noisy length bin the pool never
    reaches would pull its theta to target / ridge, far from every other)."""
    ridge = np.broadcast_to(np.asarray(RIDGE if ridge is None else ridge, dtype=np.float64), targets.shape)
    held = held_features(f)
    fh, goal, penalty = f[:, held], targets[held], ridge[held]
    fh_t = fh.T.tocsr()  # the gradient's product, row-major: faster than through the transpose's CSC view

    def dual(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = fh @ theta
        top = z.max()
        w = np.exp(z - top)
        total = w.sum()
        value = top + np.log(total / len(z)) - theta @ goal + 0.5 * theta @ (penalty * theta)
        return float(value), fh_t @ (w / total) - goal + penalty * theta

    result = minimize(dual, np.zeros(held.size) if start is None else start[held], jac=True, method="L-BFGS-B",
                      options={"maxiter": MAX_ITERATIONS, "gtol": TOLERANCE})
    theta = np.zeros(f.shape[1])
    theta[held] = result.x
    return theta


def held_features(f: sp.csr_matrix) -> np.ndarray:
    """The columns of ``f`` some row holds (a stored entry), ascending."""
    return np.flatnonzero(np.bincount(f.indices, minlength=f.shape[1]))


def tilt_weights(f: sp.csr_matrix, theta: np.ndarray) -> np.ndarray:
    """Each row's weight exp(f . theta), normalised to sum to 1."""
    z = f @ theta
    w = np.exp(z - z.max())
    return w / w.sum()


def resample(f: sp.csr_matrix, targets: np.ndarray, *, count: int, offset: float, start: np.ndarray | None = None,
             ridge: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(indices of ``count`` rows of ``f``, sorted, theta): the tilt of the rows to ``targets`` (``fit_tilt``), then a
    systematic resample by its weights (``systematic_picks``), balanced so that the picks' feature means are the
    weighted ones (``balance.balance``)."""
    theta = fit_tilt(f, targets, start=start, ridge=ridge)
    weights = tilt_weights(f, theta)
    return balance(f, systematic_picks(weights, count, offset), f.T @ weights), theta


def systematic_picks(weights: np.ndarray, count: int, offset: float) -> np.ndarray:
    """``count`` row indices by systematic sampling on ``weights`` from one uniform ``offset`` in [0, 1): each row
    is picked its expected number of times, rounded down or up."""
    cumulative = np.cumsum(weights)
    picks = np.searchsorted(cumulative, (offset + np.arange(count)) / count * cumulative[-1])
    return picks.clip(0, len(cumulative) - 1)


def length_problem(pool: Any, parts: np.ndarray, models: Sequence[Any], shares: np.ndarray,
                   lengths: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """(features, targets, ridge) of a tilt of a mixture's draws ``pool`` (from ``parts``, drawn by ``shares``) to
    the record-length shares ``lengths`` [0..m] that keeps each part's share, its items' frequencies and its tree's
    edges' joint frequencies: the model's exact ones where it gives them (``marginals``, ``edge_joints``), else
    the pool's. Lengths from the last one with a share up are one bin. The ridge is RIDGE but for measured pairs
    (a tree's ``pair_noise``), PAIR_RIDGE times their noise per record of the pool."""
    x = sp.csr_matrix(pool, dtype=np.float64)
    n, k = x.shape[0], len(shares)
    own = sp.csr_matrix((np.ones(n), (np.arange(n), parts)), shape=(n, k))
    columns, targets, ridges = [], [], []
    for j in range(k):
        in_j = sp.csr_matrix(x.multiply(own[:, [j]]))
        model = models[j] if j < len(models) else None
        marginals = getattr(model, "marginals", None)
        items = (shares[j] * marginals().detach().cpu().numpy().astype(np.float64) if marginals is not None
                 else np.asarray(in_j.sum(axis=0)).ravel() / n)
        columns.append(in_j)
        targets.append(items)
        ridges.append(np.full(items.size, RIDGE))
        if hasattr(model, "edge_joints"):
            edges, joints = model.edge_joints()
            columns.append(sp.csr_matrix(in_j[:, edges[:, 0]].multiply(in_j[:, edges[:, 1]])))
            targets.append(shares[j] * joints)
            noise = getattr(model, "pair_noise", None)  # target shares_j p: noise shares_j v per record
            ridges.append(np.maximum(RIDGE, PAIR_RIDGE * shares[j] * noise.cpu().numpy())
                          if noise is not None and noise.numel() else np.full(joints.size, RIDGE))
    top = max(1, int(np.flatnonzero(lengths > 0).max())) if np.any(lengths > 0) else 1
    held = np.minimum(np.diff(x.indptr), top)
    columns += [own, sp.csr_matrix((np.ones(n), (np.arange(n), held)), shape=(n, top + 1))]
    targets += [np.asarray(shares, dtype=np.float64), np.append(lengths[:top], lengths[top:].sum())]
    ridges.append(np.full(k + top + 1, RIDGE))
    return sp.hstack(columns, format="csr"), np.concatenate(targets), np.concatenate(ridges)
