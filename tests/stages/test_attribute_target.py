"""The declared target as every attribute's second parent: the rooted tree, its tables' sensitivity, fit and draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpgm.models.attribute_tree import AttributeTree, seconds_allowed
from dpgm.models.tree import TreeOptions
from dpgm.stages.attribute_pairs import (
    attribute_marginals,
    edge_cells,
    edge_tables,
    fit_attribute_tree,
    record_values,
    tree_arrays,
    value_counts,
    value_offsets,
)
from dpgm.stages.attribute_target import beyond_noise, rooted_parents, target_conditionals, target_slots
from dpgm.stages.attribute_triples import triple_counts
from dpgm.stages.attributes import Schema

#: Four yes/no attributes, the target first, then b, c = b xor target and d = c xor target (= b): every pair with
#: c is independent.
CHAIN = Schema(of=np.arange(4), complete=np.array([True] * 4), target=0)
EDGES = [(0, 1), (1, 2), (2, 3)]


def _chain(n: int, rng: np.random.Generator) -> np.ndarray:
    target = rng.integers(0, 2, n)
    b = rng.integers(0, 2, n)
    c = b ^ target
    return np.stack([target, b, c, c ^ target], axis=1).astype(np.uint8)


def _fitted(x: np.ndarray, schema: Schema, edges: list[tuple[int, int]], with_target: bool) -> AttributeTree:
    """The tree of ``edges`` rooted at the target, every attribute whose parent is not the target drawn given it
    too (``with_target``), fitted to x's exact counts (every value its own group), as ``target_trees`` fits it."""
    n, sizes, target = float(len(x)), np.bincount(schema.of) + 1, int(schema.target)
    offsets, width = value_offsets(schema), int(sizes.max())
    marginals = attribute_marginals(x.mean(axis=0), schema)
    groups = [np.arange(s) for s in sizes]
    parent = rooted_parents(edges, len(sizes), target)
    slot = [t for t in range(len(sizes)) if parent[t] >= 0 and parent[t] != target] if with_target else []
    cubes = {t: triple_counts(x, schema, groups, parent, [(t, target)]).reshape(
        sizes[target], sizes[parent[t]], sizes[t]) for t in slot}
    tables = edge_tables(value_counts(x, schema), edges, offsets, width)
    for e, (u, v) in enumerate(edges):  # a triple's pair table is its margin over the target
        child = v if parent[v] == u else u
        if child in cubes:
            margin = cubes[child].sum(axis=0)
            tables[e] = 0.0
            tables[e, :margin.shape[0], :margin.shape[1]] = margin if child == v else margin.T
    parent, probs = fit_attribute_tree(edges, tables, n, marginals, width, root=target)
    seconds = np.full(len(sizes), -1)
    seconds[slot] = target
    model = AttributeTree(len(schema.of))
    arrays = tree_arrays(parent, probs, marginals, groups, width, seconds,
                         target_conditionals(parent, probs, marginals, target, cubes, n, noise=1.0))
    model.set_tree(torch.as_tensor(schema.of), torch.as_tensor(parent),
                   **{k: torch.as_tensor(v) for k, v in arrays.items()})
    return model


def test_the_tree_is_rooted_at_the_target_and_a_triple_asked_where_its_cells_hold_records():
    assert rooted_parents([(0, 1), (1, 2), (1, 3)], 4, 2).tolist() == [1, 2, -1, 1]
    parent = np.array([1, 2, -1, 1])
    # the target's children keep their pair; 3's table of 2 x 2 x 10 cells holds 400 / 40 = 10 records a cell
    assert target_slots(parent, [2, 2, 2, 10], 400.0, 10.0, 2) == [0, 3]
    assert target_slots(parent, [2, 2, 2, 10], 400.0, 11.0, 2) == [0]


def test_a_record_moves_each_of_the_t_minus_1_tables_by_one_cell():
    """The sensitivity charged, sqrt(T - 1): the target's children's pair tables and the others' triples."""
    rng = np.random.default_rng(0)
    schema = Schema(of=np.array([0, 0, 1, 1, 2, 3, 3, 3]), complete=np.array([True] * 4), target=1)
    base = (rng.random((300, 8)) < 0.3).astype(np.uint8)
    groups = [np.array([0, 1, 1]), np.array([0, 1, 2]), np.array([0, 1]), np.array([0, 0, 1, 2])]
    edges = [(0, 1), (1, 2), (0, 3)]
    parent = rooted_parents(edges, 4, 1)
    slot = target_slots(parent, [2, 3, 2, 3], 300.0, 0.1, 1)
    assert parent.tolist() == [1, -1, 1, 0] and slot == [3]
    pairs = [e for e in edges if e != (0, 3)]
    offsets = np.concatenate([[0], np.cumsum([2, 3, 2, 3])])

    def released(x: np.ndarray) -> np.ndarray:
        counts = value_counts(x, schema, groups, size=10)
        return np.concatenate([edge_tables(counts, pairs, offsets, 3)[edge_cells(pairs, offsets, 3)],
                               triple_counts(x, schema, groups, parent, [(3, 1)])])

    for _ in range(50):
        extra = (rng.random((1, 8)) < 0.4).astype(np.uint8)
        moved = released(np.vstack([base, extra])) - released(base)
        assert np.linalg.norm(moved) == pytest.approx(math.sqrt(4 - 1)) and set(moved) <= {0.0, 1.0}


def test_without_noise_the_target_as_second_parent_draws_what_no_tree_can():
    """c = b xor target and d = c xor target: a tree rooted at the target draws c and d by a coin given their
    parents; given the target too, exact counts draw them exactly, and the model's frequencies are the data's."""
    x = _chain(4_000, np.random.default_rng(1))
    tree, tan = _fitted(x, CHAIN, EDGES, False), _fitted(x, CHAIN, EDGES, True)
    assert tree.parent.tolist() == [-1, 0, 1, 2] and tan.second.tolist() == [-1, -1, 0, 0]
    generator = torch.Generator().manual_seed(0)
    plain, drawn = (m.sample(4_000, generator).numpy().astype(int) for m in (tree, tan))
    assert abs((plain[:, 2] == plain[:, 1] ^ plain[:, 0]).mean() - 0.5) < 0.05
    assert (drawn[:, 2] == drawn[:, 1] ^ drawn[:, 0]).all() and (drawn[:, 3] == drawn[:, 1]).all()
    np.testing.assert_allclose(tan.marginals().numpy(), x.mean(axis=0), atol=1e-8)
    rows = tan.rows(torch.as_tensor(record_values(x, CHAIN)))
    assert (rows[:, 3] == torch.as_tensor(2 * x[:, 2] + x[:, 0])).all()  # the parent's value, then the target's


def test_a_link_to_the_target_is_kept_only_where_its_table_departs_from_the_tree_beyond_its_noise():
    rng = np.random.default_rng(2)
    prediction = 500.0 * rng.dirichlet(np.ones(12)).reshape(2, 3, 2)
    kept = [beyond_noise(prediction + rng.normal(0.0, 10.0, prediction.shape), prediction, 10.0) for _ in range(2_000)]
    assert 0.005 < np.mean(kept) < 0.05  # noise alone: about 2%
    linked = prediction * np.array([1.3, 0.7])[:, None, None]  # the target moves every cell by 15-30%
    assert beyond_noise(linked + rng.normal(0.0, 10.0, prediction.shape), prediction, 10.0) or linked.min() < 20


def test_the_target_is_a_second_parent_only_where_every_one_above_is_the_target_too():
    parent = [-1, 0, 1, 1, 3]
    assert seconds_allowed(parent, [-1, -1, 0, 0, 0])
    assert seconds_allowed(parent, [-1, -1, 0, 2, -1])  # an earlier sibling, below it no second
    assert not seconds_allowed(parent, [-1, -1, 0, 2, 0])  # 4's parent 3 has a sibling as second: no joint with 0
    assert not seconds_allowed(parent, [-1, -1, -1, -1, 2])  # neither a neighbour of 3 nor the root
    assert not seconds_allowed(parent, [0, -1, -1, -1, -1])  # a root has no second


def _linked(n: int):
    """The shared test frame with code a function of region that smoker (the target) switches, each pair of the
    three independent but code given region following smoker; member, age and weight follow smoker in 60% of the
    records."""
    from tests.tables.test_fronts import frame

    df, rng = frame(n), np.random.default_rng(7)
    yes = (df.smoker == "yes").to_numpy()
    region = df.region.map({"north": 0, "south": 1, "east": 2}).to_numpy()
    df["code"] = np.where(yes, (region + 1) % 3, region) + 1
    for column, (a, b) in {"member": (True, False), "age": (80, 20), "weight": (150.0, 45.0)}.items():
        pick = rng.random(n) < 0.6
        df.loc[pick, column] = np.where(yes, a, b)[pick]
    return df


def _synthesizer(target_parent: bool, target: str | None = "smoker"):
    import dpgm
    from tests.tables.test_fronts import SCHEMA

    schema = {**SCHEMA, **({"target": target} if target else {})}
    options = {"by_attribute": True, "select_epsilon": 0.05, "pair_noise_multiplier": 5.0,
               **({"target_parent": True} if target_parent else {})}
    return dpgm.Synthesizer(epsilon=3.0, schema=schema, seed=0, options={"model": {"kind": "tree", "options": options}})


def _tree_releases(synth, folder) -> list[float]:
    """The noise multipliers of the trees' Gaussian releases on a saved release's ledger, in order."""
    from dpgm.privacy.events import DiscreteGaussianEvent
    from dpgm.privacy.ledger import PrivacyLedger
    from dpgm.stages.item_pairs import STAGE

    synth.save(folder)
    return [e.event.noise_multiplier for e in PrivacyLedger.load(folder / "ledger.json").entries
            if e.stage == STAGE and isinstance(e.event, DiscreteGaussianEvent)]


def test_a_table_run_roots_its_tree_at_the_declared_target_at_the_charge_of_the_pairs(tmp_path):
    """model.options.target_parent: every attribute whose parent is not the target has it as second parent, the
    ledger's charge for the trees is the plain tree's (one release), and the release keeps the schema's columns."""
    pytest.importorskip("pandas")
    df = _linked(3_000)
    tan, plain = _synthesizer(True).fit(df), _synthesizer(False).fit(df)
    (model,) = tan.release_.mixture.models
    target = 3  # smoker: the schema's fourth column
    parent, second = model.parent.tolist(), model.second.tolist()
    assert parent[target] == -1
    assert all(s in (-1, target) and (s < 0 or p not in (-1, target)) for p, s in zip(parent, second))
    assert target in (second[2], second[4])  # code given region follows smoker, or region given code
    assert tan.privacy_report["stage_epsilons"] == pytest.approx(plain.privacy_report["stage_epsilons"])
    assert _tree_releases(tan, tmp_path / "tan") == _tree_releases(plain, tmp_path / "plain") == [5.0]
    out = tan.sample(2_000, seed=1)
    assert list(out.columns) == list(df.columns) and set(out.smoker) <= {"no", "yes"}

    def switched(frame) -> float:  # how often code is region's switched by smoker, as in the data
        region = frame.region.map({"north": 0, "south": 1, "east": 2}).to_numpy()
        return float((frame.code.to_numpy() == np.where(frame.smoker == "yes", (region + 1) % 3, region) + 1).mean())

    assert switched(out) > 0.8 and switched(plain.sample(2_000, seed=1)) < 0.6


def test_the_target_as_second_parent_needs_a_declared_target():
    from dpgm.errors import ConfigError

    pytest.importorskip("pandas")
    from tests.tables.test_fronts import frame

    with pytest.raises(ConfigError, match="target_parent needs data.schema to declare its target"):
        _synthesizer(True, target=None).fit(frame(100))
    with pytest.raises(ValueError, match="target_parent is for a tree by_attribute"):
        TreeOptions(target_parent=True)


def test_beside_the_pairs_the_triples_are_a_release_of_their_own(tmp_path):
    """With triple_noise_multiplier the pairs' tables are the plain tree's release and the triples' one more, of
    sensitivity sqrt(T - 2) at that multiplier."""
    pytest.importorskip("pandas")
    synth = _synthesizer(True)
    synth.options["model"]["options"]["triple_noise_multiplier"] = 7.0
    synth.fit(_linked(3_000))
    (model,) = synth.release_.mixture.models
    assert (model.second == 3).sum() >= 1
    assert _tree_releases(synth, tmp_path / "release") == [5.0, 7.0]
