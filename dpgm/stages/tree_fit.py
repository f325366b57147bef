"""A part's tree of items from its noisy means and its edges' noisy counts (post-processing of both releases).

Each edge's count is first read against its noise (``shrunk_counts``), then each item's frequency given its
parent follows from the two means and the edge's joint (``fit_tree``), so that the tree's item frequencies are the
noisy means exactly (docs/privacy.md, "A tree's edges read against their noise").
"""

from __future__ import annotations

import numpy as np

from dpgm.mixture_draws import MIN_ACCEPTANCE
from dpgm.models.tree import orient
from dpgm.stages.part_means import FLOOR

#: Fixed-point steps at most for a tree whose empty draws the release drops (``fit_tree``).
NONEMPTY_ITERATIONS = 200
#: Each tree edge's noisy count keeps max(0, 1 - EDGE_SHRINK sigma^2 / d^2) of its excess d over what independence
#: at the means predicts (sigma: the count's noise std; ``shrunk_counts``; 0: the counts as measured).
EDGE_SHRINK = 1.0


def shrunk_counts(edges: list[tuple[int, int]], counts: np.ndarray, size: float, means: np.ndarray,
                  count_noise: float) -> np.ndarray:
    """The edges' noisy ``counts`` pulled toward size p_u p_v, what independence at the means predicts: each count's
    excess d over it times max(0, 1 - EDGE_SHRINK sigma^2 / d^2), sigma = ``count_noise`` (the positive-part
    James-Stein factor, one observation per edge). An edge measured within its noise then reads as independent,
    and a tree at a small budget tends to independent items rather than to its noise; a strong edge keeps all but
    sigma^2 / d of its excess. Post-processing."""
    counts = np.asarray(counts, dtype=np.float64)
    if not edges or count_noise <= 0.0:
        return counts
    u, v = np.asarray(edges).T
    independent = size * means[u] * means[v]
    excess = counts - independent
    keep = np.clip(1.0 - EDGE_SHRINK * count_noise**2 / np.maximum(excess**2, 1e-300), 0.0, 1.0)
    return independent + keep * excess


def fit_tree(edges: list[tuple[int, int]], pair_counts: np.ndarray, size: float, means: np.ndarray, *,
             nonempty: bool = False, count_noise: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(parent [m], logits [m, 2]) of one part from its noisy means and the noisy counts of its edges.

    The forest is directed away from each component's lowest item. An edge's joint frequency is
    its count / size projected onto what the two means allow, [max(0, p_a + p_b - 1), min(p_a, p_b)],
    so P(b | a = 1) p_a + P(b | a = 0) (1 - p_a) = p_b: every item keeps its noisy mean.
    ``count_noise``: the counts' noise std, by which they are first shrunk (``shrunk_counts``).
    ``nonempty``: the release keeps only records holding an item (``release_min_items`` 1). As
    x_j = 1 implies a kept record, P(x_j | kept) = p_j / c with c = 1 - P(empty); so the tree is
    fitted to the means and joints times c, c = 1 - P(empty) of that tree (a fixed point), and the
    records it keeps have the measured frequencies. The iteration from c = 1 finds the largest fixed
    point; where that is below MIN_ACCEPTANCE (noisy pairs that put every item behind the root, say,
    leave only c = 0) the part's items are independent at the means instead, fitted the same way (a
    fixed point above 0 wherever the means add up to more than one), and only where that fails too is
    the tree fitted as without ``nonempty``, its kept records' frequencies then above the measured
    ones, rather than a model that almost never draws a record to keep.
    """
    joints = shrunk_counts(edges, pair_counts, size, means, count_noise) / size
    parent, cond = _fit(edges, joints, means)
    if nonempty:
        for forest, pairs in ((edges, joints), ([], joints[:0])):  # the tree, else independent items
            fit, kept = _nonempty_fit(forest, pairs, means)
            if kept >= MIN_ACCEPTANCE:
                parent, cond = fit
                break
    cond = np.clip(cond, FLOOR, 1.0 - FLOOR)
    return parent, np.log(cond) - np.log1p(-cond)


def _nonempty_fit(edges: list[tuple[int, int]], joints: np.ndarray,
                  means: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], float]:
    """(``_fit`` of the means and joints times c, c) at the largest fixed point c = 1 - P(empty), iterated from 1."""
    kept = 1.0
    for _ in range(NONEMPTY_ITERATIONS):
        fit = _fit(edges, joints * kept, means * kept)
        again = 1.0 - float(np.prod(1.0 - fit[1][:, 0]))  # P(empty): every item 0 given 0 parents
        if abs(again - kept) < 1e-9:
            break
        kept = again
    return fit, kept


def _fit(edges: list[tuple[int, int]], joints: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent [m], P(item | parent = 0 or 1) [m, 2]) from the means and the edges' joint frequencies."""
    m = means.size
    joint = {}
    for (u, v), c in zip(edges, joints):
        joint[(u, v)] = joint[(v, u)] = c
    parent = np.full(m, -1, dtype=np.int64)
    cond = np.repeat(means[:, None], 2, axis=1)
    for u, v in orient(edges, m):
        parent[v] = u
        pu, pv = means[u], means[v]
        p11 = np.clip(joint[(u, v)], max(0.0, pu + pv - 1.0), min(pu, pv))
        cond[v] = ((pv - p11) / (1.0 - pu), p11 / pu)
    return parent, cond
