"""Second parents over a declared table's attributes: triples' tables, their sensitivity, their fit and draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.config import Config, ModelConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.models import build_model
from dpgm.models.attribute_tree import AttributeTree
from dpgm.pipeline.run import train
from dpgm.privacy.events import DiscreteGaussianEvent, ExponentialEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import sample_dataset
from dpgm.stages.attribute_pairs import (
    attribute_marginals,
    edge_tables,
    fit_attribute_tree,
    record_values,
    tree_arrays,
    value_counts,
    value_offsets,
)
from dpgm.stages.attribute_triples import (
    rake_triple,
    second_candidates,
    triple_conditional,
    triple_counts,
    triple_distances,
    triple_prediction,
    triple_slots,
)
from dpgm.stages.attributes import Schema
from dpgm.stages.item_pairs import STAGE
from tests.training.test_run import tiny_config

#: Three yes/no attributes, the third the exclusive or of the first two: every pair is independent.
XOR = Schema(of=np.array([0, 1, 2]), complete=np.array([True, True, True]))


def _xor(n: int, rng: np.random.Generator) -> np.ndarray:
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    return np.stack([a, b, a ^ b], axis=1).astype(np.uint8)


def _fitted(x: np.ndarray, schema: Schema, edges: list[tuple[int, int]], second: dict[int, int]) -> AttributeTree:
    """The tree of ``edges`` with ``second`` parents fitted to x's exact counts (every value its own group)."""
    n, sizes = float(len(x)), np.bincount(schema.of) + 1
    offsets, width = value_offsets(schema), int(sizes.max())
    marginals = attribute_marginals(x.mean(axis=0), schema)
    parent, probs = fit_attribute_tree(edges, edge_tables(value_counts(x, schema), edges, offsets, width), n,
                                       marginals, width)
    groups = [np.arange(s) for s in sizes]
    triples = {t: triple_conditional(triple_counts(x, schema, groups, parent, [(t, w)]).reshape(
        sizes[w], sizes[parent[t]], sizes[t]), n, parent, probs, marginals, t, w) for t, w in second.items()}
    seconds = np.full(len(sizes), -1)
    seconds[list(second)] = list(second.values())
    model = AttributeTree(len(schema.of))
    model.set_tree(torch.as_tensor(schema.of), torch.as_tensor(parent), **{
        k: torch.as_tensor(v) for k, v in tree_arrays(parent, probs, marginals, groups, width, seconds, triples).items()})
    return model


def test_a_second_parent_is_the_parents_parent_or_an_earlier_sibling():
    assert second_candidates(np.array([-1, 0, 0, 1, 1])) == [[], [], [1], [0], [0, 3]]
    # a triple is asked for only where its table holds at least one noise std of records per cell
    slots = triple_slots(np.array([-1, 0, 0, 1, 1]), [2, 2, 2, 10, 2], 400.0, 11.0)
    assert slots == [(2, [1]), (4, [0])]  # a table with 3 has 40 cells: 10 records each, not 11


def test_a_record_moves_each_triple_table_by_one_cell_and_each_score_by_at_most_one():
    """The sensitivities charged: 1 per second parent's score, sqrt(T - 2) for at most T - 2 triples' tables."""
    rng = np.random.default_rng(0)
    schema = Schema(of=np.array([0, 0, 1, 1, 2, 3, 3, 3]), complete=np.array([True] * 4))
    base = (rng.random((300, 8)) < 0.3).astype(np.uint8)
    groups = [np.array([0, 1, 1]), np.array([0, 1, 2]), np.array([0, 1]), np.array([0, 0, 1, 2])]
    parent = np.array([-1, 0, 1, 1])
    asked = [(t, w) for t, ws in triple_slots(parent, [2, 3, 2, 3], 300.0, 0.1) for w in ws]
    assert asked == [(2, 0), (3, 0), (3, 2)]
    chosen = [(2, 0), (3, 2)]  # one per attribute: T - 2 tables
    shapes = [(2, 3, 2), (2, 3, 3), (2, 3, 3)]
    prediction = rng.dirichlet(np.ones(12)).reshape(2, 3, 2)
    for _ in range(50):
        extra = (rng.random((1, 8)) < 0.4).astype(np.uint8)
        before = triple_counts(base, schema, groups, parent, asked)
        after = triple_counts(np.vstack([base, extra]), schema, groups, parent, asked)
        moved = np.split(after - before, np.cumsum([math.prod(s) for s in shapes])[:-1])
        assert [np.abs(m).sum() for m in moved] == [1.0, 1.0, 1.0]
        picked = np.concatenate([moved[asked.index(c)] for c in chosen])
        assert np.linalg.norm(picked) == pytest.approx(math.sqrt(len(schema.complete) - 2))
        shift = (triple_distances(after[:12].reshape(2, 3, 2), 300.0, prediction)
                 - triple_distances(before[:12].reshape(2, 3, 2), 300.0, prediction))
        assert abs(shift) <= 1.0 + 1e-9


def test_a_raked_triple_keeps_both_of_the_trees_joints():
    rng = np.random.default_rng(1)
    first = rng.dirichlet(np.ones(6)).reshape(2, 3)
    second = first.sum(axis=0)[:, None] * rng.dirichlet(np.ones(4), size=3)
    noisy = rng.dirichlet(np.ones(24)).reshape(2, 3, 4) + rng.normal(0, 0.05, (2, 3, 4))
    joint = rake_triple(noisy, first, second)
    assert (joint >= 0).all()
    np.testing.assert_allclose(joint.sum(axis=2), first, atol=1e-8)
    np.testing.assert_allclose(joint.sum(axis=0), second, atol=1e-8)


def test_without_noise_a_second_parent_draws_what_no_tree_can():
    """a xor b: every pair independent, so a tree draws the third attribute by a coin; its second parent, measured
    exactly, draws a xor b, and the model's exact frequencies are the data's."""
    x = _xor(4_000, np.random.default_rng(2))
    edges = [(0, 1), (1, 2)]
    tree, triples = _fitted(x, XOR, edges, {}), _fitted(x, XOR, edges, {2: 0})
    generator = torch.Generator().manual_seed(0)
    plain, drawn = tree.sample(4_000, generator).numpy(), triples.sample(4_000, generator).numpy()
    assert abs((plain[:, 2] == (plain[:, 0].astype(int) ^ plain[:, 1].astype(int))).mean() - 0.5) < 0.05
    assert (drawn[:, 2] == (drawn[:, 0].astype(int) ^ drawn[:, 1].astype(int))).all()
    np.testing.assert_allclose(triples.marginals().numpy(), x.mean(axis=0), atol=1e-8)
    rows = triples.rows(torch.as_tensor(record_values(x, XOR)))
    assert rows[:, 2].max() == 3 and (rows[:, 1] == torch.as_tensor(x[:, 0].astype(np.int64))).all()
    assert triples.record_losses(torch.as_tensor(x, dtype=torch.float32), triples.step_noise(len(x), None)).mean() \
        < tree.record_losses(torch.as_tensor(x, dtype=torch.float32), tree.step_noise(len(x), None)).mean() - 0.5


def test_a_saved_model_keeps_its_second_parents_and_a_stray_one_is_refused():
    model = _fitted(_xor(500, np.random.default_rng(3)), XOR, [(0, 1), (1, 2)], {2: 0})
    fresh = build_model(ModelConfig(kind="tree", options={"by_attribute": True}), 3)
    fresh.load_state_dict(model.state_dict())
    assert fresh.second.tolist() == [-1, -1, 0]
    np.testing.assert_allclose(fresh.marginals().numpy(), model.marginals().numpy())
    with pytest.raises(ValueError, match="second parent"):  # 2's parent is 1, a root's child: no grandparent
        model.set_tree(model.attribute, model.parent, model.groups, model.within, model.tables, model.shapes,
                       torch.tensor([-1, 2, -1]))


def test_the_prediction_is_the_trees_joint():
    x = _xor(2_000, np.random.default_rng(4))
    marginals = attribute_marginals(x.mean(axis=0), XOR)
    parent, probs = fit_attribute_tree([(0, 1), (1, 2)], edge_tables(value_counts(x, XOR), [(0, 1), (1, 2)],
                                                                     value_offsets(XOR), 3), 2_000.0, marginals, 3)
    joint = triple_prediction(parent, probs, marginals, 2, 0)
    assert joint.shape == (2, 2, 2) and joint.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(joint.sum(axis=(0, 1)), marginals[2], atol=1e-9)


def _table(n: int, rng: np.random.Generator) -> np.ndarray:
    """Three attributes of 2 values each (a xor b) plus a fourth of 3 following a."""
    x3 = _xor(n, rng)
    d = np.where(rng.random(n) < 0.8, x3[:, 0], 2)
    x = np.zeros((n, 3 + 3), dtype=np.uint8)
    x[:, :3] = x3
    x[np.arange(n), 3 + d] = 1
    return x


def test_a_run_charges_the_second_parents_rounds_and_their_release(tmp_path):
    rng = np.random.default_rng(5)
    data = BinaryDataset(records=_table(2_000, rng), item_names=[f"v{j}" for j in range(6)], name="table")
    cfg: Config = tiny_config(tmp_path, **{"name": "triples", "model.kind": "tree", "partition.method": "none",
                                           "partition.k": 1, "partition.noise_multiplier": 30.0,
                                           "model.mean_noise_multiplier": 2.0, "model.calibrate": False})
    cfg.data.attributes, cfg.data.attribute_sizes = 4, [1, 1, 1, 3]
    cfg.model.options = {"select_epsilon": 1.0, "pair_noise_multiplier": 2.0, "by_attribute": True,
                         "triple_noise_multiplier": 3.0}
    run_dir, _ = train(cfg, data=data, progress=False)
    entries = [e for e in PrivacyLedger.load(run_dir / "release" / "ledger.json").entries if e.stage == STAGE]
    rounds = sum(e.count for e in entries if isinstance(e.event, ExponentialEvent))
    releases = [e.event.noise_multiplier for e in entries if isinstance(e.event, DiscreteGaussianEvent)]
    model = load_release(run_dir).models[0]
    chosen = int((model.second >= 0).sum())
    assert 1 <= chosen <= 2 and rounds == 3 + chosen and releases == [2.0, 3.0]
    drawn = sample_dataset(run_dir, 2_000, seed=0).records
    held = np.asarray(drawn.todense() if hasattr(drawn, "todense") else drawn)
    assert (held[:, 3:].sum(axis=1) == 1).all()  # one value of the 3-valued attribute, as the schema says


def test_triples_are_for_a_tree_over_attributes():
    with pytest.raises(ValueError, match="triple_noise_multiplier"):
        build_model(ModelConfig(kind="tree", options={"triple_noise_multiplier": 2.0}), 3)
