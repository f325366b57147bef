"""The maximum-entropy tilt: reweighted draws reach the target item and pair frequencies, targets feasible."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.models.tilt import (
    PAIR_RIDGE,
    RIDGE,
    feature_means,
    features,
    fit_tilt,
    length_problem,
    resample,
    tilt_targets,
    tilt_weights,
)


def test_features_are_the_items_then_each_pair_product() -> None:
    x = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.uint8)
    f = features(x, np.array([[0, 1], [1, 2]]))
    assert f.toarray().tolist() == [[1, 1, 0, 1, 0], [1, 0, 1, 0, 0], [0, 1, 1, 0, 1]]
    assert features(x, np.zeros((0, 2), dtype=np.int64)).shape == (3, 3)
    with_empty = features(np.vstack([x, np.zeros((1, 3), dtype=np.uint8)]), np.array([[0, 1]]), empty=True)
    assert with_empty.toarray()[:, -1].tolist() == [0, 0, 0, 1]


def test_targets_are_projected_onto_what_the_item_frequencies_allow() -> None:
    means = np.array([0.2, 0.9, 1.3])
    edges = np.array([[0, 1], [1, 2], [0, 2]])
    t = tilt_targets(means, np.array([0.5, 0.1, -0.1]), edges)
    assert t[:3].tolist() == [0.2, 0.9, 1.0]
    # (0, 1): at most min(0.2, 0.9); (1, 2): at least 0.9 + 1 - 1; (0, 2): at least 0
    assert t[3:] == pytest.approx([0.2, 0.9, 0.2])


def test_independent_draws_tilted_to_correlated_targets_reach_them() -> None:
    """Independent items at 0.3 tilted to pairs at 0.2 (strongly coupled): the weighted means match the
    targets, and the weights normalise to 1."""
    rng = np.random.default_rng(0)
    pool = (rng.random((40_000, 4)) < 0.3).astype(np.uint8)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    targets = tilt_targets(np.full(4, 0.3), np.full(3, 0.2), edges)
    f = features(pool, edges)
    w = tilt_weights(f, fit_tilt(f, targets))
    assert w.sum() == pytest.approx(1.0)
    assert f.T @ w == pytest.approx(targets, abs=1e-4)
    # without the tilt the pairs sit at 0.09
    assert feature_means(pool, edges)[4:] == pytest.approx(0.09, abs=0.01)
    # a systematic resample of the tilted pool: the picks hold the targets within sampling error (0.003)
    picks, _ = resample(f, targets, count=20_000, offset=0.5)
    assert feature_means(pool[picks], edges) == pytest.approx(targets, abs=6e-3)


def test_targets_the_draws_already_meet_leave_the_weights_even() -> None:
    rng = np.random.default_rng(1)
    pool = (rng.random((5_000, 3)) < 0.5).astype(np.uint8)
    edges = np.array([[0, 1], [1, 2]])
    f = features(pool, edges)
    w = tilt_weights(f, fit_tilt(f, feature_means(pool, edges)))
    assert w == pytest.approx(np.full(len(pool), 1 / len(pool)), rel=1e-3)


def test_a_mixture_tilted_to_longer_records_keeps_each_parts_share_items_and_tree_pairs() -> None:
    """Two parts (independent items; a chain tree) tilted to a length histogram more spread than their draws'
    (the same mean, which the item frequencies fix): the resample follows the lengths, and the parts' shares,
    item frequencies and tree edges' joints stay the models' exact ones."""
    import torch

    from dpgm.models.independent import Independent
    from dpgm.models.tree import Tree

    m = 6
    flat = Independent(m)
    with torch.no_grad():
        flat.out.bias.fill_(float(np.log(0.3 / 0.7)))
    chain = Tree(m)
    chain.set_tree(torch.tensor([-1, 0, 1, 2, 3, 4]), torch.tensor([[-1.0, -1.0]] + [[-2.0, 1.5]] * (m - 1)))
    shares = np.array([0.6, 0.4])
    g = torch.Generator().manual_seed(0)
    n = 60_000
    parts = (torch.rand(n, generator=g) < shares[1]).long().numpy()
    pool = np.where(parts[:, None] == 0, flat.sample(n, g).numpy(), chain.sample(n, g).numpy()).astype(np.uint8)
    drawn = np.bincount(pool.sum(axis=1), minlength=m + 1) / n
    mean = drawn @ np.arange(m + 1)  # the items' frequencies fix it: the target spreads the lengths around it
    spread = np.zeros(m + 1)
    spread[[0, 5]] = 1 - mean / 5, mean / 5
    lengths = 0.7 * drawn + 0.3 * spread
    f, targets, ridge = length_problem(pool, parts, [flat, chain], shares, lengths)
    assert np.array_equal(ridge, np.full(targets.size, RIDGE))  # no measured pairs: the ridge of every target
    picks, _ = resample(f, targets, count=20_000, offset=0.5, ridge=ridge)
    kept, kept_parts = pool[picks], parts[picks]
    got = np.bincount(kept.sum(axis=1), minlength=m + 1) / len(kept)
    assert np.abs(got - lengths).max() < 0.01 < np.abs(drawn - lengths).max()
    assert np.bincount(kept_parts, minlength=2) / len(kept) == pytest.approx(shares, abs=0.01)
    for j, model in enumerate((flat, chain)):
        mine = kept[kept_parts == j]
        # balanced picks: within 0.002, where a plain resample's sampling error alone is about 0.004 per item
        assert np.abs(mine.mean(axis=0) - model.marginals().detach().numpy()).max() < 0.002
    edges, joints = chain.edge_joints()
    mine = kept[kept_parts == 1]
    assert np.abs((mine[:, edges[:, 0]] * mine[:, edges[:, 1]]).mean(axis=0) - joints).max() < 0.002


def test_a_noisier_target_is_followed_less() -> None:
    """Per feature, the primal pays gap^2 / (2 ridge): a tiny ridge meets the target, a large one stays near the
    pool's own mean."""
    rng = np.random.default_rng(0)
    pool = (rng.random((20_000, 3)) < 0.3).astype(np.float64)
    f = features(pool, np.zeros((0, 2), dtype=np.int64))
    targets = np.array([0.4, 0.4, 0.3])
    exact = tilt_weights(f, fit_tilt(f, targets, ridge=np.array([1e-7, 1.0, 1e-7]))) @ pool
    assert exact[0] == pytest.approx(0.4, abs=1e-3) and exact[1] == pytest.approx(pool[:, 1].mean(), abs=0.02)


def test_measured_pairs_get_a_ridge_from_their_noise() -> None:
    """length_problem: a tree's measured pairs get PAIR_RIDGE x its share x their noise, every other target RIDGE."""
    import torch

    from dpgm.models.tree import Tree

    m = 4
    tree = Tree(m)
    a, b = np.triu_indices(m, 1)
    noise = np.linspace(1e-3, 6e-3, a.size)
    tree.set_tree(torch.full((m,), -1), torch.zeros(m, 2), np.stack([a, b], axis=1), np.full(a.size, 0.2), noise)
    pool = (np.random.default_rng(1).random((1_000, m)) < 0.5).astype(np.float64)
    shares = np.array([0.25, 0.75])
    parts = np.repeat([0, 1], [250, 750])
    _, targets, ridge = length_problem(pool, parts, [Tree(m), tree], shares, np.full(m + 1, 1 / (m + 1)))
    first = m + m  # part 0: items (a forest of roots: no edge); part 1: items, then its measured pairs
    assert ridge[first:first + a.size] == pytest.approx(PAIR_RIDGE * 0.75 * noise)
    assert np.all(np.delete(ridge, np.arange(first, first + a.size)) == RIDGE) and ridge.size == targets.size


def test_a_feature_no_row_holds_leaves_the_weights_of_the_others_and_theta_zero() -> None:
    """A target on a feature the pool never holds (a noisy length bin no draw reaches) cannot move any weight:
    the fit leaves its theta at 0, and the weights are the optimum of the full dual, which solved directly puts
    that theta at target / ridge and the others where the fit puts them."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    pool = (rng.random((3_000, 4)) < rng.uniform(0.1, 0.5, 4)).astype(np.uint8)
    edges = np.array([[0, 1], [2, 3]])
    f = features(np.hstack([pool, np.zeros((len(pool), 1), dtype=np.uint8)]), edges)
    targets = np.insert(feature_means(pool, edges), 4, 0.02)  # 5 items (the 5th never held), then the 2 pairs
    targets[0] += 0.02
    theta = fit_tilt(f, targets)
    assert theta[4] == 0.0
    dense = f.toarray()

    def dual(t: np.ndarray) -> tuple[float, np.ndarray]:
        z = dense @ t
        w = np.exp(z - z.max())
        return (z.max() + np.log(w.mean()) - t @ targets + 0.5 * RIDGE * t @ t,
                dense.T @ (w / w.sum()) - targets + RIDGE * t)

    full = minimize(dual, np.zeros(f.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 5_000, "gtol": 1e-10})
    assert full.x[4] == pytest.approx(targets[4] / RIDGE, rel=1e-3)
    assert tilt_weights(f, theta) == pytest.approx(tilt_weights(f, full.x), rel=1e-4)
