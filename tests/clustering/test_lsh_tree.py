"""The LSH-tree coreset partitioner: the tree's rules on hand-made hashes, one charge per release,
cluster recovery at large epsilon, graceful degradation near epsilon 0, and its config."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dpgm.clustering import make_partitioner
from dpgm.clustering.base import STAGE
from dpgm.clustering.lsh_tree import LshTreeOptions, LshTreePartitioner, _grow, resolve_noise, tree_noise
from dpgm.config import PartitionConfig
from dpgm.errors import ConfigError
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import releases_epsilon
from dpgm.privacy.events import GaussianEvent
from tests.clustering._fixtures import block_dataset
from tests.clustering.test_noisy_lloyd import RecordingSampler


def mixture(n: int = 4000, k: int = 4, dim: int = 10, seed: int = 0) -> tuple[SimpleNamespace, np.ndarray]:
    """k tight Gaussian clusters around random points of norm 0.8 (rows of norm <= 1)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim))
    centres *= 0.8 / np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(k, size=n)
    rows = centres[labels] + rng.normal(scale=0.02, size=(n, dim))
    return SimpleNamespace(records=rows, n_items=dim), labels


def grow(bits: list[list[int]], **options) -> tuple[np.ndarray, list[float], Accountant]:
    """The tree of hand-made hash bits, with zero noise (the sampler records and returns 0)."""
    acc = Accountant(delta=1e-5)
    opts = LshTreeOptions(**options)
    bits = np.array(bits, dtype=bool)
    tree, counts, _ = _grow(lambda: iter([(None, bits)]), tree_noise(1.0, 0.5, 4), 1, 2, opts, acc,
                            np.random.default_rng(0))
    return tree.leaves_of(bits), counts, acc


def test_the_tree_keeps_nodes_above_the_node_threshold_and_branches_above_the_branch_one(monkeypatch):
    RecordingSampler(Accountant(delta=1e-5), monkeypatch)
    bits = [[0, 0], [0, 0], [0, 0], [0, 1], [1, 0], [1, 0], [1, 1], [1, 1]]
    leaf_of, counts, acc = grow(bits, max_depth=2, min_node=2, min_branch=4)
    # root 8 branches into 4 + 4, both branch: 3, 1, 2, 2; the child of 1 record is dropped
    assert counts == [3.0, 2.0, 2.0]
    assert leaf_of.tolist() == [0, 0, 0, -1, 1, 1, 2, 2]
    assert [e.event.dim for e in acc.ledger.entries] == [1, 2, 4]


def test_a_node_whose_children_are_all_dropped_is_a_leaf(monkeypatch):
    RecordingSampler(Accountant(delta=1e-5), monkeypatch)
    leaf_of, counts, _ = grow([[0, 0], [0, 1], [1, 0], [1, 1]], max_depth=2, min_node=3, min_branch=4)
    assert counts == [4.0]
    assert leaf_of.tolist() == [0, 0, 0, 0]


def test_every_release_is_charged_once_before_its_draw(monkeypatch):
    data = block_dataset(n=600)
    acc = Accountant(delta=1e-5)
    sampler = RecordingSampler(acc, monkeypatch)
    model = LshTreePartitioner(k=3, noise_multiplier=2.0, options=LshTreeOptions(max_depth=6, count_share=0.3))
    part = model.fit(data, acc, np.random.default_rng(0))
    assert [c[2] for c in sampler.calls] == list(range(1, acc.ledger.count() + 1))  # charge, then draw
    assert acc.ledger.stages() == [STAGE]
    shapes = [c[1] for c in sampler.calls]
    leaves = part.info["coreset_points"]
    assert shapes[0] == (1,) and shapes[-2] == (leaves, data.n_items) and shapes[-1] == (3,)
    assert all(len(s) == 1 and s[0] % 2 == 0 for s in shapes[1:-2])  # both children of each branching node
    noise = tree_noise(2.0, 0.3, 8)
    multipliers = [e.event.noise_multiplier for e in acc.ledger.entries for _ in range(e.count)]
    assert multipliers[-2] == 2.0
    assert multipliers[:-2] + multipliers[-1:] == [pytest.approx(noise.count_multiplier)] * (len(shapes) - 1)
    assert acc.spent().epsilon <= part.info["stage_epsilon"] * (1 + 1e-9)


def test_the_counts_get_their_share_of_the_rdp():
    noise = tree_noise(3.0, 0.25, 12)
    counts = 12 / (2 * noise.count_multiplier**2)
    assert counts / (counts + 1 / (2 * 3.0**2)) == pytest.approx(0.25)


def test_a_target_epsilon_calibrates_the_whole_plan():
    noise = resolve_noise(1.0, 0.7, LshTreeOptions(max_depth=10), 1e-6)
    assert releases_epsilon(noise.plan(), 1e-6) == pytest.approx(0.7, rel=1e-4)
    assert releases_epsilon(noise.plan(), 1e-6) <= 0.7
    assert noise.plan()[0] == (GaussianEvent(noise_multiplier=noise.count_multiplier), 12)


def test_recovers_separated_gaussian_clusters_at_large_epsilon():
    data, labels = mixture()
    model = LshTreePartitioner(k=4, target_epsilon=20.0, options=LshTreeOptions(radius=1.0))
    part = model.fit(data, Accountant(delta=1e-6), np.random.default_rng(1))
    assert clustering_accuracy(labels, part.assignments) > 0.95
    assert np.array_equal(model.assign(data.records), part.assignments)


def test_binary_blocks_are_recovered_through_the_registry():
    cfg = PartitionConfig(method="lsh_tree", k=3, target_epsilon=8.0, options={"max_depth": 10})
    model = make_partitioner(cfg)
    assert isinstance(model, LshTreePartitioner) and model.options.max_depth == 10
    data = block_dataset(n=3000)
    part = model.fit(data, Accountant(delta=1e-5), np.random.default_rng(0))
    assert clustering_accuracy(data.labels, part.assignments) > 0.95


@pytest.mark.parametrize("n", [5, 400])
def test_near_epsilon_zero_it_degrades_without_crashing(n):
    data, _ = mixture(n=n)
    acc = Accountant(delta=1e-6)
    part = LshTreePartitioner(k=4, target_epsilon=0.01, options=LshTreeOptions(radius=1.0)).fit(
        data, acc, np.random.default_rng(0))
    assert part.k == 4 and part.assignments.shape == (n,)
    assert np.all(np.isfinite(part.noisy_sizes)) and np.all(part.noisy_sizes >= 0)
    assert np.all(np.isfinite(part.centres)) and np.linalg.norm(part.centres, axis=1).max() <= 1.0 + 1e-9
    assert acc.spent().epsilon <= 0.01


def test_public_centring_subtracts_the_public_mean():
    public = block_dataset(n=90, seed=4)
    model = LshTreePartitioner(k=3, target_epsilon=5.0, public=public, options=LshTreeOptions(centre="public"))
    data = block_dataset(n=900)
    part = model.fit(data, Accountant(delta=1e-5), np.random.default_rng(0))
    assert np.allclose(model.offset_, public.records.mean(axis=0))
    assert np.array_equal(model.assign(data.records), part.assignments)


@pytest.mark.parametrize(("options", "words"), [
    ({"count_share": 1.5}, "count_share"),
    ({"max_depth": 0}, "max_depth"),
    ({"min_node": 5, "min_branch": 2}, "min_branch"),
    ({"depth": 3}, "unknown option 'depth'"),
    ({"centre": "public"}, "public sample"),
])
def test_bad_options_are_one_line_config_errors(options, words):
    with pytest.raises(ConfigError, match=words) as info:
        make_partitioner(PartitionConfig(method="lsh_tree", k=3, options=options))
    assert "\n" not in str(info.value)
