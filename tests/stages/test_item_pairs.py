"""A tree of items per part: private edges, one charged release of pair counts, means kept (post-processing)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.artifact import load_release
from dpgm.clustering.base import size_shares
from dpgm.config import Config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.tree import Tree
from dpgm.pipeline.run import train
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, ExponentialEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import sample_dataset
from dpgm.stages.item_pairs import (
    STAGE,
    ItemPairsStage,
    all_pair_counts,
    grow_trees,
    heaviest_tree,
    pair_bound,
    plain_counts,
    table_distances,
    weighted_pair_counts,
)
from dpgm.stages.tree_fit import fit_tree, shrunk_counts
from tests.training.test_run import tiny_config


def _chain_records(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Item j copies item j - 1 with probability 0.9: the chain 0 - 1 - ... - (m - 1)."""
    x = np.zeros((n, m), dtype=np.uint8)
    x[:, 0] = rng.random(n) < 0.5
    for j in range(1, m):
        x[:, j] = np.where(rng.random(n) < 0.9, x[:, j - 1], rng.random(n) < 0.5)
    return x


def test_weighted_pair_counts_weigh_each_record_by_its_clip():
    records = sp.csr_matrix(np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=np.uint8))
    counts = weighted_pair_counts(records, bound=1.0)
    # the first record has norm 2, scaled by 1/2; the second norm sqrt(2), scaled by 1/sqrt(2)
    assert counts[0, 1] == pytest.approx(0.5 + 1 / np.sqrt(2), rel=1e-5)  # clip_rows keeps a 1e-6 margin
    assert counts[2, 3] == pytest.approx(0.5, rel=1e-5)


def test_a_record_moves_the_counts_of_any_forest_by_less_than_the_bound():
    """The sensitivity the release is charged for: s sqrt(|x| - 1) < B over a forest's edges."""
    rng = np.random.default_rng(0)
    m, bound = 30, np.sqrt(5.0)
    for _ in range(200):
        record = sp.csr_matrix((rng.random((1, m)) < rng.uniform(0.05, 1.0)).astype(np.uint8))
        parent = [-1] + [int(rng.integers(0, j)) for j in range(1, m)]  # a random spanning tree
        counts = weighted_pair_counts(record, bound)
        moved = np.array([counts[j, parent[j]] for j in range(1, m)])
        assert np.linalg.norm(moved) < bound


def test_a_record_moves_every_selection_score_by_at_most_one():
    """The exponential mechanism's sensitivity: adding a record moves each pair's table L1 distance by <= 1."""
    rng = np.random.default_rng(3)
    m = 8
    for _ in range(50):
        x = (rng.random((int(rng.integers(1, 60)), m)) < rng.uniform(0.05, 0.95)).astype(np.uint8)
        record = (rng.random((1, m)) < rng.uniform(0.0, 1.0)).astype(np.uint8)
        means, size = rng.uniform(0.01, 0.99, m), float(rng.uniform(1, 80))  # any public estimate
        before = table_distances(plain_counts(sp.csr_matrix(x)), size, means)
        after = table_distances(plain_counts(sp.csr_matrix(np.vstack([x, record]))), size, means)
        assert np.abs(after - before).max() <= 1.0 + 1e-9


def test_the_score_is_the_l1_distance_of_the_two_by_two_table():
    x = np.array([[1, 1], [1, 0], [0, 0], [0, 0]], dtype=np.uint8)
    plain = plain_counts(sp.csr_matrix(x))
    assert plain[2, 2] == 4 and plain[0, 0] == 2 and plain[0, 1] == 1
    # independence at the true margins (1/2, 1/4): table [1, 1, 0, 2] against 4 x [1/8, 3/8, 1/8, 3/8]
    [score] = table_distances(plain, 4.0, np.array([0.5, 0.25]))
    assert score == pytest.approx(0.5 + 0.5 + 0.5 + 0.5)


def test_at_a_large_epsilon_the_selections_find_the_chain_and_are_charged_per_round():
    rng = np.random.default_rng(1)
    m = 6
    x = _chain_records(4000, m, rng)
    counts = [plain_counts(sp.csr_matrix(x))]
    acc = Accountant(delta=1e-5)
    [edges] = grow_trees(counts, np.array([4000.0]), x.mean(0, keepdims=True), epsilon=5.0, accountant=acc,
                         rng=np.random.default_rng(2))
    assert sorted(tuple(sorted(e)) for e in edges) == [(j, j + 1) for j in range(m - 1)]
    [entry] = acc.ledger.entries
    assert entry.stage == STAGE and entry.event == ExponentialEvent(epsilon=5.0) and entry.count == m - 1


def test_the_fitted_tree_keeps_the_noisy_means_and_a_feasible_joint():
    means = np.array([0.3, 0.6, 0.2, 0.9])
    edges = [(0, 1), (1, 2), (1, 3)]
    size = 1000.0
    # noisy counts: one within the bounds, one below what the means allow, one above
    noisy = np.array([250.0, -40.0, 2000.0])
    parent, logits = fit_tree(edges, noisy, size, means)
    tree = Tree(4)
    tree.set_tree(torch.as_tensor(parent), torch.as_tensor(logits, dtype=torch.float32))
    assert np.allclose(tree.marginals().detach().numpy(), means, atol=1e-5)
    cond = 1 / (1 + np.exp(-logits))
    assert parent.tolist() == [-1, 0, 1, 1]
    assert cond[1, 1] * means[0] == pytest.approx(0.25, abs=1e-6)  # 250 / 1000, as measured
    assert cond[2, 1] == pytest.approx(1e-5, abs=1e-6)  # p11 projected up to 0 (the floor)
    assert cond[3, 1] * means[1] == pytest.approx(0.6, abs=1e-5)  # projected down to min(p_1, p_3)


def test_edges_measured_within_their_noise_read_as_independent_and_strong_ones_keep_their_excess():
    means, size, sigma = np.array([0.3, 0.6, 0.2, 0.9]), 1000.0, 40.0
    edges = [(0, 1), (1, 2), (1, 3)]
    independent = size * np.array([0.18, 0.12, 0.54])
    counts = independent + np.array([30.0, -400.0, 0.0])  # within its noise, far beyond it, none
    shrunk = shrunk_counts(edges, counts, size, means, sigma)
    assert shrunk[0] == pytest.approx(independent[0])  # |excess| below sigma: read as independent
    assert shrunk[1] - independent[1] == pytest.approx(-400.0 * (1 - (sigma / 400.0) ** 2))  # kept but 1%
    assert shrunk[2] == pytest.approx(independent[2])
    # over many draws: an independent pair loses most of its noise; a pair 3.75 noise stds from independence pays a
    # little (one observation per edge: the factor's slope adds variance, its pull a bias)
    rng = np.random.default_rng(0)
    truth = independent[:, None] + np.array([0.0, -60.0, 150.0])[:, None]
    noisy = truth + rng.normal(0.0, sigma, (3, 4000))
    shrunk = np.stack([shrunk_counts(edges, noisy[:, i], size, means, sigma) for i in range(noisy.shape[1])], axis=1)
    raw_error, shrunk_error = ((noisy - truth) ** 2).mean(axis=1), ((shrunk - truth) ** 2).mean(axis=1)
    assert shrunk_error[0] < 0.35 * raw_error[0]
    assert shrunk_error[2] < 1.35 * raw_error[2]


def test_shrunk_counts_keep_the_means_and_lower_the_error_of_a_tree_of_mostly_independent_pairs():
    m, size, sigma = 12, 1000.0, 40.0
    rng = np.random.default_rng(1)
    means = rng.uniform(0.2, 0.8, m)
    edges = [(j, j + 1) for j in range(m - 1)]
    u, v = np.asarray(edges).T
    truth = size * means[u] * means[v] + np.where(np.arange(m - 1) < 3, 150.0, 0.0)  # three dependent pairs
    noisy = truth + rng.normal(0.0, sigma, (500, m - 1))
    shrunk = np.stack([shrunk_counts(edges, y, size, means, sigma) for y in noisy])
    assert ((shrunk - truth) ** 2).mean() < 0.8 * ((noisy - truth) ** 2).mean()
    assert np.array_equal(shrunk_counts(edges, noisy[0], size, means, 0.0), noisy[0])  # no noise: as measured
    parent, logits = fit_tree(edges, noisy[0], size, means, count_noise=sigma)
    tree = Tree(m)
    tree.set_tree(torch.as_tensor(parent), torch.as_tensor(logits, dtype=torch.float32))
    assert np.allclose(tree.marginals().detach().numpy(), means, atol=1e-5)  # the tree keeps the noisy means


def test_a_tree_whose_empty_draws_are_dropped_keeps_the_means_among_the_records_kept():
    means = np.array([0.5, 0.45, 0.4, 0.35, 0.3])
    edges = [(0, 1), (1, 2), (0, 3), (3, 4)]
    joints = np.array([0.2, 0.1, 0.1, 0.1]) * 1000.0  # counts over a part of 1,000 non-empty records
    tree = Tree(5)
    tree.set_tree(*map(torch.as_tensor, fit_tree(edges, joints, 1000.0, means, nonempty=True)))
    g = torch.Generator().manual_seed(0)
    x = tree.sample(400_000, g).numpy()
    kept = x[x.sum(axis=1) >= 1]
    assert len(kept) > 0.3 * len(x)  # a tree that keeps its draws, not one that almost never does
    assert np.abs(kept.mean(axis=0) - means).max() < 5 * np.sqrt(0.25 / len(kept))
    # and the kept records' pair frequencies are the measured ones (projected: all within bounds here)
    assert np.mean(kept[:, 0] * kept[:, 1]) == pytest.approx(0.2, abs=5 * np.sqrt(0.2 / len(kept)))
    plain = Tree(5)
    plain.set_tree(*map(torch.as_tensor, fit_tree(edges, joints, 1000.0, means)))
    assert np.allclose(plain.marginals().detach().numpy(), means, atol=1e-6)  # without: the means themselves


def test_pairs_that_leave_no_kept_fixed_point_fall_back_to_independent_items_that_keep_the_means():
    """Every item present only with its parent: among kept records the root would have to be in all of them, so
    the tree has no fixed point c = 1 - P(empty) but 0. Independent items at these means (adding up to 1.5)
    have one: the part's model is then independent items, and the records it keeps have the means."""
    means = np.array([0.6, 0.5, 0.4])
    parent, logits = fit_tree([(0, 1), (1, 2)], np.array([0.5, 0.4]) * 1000.0, 1000.0, means, nonempty=True)
    assert (parent == -1).all()
    tree = Tree(3)
    tree.set_tree(torch.as_tensor(parent), torch.as_tensor(logits))
    x = tree.sample(200_000, torch.Generator().manual_seed(0)).numpy()
    kept = x[x.sum(axis=1) >= 1]
    assert np.abs(kept.mean(axis=0) - means).max() < 5 * np.sqrt(0.25 / len(kept))


def test_pairs_that_leave_no_kept_fixed_point_fall_back_to_the_plain_fit():
    """As above, but the means add up to less than one: independent items have no fixed point above 0 either
    (the tree would almost never draw a record to keep); it is then the plain fit, which keeps the root's draws."""
    means = np.array([0.3, 0.2, 0.1])
    edges = [(0, 1), (1, 2)]
    joints = np.array([0.2, 0.1]) * 1000.0
    parent, logits = fit_tree(edges, joints, 1000.0, means, nonempty=True)
    plain = fit_tree(edges, joints, 1000.0, means)
    assert np.array_equal(parent, plain[0]) and np.allclose(logits, plain[1])
    tree = Tree(3)
    tree.set_tree(torch.as_tensor(parent), torch.as_tensor(logits))
    assert np.allclose(tree.marginals().detach().numpy(), means, atol=1e-4)  # the conditionals at FLOOR


def test_a_run_charges_the_selections_and_one_release_and_draws_the_pairs(tmp_path):
    over = {"data.source": "digits", "model.kind": "tree", "partition.method": "label", "partition.k": 10,
            "model.mean_noise_multiplier": 5.0, "model.calibrate": False,
            "model.options": {"select_epsilon": 0.5, "pair_noise_multiplier": 5.0}}
    cfg: Config = tiny_config(tmp_path, **{k: v for k, v in over.items() if k != "model.options"})
    cfg.model.options = over["model.options"]
    run_dir, report = train(cfg, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    pairs = [e for e in ledger.entries if e.stage == STAGE]
    m = 64
    assert [(e.event, e.count) for e in pairs[:-1]] == [(ExponentialEvent(epsilon=0.5), m - 1)]
    release = pairs[-1].event
    assert isinstance(release, DiscreteGaussianEvent) and release.noise_multiplier == 5.0
    assert release.dim == 10 * (m - 1) and pairs[-1].count == 1
    assert sorted({e.stage for e in ledger.entries}) == ["item_pairs", "part_means", "partition"]  # no DP-SGD
    assert report["plan"]["steps_taken"] == 0 and STAGE in report["stage_lines"]
    # the release's item frequencies are the noisy part means, within sampling error (post-processing)
    mixture = load_release(run_dir)
    assert all(isinstance(model, Tree) for model in mixture.models)
    weights = size_shares(mixture.noisy_sizes)
    expected = sum(w * model.marginals().detach().numpy() for w, model in zip(weights, mixture.models))
    n = 40_000
    drawn = sample_dataset(run_dir, n, seed=0).records
    assert np.abs(np.asarray(drawn.mean(axis=0)).ravel() - expected).max() < 5 * np.sqrt(0.25 / n)


@pytest.mark.parametrize("pair_noise", [0.5, 1e4])
def test_a_run_reads_each_edge_against_its_noise(tmp_path, pair_noise):
    """The shipped stage: at little count noise each item of the chain follows its parent as the data do (0.95 / 0.05);
    at a count noise far above every excess, an edge whose noisy excess is within one noise std (about two in three)
    reads as independent (one conditional per item, its mean) where the counts as measured would put every edge at
    a bound of what the means allow."""
    rng = np.random.default_rng(4)
    m, n = 30, 4_000
    data = BinaryDataset(records=sp.csr_matrix(_chain_records(n, m, rng)), item_names=[str(i) for i in range(m)])
    cfg = tiny_config(tmp_path, **{"partition.method": "none", "partition.k": 1, "model.kind": "tree",
                                   "model.mean_noise_multiplier": 0.5, "model.calibrate": False})
    cfg.model.options = {"select_epsilon": 50.0, "pair_noise_multiplier": pair_noise}
    run_dir, _ = train(cfg, data=data, progress=False)
    [model] = load_release(run_dir).models
    cond = torch.sigmoid(model.logits).detach().numpy()
    child = np.flatnonzero(model.parent.numpy() >= 0)
    assert child.size == m - 1
    if pair_noise < 1:
        assert np.allclose(cond[child], [[0.05, 0.95]] * child.size, atol=0.03)
    else:
        independent = np.isclose(cond[child, 0], cond[child, 1], atol=1e-6)
        assert independent.mean() > 0.5


def test_the_stage_state_round_trips():
    stage = ItemPairsStage(Config())
    stage.output = {"parent": np.array([[-1, 0, 1]]), "logits": np.zeros((1, 3, 2))}
    again = ItemPairsStage(Config())
    again.load_state_dict(stage.state_dict())
    assert np.array_equal(again.output["parent"], stage.output["parent"])
    assert np.array_equal(again.output["logits"], stage.output["logits"])



def test_a_declared_tables_tree_reads_its_size_off_the_item_sums(tmp_path):
    """With ``data.attributes`` the tree's item frequencies sum to the attributes (the size read off the item sums,
    ``part_means.table_parts``) and the ledger is the undeclared run's: post-processing only."""
    rng = np.random.default_rng(0)
    first = rng.integers(0, 2, 800)
    second = np.where(rng.random(800) < 0.8, first, rng.integers(0, 2, 800))  # a dependent attribute
    x = np.concatenate([np.eye(2)[first], np.eye(2)[second], np.eye(3)[rng.integers(0, 3, 800)]], axis=1)
    data = BinaryDataset(records=x.astype(np.uint8), item_names=[f"v{j}" for j in range(7)], name="table")
    runs = {}
    for name, declared in (("plain", None), ("table", 3)):
        cfg = tiny_config(tmp_path, **{"name": name, "model.kind": "tree", "partition.method": "none",
                                       "partition.k": 1, "partition.noise_multiplier": 30.0,
                                       "model.mean_noise_multiplier": 2.0, "model.calibrate": False})
        cfg.data.attributes = declared
        cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0}
        run_dir, _ = train(cfg, data=data, progress=False)
        runs[name] = run_dir
    ledgers = [PrivacyLedger.load(runs[name] / "release" / "ledger.json").entries for name in ("plain", "table")]
    assert ledgers[0] == ledgers[1]
    totals = {name: float(load_release(run).models[0].marginals().sum()) for name, run in runs.items()}
    assert totals["table"] == pytest.approx(3.0, abs=1e-4)
    assert abs(totals["plain"] - 3.0) > 1e-3  # the partition's noisy count (noise 30) shifts every mean


def test_a_declared_table_whose_top_items_drop_values_keeps_the_partitions_count(tmp_path):
    """With top_items a record may lose values, its items no longer add up to the attributes: no size from them."""
    rng = np.random.default_rng(1)
    x = np.concatenate([np.eye(2)[rng.integers(0, 2, 600)], np.eye(3)[rng.integers(0, 3, 600)]], axis=1)
    data = BinaryDataset(records=x.astype(np.uint8), item_names=[f"v{j}" for j in range(5)], name="table")
    marginals = []
    for name, declared in (("plain", None), ("table", 2)):
        cfg = tiny_config(tmp_path, **{"name": name, "model.kind": "tree", "partition.method": "none",
                                       "partition.k": 1, "partition.noise_multiplier": 30.0,
                                       "model.mean_noise_multiplier": 2.0, "model.calibrate": False,
                                       "data.top_items": 5, "data.top_items_noise_multiplier": 1.0})
        cfg.data.attributes = declared
        cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0}
        run_dir, _ = train(cfg, data=data, progress=False)
        marginals.append(load_release(run_dir).models[0].marginals().detach().numpy())
    np.testing.assert_allclose(marginals[1], marginals[0])


def test_a_declared_schema_makes_each_attributes_values_add_up_to_one_at_no_cost(tmp_path):
    """With ``data.attribute_sizes`` the tree's value frequencies of each attribute add up to one (the noisy
    means projected, ``attributes.project_values``), and the ledger is the undeclared run's: post-processing."""
    rng = np.random.default_rng(2)
    first = rng.integers(0, 2, 800)
    second = np.where(rng.random(800) < 0.8, first, rng.integers(0, 2, 800))
    x = np.concatenate([np.eye(2)[first], np.eye(2)[second], np.eye(3)[rng.integers(0, 3, 800)]], axis=1)
    data = BinaryDataset(records=x.astype(np.uint8), item_names=[f"v{j}" for j in range(7)], name="table")
    runs = {}
    for name, sizes in (("counted", None), ("schema", [2, 2, 3])):
        cfg = tiny_config(tmp_path, **{"name": name, "model.kind": "tree", "partition.method": "none",
                                       "partition.k": 1, "partition.noise_multiplier": 30.0,
                                       "model.mean_noise_multiplier": 2.0, "model.calibrate": False})
        cfg.data.attributes, cfg.data.attribute_sizes = 3, sizes
        cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0}
        run_dir, _ = train(cfg, data=data, progress=False)
        runs[name] = run_dir
    ledgers = [PrivacyLedger.load(runs[name] / "release" / "ledger.json").entries for name in runs]
    assert ledgers[0] == ledgers[1]
    sums = {name: np.add.reduceat(load_release(run).models[0].marginals().detach().numpy(), [0, 2, 4])
            for name, run in runs.items()}
    np.testing.assert_allclose(sums["schema"], 1.0, atol=1e-4)
    assert np.abs(sums["counted"] - 1.0).max() > 1e-3  # each value's own noise
    assert sums["counted"].sum() == pytest.approx(3.0, abs=1e-4)


def test_a_schema_that_does_not_add_up_to_the_item_universe_is_refused_before_any_release(tmp_path):
    x = np.eye(3)[np.random.default_rng(0).integers(0, 3, 50)].astype(np.uint8)
    data = BinaryDataset(records=x, item_names=["a", "b", "c"], name="table")
    cfg = tiny_config(tmp_path, **{"model.kind": "tree", "partition.method": "none", "partition.k": 1})
    cfg.data.attribute_sizes = [2, 2]
    cfg.validate()
    with pytest.raises(ConfigError, match="add up to 4 items but the item universe holds 3"):
        train(cfg, data=data, progress=False)
    assert not any(tmp_path.rglob("ledger.json"))


def test_a_record_moves_the_counts_of_every_pair_by_at_most_the_pair_bound():
    """all_pairs' sensitivity: a record's pair counts, scaled, have L2 norm <= pair_bound(B); a record of at most
    L = B^2 items is not scaled (but for the clip's margin)."""
    rng = np.random.default_rng(0)
    m, bound = 30, np.sqrt(5.0)
    limit = pair_bound(bound)
    assert limit == pytest.approx(np.sqrt(10.0))  # L = 5: 5 * 4 / 2 pairs
    a, b = np.triu_indices(m, 1)
    for _ in range(200):
        record = sp.csr_matrix((rng.random((1, m)) < rng.uniform(0.02, 1.0)).astype(np.uint8))
        moved = all_pair_counts(record, limit)[a, b]
        assert np.linalg.norm(moved) <= limit
        if record.nnz <= 5:
            assert moved == pytest.approx((record.T @ record).toarray()[a, b], rel=1e-5)  # clip_target's margin
    assert pair_bound(1.0) == pytest.approx(1.0)  # one item: the bound of a two-item record, never 0


def test_the_heaviest_tree_is_a_maximum_spanning_tree():
    from scipy.sparse.csgraph import minimum_spanning_tree

    rng = np.random.default_rng(1)
    m = 12
    a, b = np.triu_indices(m, 1)
    for _ in range(20):
        scores = rng.random(a.size)
        edges = heaviest_tree(scores, m)
        assert len(edges) == m - 1 and len({v for e in edges for v in e}) == m  # spanning
        weight = {(int(u), int(v)): w for u, v, w in zip(a, b, scores)}
        dense = np.zeros((m, m))
        dense[a, b] = 2.0 - scores  # positive: scipy reads 0 as no edge
        best = (m - 1) * 2.0 - minimum_spanning_tree(dense).sum()
        assert sum(weight[e] for e in edges) == pytest.approx(best)


def test_a_tree_over_every_pair_charges_one_release_and_its_release_follows_every_pair(tmp_path):
    """all_pairs: no selections, one Gaussian over the k m (m - 1) / 2 counts; at little noise the tree is the
    chain and the measured pairs are the data's; the release (which follows lengths) meets every pair's
    frequency within sampling error, where a tree alone misses the pairs it does not hold."""
    rng = np.random.default_rng(2)
    m, n = 6, 20_000
    x = _chain_records(n, m, rng)
    x[:, 5] = np.where(rng.random(n) < 0.9, x[:, 0], x[:, 5])  # a pair off the chain: 0 - 5 (a cycle)
    data = BinaryDataset(records=sp.csr_matrix(x), item_names=[str(i) for i in range(m)])
    cfg = tiny_config(tmp_path, **{"partition.method": "none", "partition.k": 1, "model.kind": "tree",
                                   "model.mean_noise_multiplier": 0.5, "model.calibrate": False,
                                   "model.mean_clip_quantile": 1.0, "model.length_bound_noise_multiplier": 0.5,
                                   "model.lengths_from_bound": True})
    cfg.model.options = {"all_pairs": True, "pair_noise_multiplier": 0.5}
    run_dir, _ = train(cfg, data=data, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    [entry] = [e for e in ledger.entries if e.stage == STAGE]
    assert isinstance(entry.event, DiscreteGaussianEvent) and entry.event.noise_multiplier == 0.5
    assert entry.event.dim == m * (m - 1) // 2 and entry.count == 1
    assert not any(isinstance(e.event, ExponentialEvent) for e in ledger.entries)
    [model] = load_release(run_dir).models
    a, b = np.triu_indices(m, 1)
    exact = (x.T.astype(np.int64) @ x)[a, b] / n
    pairs, joints = model.edge_joints()
    assert np.array_equal(pairs, np.stack([a, b], axis=1)) and np.abs(joints - exact).max() < 0.01
    drawn = sample_dataset(run_dir, n, seed=0).records
    drawn = sp.csr_matrix(drawn, dtype=np.int64)
    released = (drawn.T @ drawn).toarray()[a, b] / n
    assert np.abs(released - exact).max() < 0.002  # every pair: a tree alone misses some by 0.007 here
