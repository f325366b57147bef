"""benchmarks/dependence.py: the item-dependence statistics beside what groups bought each dataset."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from tests._benchmarks import load_benchmark

dependence = load_benchmark("dependence")


def test_pair_information_is_sklearns_mutual_information():
    rng = np.random.default_rng(0)
    x = (rng.random((500, 4)) < [0.2, 0.5, 0.7, 0.1]).astype(float)
    x[:, 3] = np.maximum(x[:, 3], x[:, 0] * (rng.random(500) < 0.8))  # item 3 leans on item 0
    info = dependence.pair_information(x)
    for i, j in [(0, 3), (1, 2), (2, 3)]:
        assert info[i, j] == pytest.approx(mutual_info_score(x[:, i], x[:, j]), rel=1e-6, abs=1e-9)
    assert np.allclose(info, info.T) and np.all(np.diag(info) == 0)


def test_independent_items_score_low_and_two_clusters_high():
    rng = np.random.default_rng(1)
    m, n = 20, 4000
    independent = (rng.random((n, m)) < 0.3).astype(float)
    centres = np.array([np.r_[np.full(m // 2, 0.8), np.full(m // 2, 0.05)], np.r_[np.full(m // 2, 0.05), np.full(m // 2, 0.8)]])
    clustered = (rng.random((n, m)) < centres[rng.integers(0, 2, n)]).astype(float)
    low, high = dependence.dependence(independent), dependence.dependence(clustered)
    assert low["phi"] < 0.03 and low["top_eigen"] < 2.5 / m
    assert high["phi"] > 0.3 and high["top_eigen"] > 0.4 and high["tree_mi"] > 10 * low["tree_mi"]


def test_tree_l1_is_the_heaviest_trees_distance_from_independence():
    """Three items, item 1 a copy of item 0, item 2 independent: the tree takes the (0, 1) edge, L1 4 p (1 - p)."""
    rng = np.random.default_rng(2)
    first = (rng.random(8000) < 0.5).astype(float)
    x = np.stack([first, first, (rng.random(8000) < 0.5).astype(float)], axis=1)
    p = first.mean()
    stats = dependence.dependence(x)
    assert stats["tree_l1"] == pytest.approx((4 * p * (1 - p) + 0.0) / 2, abs=0.01)
