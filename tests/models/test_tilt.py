"""The maximum-entropy tilt: reweighted draws reach the target item and pair frequencies, targets feasible."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.models.tilt import feature_means, features, fit_tilt, tilt_targets, tilt_weights, tilted_picks


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
    picks, _ = tilted_picks(pool, edges, targets, count=20_000, offset=0.5)
    assert feature_means(pool[picks], edges) == pytest.approx(targets, abs=6e-3)


def test_targets_the_draws_already_meet_leave_the_weights_even() -> None:
    rng = np.random.default_rng(1)
    pool = (rng.random((5_000, 3)) < 0.5).astype(np.uint8)
    edges = np.array([[0, 1], [1, 2]])
    f = features(pool, edges)
    w = tilt_weights(f, fit_tilt(f, feature_means(pool, edges)))
    assert w == pytest.approx(np.full(len(pool), 1 / len(pool)), rel=1e-3)
