"""A tree over a declared table's attributes: one value per attribute, sensitivity 1 per table, marginals kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.config import Config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.attribute_tree import AttributeTree
from dpgm.pipeline.run import train
from dpgm.privacy.events import DiscreteGaussianEvent, ExponentialEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import sample_dataset
from dpgm.stages.attribute_pairs import (
    attribute_distances,
    attribute_marginals,
    edge_cells,
    edge_tables,
    fit_attribute_tree,
    group_columns,
    known_groups,
    known_values,
    merged_marginals,
    noise_penalties,
    pooled_marginals,
    rake,
    record_values,
    spread_beyond_noise,
    tree_arrays,
    value_counts,
    value_groups,
    value_offsets,
    within_shares,
)
from dpgm.stages.attributes import Schema, simplex_projection
from dpgm.stages.item_pairs import STAGE
from tests.training.test_run import tiny_config

#: Three attributes of 3, 2 and 4 values, every value modelled.
SCHEMA = Schema(of=np.array([0, 0, 0, 1, 1, 2, 2, 2, 2]), complete=np.array([True, True, True]))


def _table(n: int, rng: np.random.Generator) -> np.ndarray:
    """Records of SCHEMA: attribute 1 follows attribute 0's parity, attribute 2 attribute 1's value."""
    a = rng.integers(0, 3, n)
    b = (a % 2) ^ (rng.random(n) < 0.1)
    c = np.where(b == 1, rng.integers(0, 2, n), rng.integers(2, 4, n))
    x = np.zeros((n, 9), dtype=np.uint8)
    x[np.arange(n), a], x[np.arange(n), 3 + b], x[np.arange(n), 5 + c] = 1, 1, 1
    return x


def test_each_record_takes_one_value_of_every_attribute_whatever_it_holds():
    records = np.array([[1, 1, 0, 0, 0, 0, 0, 0, 1],   # two values of attribute 0: the first counts
                        [0, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=np.uint8)  # none of any
    assert record_values(records, SCHEMA).tolist() == [[1, 0, 4], [0, 0, 0]]
    counts = value_counts(records, SCHEMA)
    offsets = value_offsets(SCHEMA)
    for t in range(3):  # every attribute's diagonal block counts each record once
        assert np.trace(counts[offsets[t]:offsets[t + 1], offsets[t]:offsets[t + 1]]) == 2


def test_a_record_moves_each_pair_table_by_one_cell_and_each_score_by_at_most_one():
    """The sensitivities charged: 1 per selection score, sqrt(T - 1) for the T - 1 tables of a spanning tree."""
    rng = np.random.default_rng(0)
    base = _table(300, rng)
    offsets, width = value_offsets(SCHEMA), 5
    marginals = attribute_marginals(base.mean(axis=0), SCHEMA)
    edges = [(0, 1), (1, 2)]
    for _ in range(50):
        extra = (rng.random((1, 9)) < 0.4).astype(np.uint8)  # any record, in the schema or not
        before, after = value_counts(base, SCHEMA), value_counts(np.vstack([base, extra]), SCHEMA)
        moved = edge_tables(after, edges, offsets, width) - edge_tables(before, edges, offsets, width)
        assert [np.abs(table).sum() for table in moved] == [1.0, 1.0]
        assert np.linalg.norm(moved) == pytest.approx(np.sqrt(len(edges)))
        shift = attribute_distances(after, 300.0, marginals, offsets) - attribute_distances(before, 300.0, marginals,
                                                                                            offsets)
        assert np.abs(shift).max() <= 1.0 + 1e-9


def test_each_pairs_penalty_is_the_mean_l1_norm_of_its_tables_noise():
    """sqrt(2 / pi) sigma per cell (the mean of |N(0, sigma^2)|) times the pair's cells, in triu order."""
    offsets, sigma = value_offsets(SCHEMA), 7.0  # attributes of 3 + 1, 2 + 1 and 4 + 1 values (none first)
    penalties = noise_penalties(offsets, sigma)
    assert penalties == pytest.approx(np.sqrt(2 / np.pi) * sigma * np.array([4 * 3, 4 * 5, 3 * 5]))
    noise = np.random.default_rng(0).normal(0.0, sigma, (4_000, 4 * 3))
    assert np.abs(noise).sum(axis=1).mean() == pytest.approx(penalties[0], rel=0.01)


def test_a_narrow_pair_that_depends_outscores_a_wide_pair_far_from_independence_by_chance():
    """MST's score alone prefers two independent attributes of 40 values each (their table's sampling noise sums
    to more than a strong 2 x 2 link); less the noise their released table would carry, the link comes first."""
    rng = np.random.default_rng(1)
    n, wide = 2_000, 40
    schema = Schema(of=np.repeat(np.arange(4), [2, 2, wide, wide]), complete=np.ones(4, dtype=bool))
    a = rng.integers(0, 2, n)
    b = a ^ (rng.random(n) < 0.2)
    c, d = rng.integers(0, wide, n), rng.integers(0, wide, n)
    x = np.zeros((n, 4 + 2 * wide), dtype=np.uint8)
    for column in (a, 2 + b, 4 + c, 4 + wide + d):
        x[np.arange(n), column] = 1
    offsets = value_offsets(schema)
    distances = attribute_distances(value_counts(x, schema), float(n), attribute_marginals(x.mean(axis=0), schema),
                                    offsets)
    pairs = list(zip(*np.triu_indices(4, 1)))
    assert pairs[int(np.argmax(distances))] == (2, 3)
    scores = distances - noise_penalties(offsets, 5.0 * np.sqrt(3.0))  # multiplier 5, T - 1 = 3 tables
    assert pairs[int(np.argmax(scores))] == (0, 1)


def test_raking_meets_both_margins_without_negative_mass():
    noisy = np.array([[0.3, -0.05], [0.1, 0.7]])
    joint = rake(noisy, np.array([0.4, 0.6]), np.array([0.5, 0.5]))
    assert (joint >= 0).all()
    np.testing.assert_allclose(joint.sum(axis=1), [0.4, 0.6], atol=1e-6)
    np.testing.assert_allclose(joint.sum(axis=0), [0.5, 0.5], atol=1e-6)


def test_pooled_marginals_weigh_the_means_and_each_edges_margin_by_their_inverse_noise_variance():
    # one edge of two 2-valued attributes; the means' noise as a cell's: a margin over 2 cells has twice its variance
    table = np.array([[[30.0, 10.0], [10.0, 50.0]]])
    a, b = pooled_marginals([(0, 1)], table, 100.0, [np.array([0.5, 0.5]), np.array([0.2, 0.8])],
                            [np.array([1, 1]), np.array([1, 1])], [np.zeros(2, bool)] * 2, mean_noise=4.0, cell_noise=4.0)
    np.testing.assert_allclose(a, np.array([50 + 40 / 2, 50 + 60 / 2]) / 150, rtol=1e-12)
    np.testing.assert_allclose(b, np.array([20 + 40 / 2, 80 + 60 / 2]) / 150, rtol=1e-12)
    # a group of 3 values carries 3 means' noise; an edge to a 4-group attribute, 4 cells'
    q = pooled_marginals([(0, 1)], np.ones((1, 2, 4)) * 25.0, 200.0, [np.array([0.25, 0.75]), np.full(4, 0.25)],
                         [np.array([3, 1]), np.ones(4, dtype=int)], [np.zeros(2, bool), np.zeros(4, bool)], mean_noise=2.0, cell_noise=1.0)[0]
    rows = [(200 * 0.25 / 12 + 100 / 4) / (1 / 12 + 1 / 4), (200 * 0.75 / 4 + 100 / 4) / (1 / 4 + 1 / 4)]
    np.testing.assert_allclose(q, simplex_projection(np.array(rows) / 200, 1.0), rtol=1e-12)
    # a value never held whose margin's noise is negative: the excess its clipping adds is taken from every value
    # alike (the means' own projection), not in proportion, so a small noisy value keeps less of its noise
    q = pooled_marginals([(0, 1)], np.array([[[1_000.0, 0.0], [10.0, 0.0], [-10.0, 0.0]]]), 1_000.0,
                         [np.array([0.98, 0.02, 0.0]), np.array([1.0, 0.0])], [np.ones(3, int), np.ones(2, int)],
                         [np.zeros(3, bool), np.zeros(2, bool)], mean_noise=5.0, cell_noise=5.0)[0]
    raw = np.array([980 / 25 + 1_000 / 50, 20 / 25 + 10 / 50, -10 / 50]) / 0.06 / 1_000
    np.testing.assert_allclose(q, [raw[0] - (raw.sum() - raw[2] - 1) / 2, raw[1] - (raw.sum() - raw[2] - 1) / 2, 0],
                               rtol=1e-12)
    assert q[1] < raw[1] / (raw.sum() - raw[2]) - 1e-3  # clipped and rescaled: 0.0166


def test_pooled_marginals_are_nearer_the_truth_than_the_noisy_means_at_the_plans_noise():
    rng = np.random.default_rng(3)
    x = _table(5_000, rng)
    counts, offsets = value_counts(x, SCHEMA), value_offsets(SCHEMA)
    edges, width, n = [(0, 1), (1, 2)], 5, 5_000.0
    truth = attribute_marginals(x.mean(axis=0), SCHEMA)
    values = [np.ones(q.size, dtype=int) for q in truth]
    known = known_groups([np.arange(q.size) for q in truth], known_values(SCHEMA))  # none, alone, never held
    assert [k.tolist() for k in known] == [[True, False, False, False], [True, False, False], [True] + [False] * 4]
    errors = {"means": 0.0, "pooled": 0.0}
    for _ in range(200):  # a mean's noise std as the pair cells' (the rules' shares give the same order)
        means = np.clip(x.mean(axis=0) + rng.normal(0, 60.0 / n, 9), 1e-6, 1.0)
        noisy = edge_tables(counts, edges, offsets, width) + rng.normal(0, 60.0, (2, width, width))
        marginals = attribute_marginals(means, SCHEMA)
        pooled = pooled_marginals(edges, noisy, n, marginals, values, known, mean_noise=60.0, cell_noise=60.0)
        for name, est in (("means", marginals), ("pooled", pooled)):
            errors[name] += sum(np.abs(e - t).sum() for e, t in zip(est, truth))
    assert errors["pooled"] < 0.92 * errors["means"]  # about 0.86: an edge margin of 3 to 5 cells per attribute


def test_the_fitted_tree_keeps_the_noisy_marginals_and_without_noise_the_tables():
    rng = np.random.default_rng(1)
    x = _table(20_000, rng)
    counts, offsets = value_counts(x, SCHEMA), value_offsets(SCHEMA)
    edges, width = [(0, 1), (1, 2)], 5
    means = np.clip(x.mean(axis=0) + rng.normal(0, 0.01, 9), 0.01, 0.99)  # noisy means
    marginals = attribute_marginals(means, SCHEMA)
    noisy = edge_tables(counts, edges, offsets, width) + rng.normal(0, 30.0, (2, width, width))
    parent, probs = fit_attribute_tree(edges, noisy, 20_000.0, marginals, width)
    assert parent.tolist() == [-1, 0, 1]
    model = AttributeTree(9)
    model.set_dense(torch.as_tensor(SCHEMA.of), torch.as_tensor(parent), torch.as_tensor(probs))
    expected = np.concatenate([q[1:] for q in marginals])
    np.testing.assert_allclose(model.marginals().numpy(), expected, atol=1e-6)
    # without noise the tree draws the records' pair tables, up to sampling error
    parent, probs = fit_attribute_tree(edges, edge_tables(counts, edges, offsets, width), 20_000.0,
                                       attribute_marginals(x.mean(axis=0), SCHEMA), width)
    model.set_dense(torch.as_tensor(SCHEMA.of), torch.as_tensor(parent), torch.as_tensor(probs))
    drawn = model.sample(20_000, torch.Generator().manual_seed(0)).numpy()
    assert (drawn.sum(axis=1) == 3).all()  # one value of every attribute
    assert np.abs(value_counts(drawn, SCHEMA) - counts).max() / 20_000 < 0.01


def _run(tmp_path, name: str, by_attribute: bool, rng: np.random.Generator):
    x = _table(1_500, rng)
    data = BinaryDataset(records=x, item_names=[f"v{j}" for j in range(9)], name="table")
    cfg: Config = tiny_config(tmp_path, **{"name": name, "model.kind": "tree", "partition.method": "none",
                                           "partition.k": 1, "partition.noise_multiplier": 30.0,
                                           "model.mean_noise_multiplier": 2.0, "model.calibrate": False})
    cfg.data.attributes, cfg.data.attribute_sizes = 3, [3, 2, 4]
    cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0, "by_attribute": by_attribute}
    return train(cfg, data=data, progress=False)


def test_a_run_charges_t_minus_one_rounds_and_one_release_and_draws_one_value_per_attribute(tmp_path):
    run_dir, _ = _run(tmp_path, "attributes", True, np.random.default_rng(2))
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    pairs = [e for e in ledger.entries if e.stage == STAGE]
    assert [(e.event, e.count) for e in pairs[:-1]] == [(ExponentialEvent(epsilon=1.0), 2)]  # T - 1 rounds
    release = pairs[-1].event
    assert isinstance(release, DiscreteGaussianEvent) and release.noise_multiplier == 2.0 and pairs[-1].count == 1
    model = load_release(run_dir).models[0]
    assert isinstance(model, AttributeTree) and model.parent.numel() == 3
    drawn = sample_dataset(run_dir, 3_000, seed=0).records
    assert (np.asarray(drawn.sum(axis=1)).ravel() == 3).all()
    items = _run(tmp_path, "items", False, np.random.default_rng(2))[0]  # the tree of items: 8 rounds
    rounds = [e.count for e in PrivacyLedger.load(items / "release" / "ledger.json").entries
              if e.stage == STAGE and isinstance(e.event, ExponentialEvent)]
    assert rounds == [8]


def test_a_tree_over_attributes_needs_the_schema(tmp_path):
    cfg: Config = tiny_config(tmp_path, **{"model.kind": "tree", "partition.method": "none", "partition.k": 1,
                                           "model.calibrate": False})
    cfg.model.options = {"by_attribute": True}
    with pytest.raises(ConfigError, match="by_attribute needs data.attribute_sizes"):
        cfg.validate()


def test_an_attribute_none_of_whose_values_is_modelled_is_always_none():
    """top_items may drop every value of an attribute: it stays a node (the plan counts the declared T), always
    none, and the tree still draws one value of every other attribute."""
    schema = Schema(of=np.array([0, 0, 2, 2]), complete=np.array([True, False, True]))
    rng = np.random.default_rng(3)
    x = np.zeros((2_000, 4), dtype=np.uint8)
    x[np.arange(2_000), rng.integers(0, 2, 2_000)] = 1
    x[np.arange(2_000), 2 + rng.integers(0, 2, 2_000)] = 1
    offsets = value_offsets(schema)
    assert np.diff(offsets).tolist() == [3, 1, 3]
    assert (record_values(x, schema)[:, 1] == 0).all()
    marginals = attribute_marginals(x.mean(axis=0), schema)
    counts = value_counts(x, schema)
    edges = [(0, 1), (1, 2)]
    parent, probs = fit_attribute_tree(edges, edge_tables(counts, edges, offsets, 3), 2_000.0, marginals, 3)
    model = AttributeTree(4)
    model.set_dense(torch.as_tensor(schema.of), torch.as_tensor(parent), torch.as_tensor(probs))
    drawn = model.sample(1_000, torch.Generator().manual_seed(1)).numpy()
    assert (drawn[:, :2].sum(axis=1) == 1).all() and (drawn[:, 2:].sum(axis=1) == 1).all()


def test_rare_values_share_one_group_after_the_others():
    assert value_groups(np.array([0.0, 0.5, 0.01, 0.3, 0.02]), 0.05).tolist() == [2, 0, 2, 1, 2]
    assert value_groups(np.array([0.01, 0.02]), 0.05).tolist() == [0, 0]  # none common: one group
    assert value_groups(np.array([0.4, 0.6]), 0.0).tolist() == [0, 1]  # no threshold: every value its own


def test_values_of_one_truth_rarely_spread_beyond_their_noise_and_skewed_values_always_do():
    """The likelihood-ratio test of a spread keeps its level on values around one frequency (censored at the floor
    as the noisy means are) and finds a skewed truth hidden in noise of the same size."""
    noise, values, floor = 0.01, 60, 1e-5
    flat = [spread_beyond_noise(np.maximum(1.0 / values + rng.normal(0.0, noise, values), floor), noise, floor)
            for rng in map(np.random.default_rng, range(40))]
    skewed = [spread_beyond_noise(np.maximum(rng.dirichlet(np.full(values, 0.2)) + rng.normal(0.0, noise, values),
                                             floor), noise, floor) for rng in map(np.random.default_rng, range(40))]
    assert sum(flat) <= 6 and all(skewed)  # at most 6 of 40 (level 0.05: 2 expected), every skewed one
    assert spread_beyond_noise(np.array([0.2, 0.3]), 0.0, floor)  # no noise: any spread is real


def test_a_heavy_group_of_rare_values_shares_its_frequency_equally_unless_they_spread():
    """A group of rare values holding the attribute's frequency (all of it, or most beside a common value): equal
    shares of its values not known (none, never held) where they do not spread beyond their noise, else in
    proportion to them; a light group of rare values: always in proportion."""
    noise, floor = 0.01, 1e-5
    flat = np.array([0.0, 0.02, 0.005, 0.015, floor, 0.03, 0.01, 0.012, 0.008])
    known = np.arange(flat.size) == 0
    one = np.zeros(flat.size, dtype=np.int64)
    shares = within_shares(flat, one, known, noise, floor)
    assert shares[0] == 0.0 and np.allclose(shares[1:], 1.0 / 8)
    skewed = np.array([0.0, 0.6, 0.3, floor, floor, 0.05, floor, 0.05, floor])
    np.testing.assert_allclose(within_shares(skewed, one, known, noise, floor), skewed / skewed.sum())
    common = np.array([0.0, 0.05, 0.02, 0.005, 0.015, floor, 0.03, 0.01, 0.012])  # one common value, a heavy tail
    tail = (np.arange(common.size) != 1).astype(np.int64)  # rare values after the common one (``value_groups``)
    shares = within_shares(common, tail, known, noise, floor)
    assert shares[1] == 1.0 and np.allclose(shares[2:], 1.0 / 7)
    light = np.array([0.0, 0.95, 0.02, 0.005, 0.015, floor, 0.03, 0.01, 0.012])  # the rare values hold too little
    np.testing.assert_allclose(within_shares(light, tail, known, noise, floor),
                               light / np.bincount(tail, weights=light)[tail])


def test_grouped_tables_keep_a_record_in_one_cell_and_the_tree_keeps_every_value_frequency():
    """The pair tables over groups have the sensitivity charged; the expanded tree's frequencies are the noisy
    marginals of every value, a rare one's included."""
    rng = np.random.default_rng(4)
    x = _table(2_000, rng)
    means = np.clip(x.mean(axis=0) + rng.normal(0, 0.01, 9), 0.001, 0.999)
    marginals = attribute_marginals(means, SCHEMA)
    groups = [value_groups(q, 0.2) for q in marginals]
    assert [int(g.max()) + 1 for g in groups] == [4, 3, 3]  # none merged everywhere, and two values of attribute 2
    counts, (q, offsets) = value_counts(x, SCHEMA, groups), merged_marginals(marginals, groups)
    assert np.diff(offsets).tolist() == [4, 3, 3] and [v.sum() for v in q] == pytest.approx([1, 1, 1])
    join = np.eye(10)[group_columns(groups)]  # [D, G]: each value to its group
    assert np.array_equal(counts, join.T @ value_counts(x, SCHEMA) @ join)  # the values' counts summed in groups
    extra = np.zeros((1, 9), dtype=np.uint8)
    extra[0, [1, 3, 8]] = 1
    moved = value_counts(np.vstack([x, extra]), SCHEMA, groups) - counts
    edges = [(0, 1), (1, 2)]
    assert [np.abs(t).sum() for t in edge_tables(moved, edges, offsets, 4)] == [1.0, 1.0]
    cells = edge_cells(edges, offsets, 4)  # what is released: each table's own cells, 4 x 3 and 3 x 3, no padding
    assert cells.sum() == 4 * 3 + 3 * 3 and not edge_tables(counts, edges, offsets, 4)[~cells].any()
    noisy = edge_tables(counts, edges, offsets, 4) + rng.normal(0, 30.0, (2, 4, 4))
    parent, probs = fit_attribute_tree(edges, noisy, 2_000.0, q, 4)
    model = AttributeTree(9)
    model.set_tree(torch.as_tensor(SCHEMA.of), torch.as_tensor(parent),
                   **{k: torch.as_tensor(v) for k, v in tree_arrays(parent, probs, marginals, groups, 5).items()})
    np.testing.assert_allclose(model.marginals().numpy(), np.concatenate([v[1:] for v in marginals]), atol=1e-6)


def test_a_frequent_value_keeps_its_frequency_beside_many_noisy_rare_ones(tmp_path):
    """The tree over attributes divides by the partition's noisy count: the noisy means' sums, clipped at FLOOR,
    count every rare value's positive noise, and sizing the part by them shrank each frequent value."""
    rng = np.random.default_rng(5)
    n, rare = 2_000, 80
    x = np.zeros((n, 2 + rare), dtype=np.uint8)
    x[np.arange(n), rng.integers(0, 2, n)] = 1
    x[np.arange(n), np.where(rng.random(n) < 0.9, 2, 3 + rng.integers(0, rare - 1, n))] = 1
    data = BinaryDataset(records=x, item_names=[f"v{j}" for j in range(2 + rare)], name="table")

    def frequent(name: str) -> float:
        cfg: Config = tiny_config(tmp_path, **{"name": name, "model.kind": "tree", "partition.method": "none",
                                               "partition.k": 1, "partition.noise_multiplier": 2.0,
                                               "model.mean_noise_multiplier": 40.0, "model.mean_clip": 2 ** 0.5,
                                               "model.calibrate": False})
        cfg.data.attributes, cfg.data.attribute_sizes = 2, [2, rare]
        cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0, "by_attribute": True}
        run_dir, _ = train(cfg, data=data, progress=False)
        return float(load_release(run_dir).models[0].marginals()[2])

    assert abs(frequent("count") - 0.9) < 0.05
