from __future__ import annotations

import numpy as np
import pytest

from tests._benchmarks import load_benchmark

capacity = load_benchmark("model_capacity")


def _chain(n: int, seed: int = 0) -> np.ndarray:
    """x0 fair; each next item copies the one before with probability 0.9, else flips a fair coin."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 4), dtype=np.int64)
    x[:, 0] = rng.random(n) < 0.5
    for j in range(1, 4):
        x[:, j] = np.where(rng.random(n) < 0.9, x[:, j - 1], rng.random(n) < 0.5)
    return x


def test_the_information_of_a_copy_is_its_entropy_and_of_an_independent_item_zero():
    rng = np.random.default_rng(1)
    x = np.stack([rng.random(50_000) < 0.5, rng.random(50_000) < 0.5], axis=1).astype(np.int64)
    x = np.concatenate([x, x[:, :1]], axis=1)  # item 2 copies item 0
    assert capacity.information(x, 2, [0]) == pytest.approx(capacity.entropy(x, [0]))
    assert capacity.information(x, 1, [0]) == pytest.approx(0.0, abs=1e-3)


def test_the_chow_liu_tree_of_a_chain_is_the_chain_and_the_networks_keep_their_bound():
    x = _chain(20_000)
    tree = capacity.chow_liu(x)
    assert sorted(tuple(sorted((item, *parents))) for item, parents in tree.items() if parents) == [(0, 1), (1, 2),
                                                                                                   (2, 3)]
    network = capacity.greedy_network(x, 2)
    assert sorted(network) == [0, 1, 2, 3] and all(len(p) <= 2 for p in network.values())
    assert all(p in list(network)[:list(network).index(item)] for item, ps in network.items() for p in ps)


def test_draws_from_the_exact_tree_keep_the_pairs_of_a_chain():
    x = _chain(40_000)
    drawn = capacity.draw(x, capacity.chow_liu(x), np.random.default_rng(2))
    np.testing.assert_allclose(drawn.T @ drawn / len(x), x.T @ x / len(x), atol=0.02)
    independent = capacity.draw(x, {j: [] for j in range(4)}, np.random.default_rng(2))
    assert abs((independent[:, 0] * independent[:, 3]).mean() - (x[:, 0] * x[:, 3]).mean()) > 0.1


def test_a_mixture_of_trees_draws_each_groups_records():
    rng = np.random.default_rng(3)
    x = np.concatenate([np.zeros((300, 4), dtype=np.int64), np.ones((100, 4), dtype=np.int64)])
    drawn = capacity.mixture_draw(x, 2, rng)
    assert drawn.shape == x.shape and drawn.sum(axis=1).tolist().count(4) == 100
