"""A tree instead of DP-SGD at or above ``model.tree_above``: which model is fitted, what each branch
charges, and the same epsilon whichever way the measured dependence falls."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from dpgm.artifact import load_release
from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.independent import Independent
from dpgm.models.tree import Tree, TreeOptions
from dpgm.pipeline.run import train
from dpgm.privacy.accountant import ledger_rdp
from dpgm.privacy.calibrate import plan_rdp
from dpgm.privacy.events import ChoiceEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.report import summary_markdown
from dpgm.stages.dependence import heaviest_tree, independence_distances, plain_counts
from dpgm.stages.model_choice import STAGE, TRAINED, TREE, tree_chosen, tree_releases
from tests.stages.test_item_pairs import _chain_records

TREE_OPTIONS = {"select_epsilon": 0.2, "pair_noise_multiplier": 3.0}


def _config(tmp_path, name: str, tree_above: float, **model):
    return config_from_dict({
        "runs_dir": str(tmp_path), "name": name, "privacy": {"delta": 1e-6, "target_epsilon": 8.0}, "seed": 4,
        "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}, "mean_noise_multiplier": 2.0, "calibrate": True,
                  "tree_above": tree_above, "tree_options": TREE_OPTIONS, **model},
        "training": {"epochs": 0.5, "sampling_rate": 0.05, "clipping": "fixed"},
        "partition": {"method": "none", "noise_multiplier": 4.0, "dependence_noise_multiplier": 3.0}})


def _entries(ledger: PrivacyLedger, stage: str) -> Counter:
    counts: Counter = Counter()
    for entry in ledger.entries:
        if entry.stage == stage:
            counts[entry.event] += entry.count
    return counts


def test_the_tree_or_dp_sgd_by_the_measured_dependence_at_the_same_epsilon(tmp_path) -> None:
    x = _chain_records(4_000, 6, np.random.default_rng(5))
    data = BinaryDataset(records=x, item_names=[f"i{j}" for j in range(6)])
    exact = heaviest_tree(independence_distances(plain_counts(x))) / (len(x) * 5)
    tree_dir, tree = train(_config(tmp_path, "tree", tree_above=exact / 2), data=data, progress=False)
    vae_dir, vae = train(_config(tmp_path, "vae", tree_above=exact * 2), data=data, progress=False)
    assert tree["dependence"]["tree_chosen"] and not vae["dependence"]["tree_chosen"]
    assert tree["plan"]["model"].startswith("tree: the items") and tree["plan"]["steps_planned"] == 0
    assert vae["plan"]["model"] == "vae" and vae["plan"]["steps_planned"] > 0
    ledgers = {name: PrivacyLedger.load(d / "release" / "ledger.json") for name, d in
               (("tree", tree_dir), ("vae", vae_dir))}
    (tree_choice,), (vae_choice,) = (list(_entries(ledgers[n], STAGE)) for n in ("tree", "vae"))
    assert isinstance(tree_choice, ChoiceEvent) and (tree_choice.taken, vae_choice.taken) == (TREE, TRAINED)
    assert tree_choice.branches == vae_choice.branches  # DP-SGD's noise the same in both: the ledgers agree
    # each branch charges what the choice declared for it (the pair counts drawn as a discrete Gaussian: same curve)
    charged = {name: ledger_rdp([e for e in ledgers[name].entries if e.stage == stage])
               for name, stage in (("tree", "item_pairs"), ("vae", "training"))}
    np.testing.assert_allclose(charged["tree"], plan_rdp(tree_releases(TreeOptions(**TREE_OPTIONS), 6)), rtol=1e-12)
    assert _entries(ledgers["vae"], "training") == Counter(dict(vae_choice.branches[TRAINED]))
    assert not _entries(ledgers["tree"], "training") and not _entries(ledgers["vae"], "item_pairs")
    assert tree["epsilon"] == pytest.approx(vae["epsilon"], rel=1e-9) and vae["epsilon"] <= 8.0
    assert vae["epsilon"] > 8.0 - 1e-3  # DP-SGD calibrated to the target, the choice included
    released = load_release(tree_dir / "release")
    draws = released.models[0].sample(20_000, generator=__import__("torch").Generator().manual_seed(0)).numpy()
    assert np.abs(draws.mean(axis=0) - x.mean(axis=0)).max() < 0.05  # a tree fitted to the noisy statistics
    assert "at or above tree_above" in summary_markdown(tree, dataset="chain", version="0", commit="x")
    assert "below tree_above" in summary_markdown(vae, dataset="chain", version="0", commit="x")


def test_tree_above_zero_never_chooses_and_a_measurement_at_the_threshold_does() -> None:
    cfg = config_from_dict({"partition": {"dependence_noise_multiplier": 1.0}})
    assert not tree_chosen(cfg, 0.5) and not tree_chosen(cfg, None)
    cfg.model.tree_above = 0.03
    assert tree_chosen(cfg, 0.03) and tree_chosen(cfg, 0.5) and not tree_chosen(cfg, 0.0299)
    assert not tree_chosen(cfg, None)


@pytest.mark.parametrize(("settings", "message"), [
    ({"model": {"tree_above": 0.03}}, "dependence_noise_multiplier"),
    ({"model": {"tree_above": 0.03, "kind": "tree"}, "partition": {"dependence_noise_multiplier": 1.0}},
     "trained by DP-SGD or kind independent"),
    ({"model": {"tree_above": 0.03, "pairs_noise_multiplier": 2.0}, "partition": {"dependence_noise_multiplier": 1.0}},
     "pairs_noise_multiplier"),
    ({"model": {"tree_above": -1.0}}, ">= 0"),
])
def test_a_tree_above_without_what_it_needs_is_refused(settings, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(settings)


def test_a_single_item_tree_releases_nothing() -> None:
    assert tree_releases(TreeOptions(), 1) == ()


def test_a_tree_over_attributes_declares_its_t_minus_one_rounds_in_the_choice() -> None:
    """A tree chosen on the measured dependence whose options span a declared table's attributes: the choice's
    tree branch holds T - 1 selection rounds, as the attribute tree spends (``item_pairs``), not m - 1."""
    from dpgm.stages.model_choice import choice, tree_nodes

    cfg = config_from_dict({"data": {"attribute_sizes": [3, 2, 4]}})
    cfg.model.tree_options = {"select_epsilon": 0.5, "pair_noise_multiplier": 3.0, "by_attribute": True}
    options = TreeOptions(**cfg.model.tree_options)
    assert tree_nodes(cfg, options, 9) == 3
    assert choice(cfg, 9, (), TREE).branches[0] == tree_releases(options, 3)
    assert tree_releases(options, 3)[0][1] == 2
    assert tree_nodes(cfg, TreeOptions(), 9) == 9  # a tree of items: every item a node


def _untrained_config(tmp_path, name: str, tree_above: float):
    return config_from_dict({
        "runs_dir": str(tmp_path), "name": name, "privacy": {"delta": 1e-6}, "seed": 4,
        "model": {"kind": "independent", "mean_noise_multiplier": 2.0, "calibrate": True, "tree_above": tree_above,
                  "tree_options": TREE_OPTIONS},
        "partition": {"method": "none", "noise_multiplier": 4.0, "dependence_noise_multiplier": 3.0}})


def test_a_tree_or_independent_items_whose_means_take_its_budget_at_the_same_epsilon(tmp_path) -> None:
    x = _chain_records(4_000, 6, np.random.default_rng(5))
    data = BinaryDataset(records=x, item_names=[f"i{j}" for j in range(6)])
    exact = heaviest_tree(independence_distances(plain_counts(x))) / (len(x) * 5)
    tree_dir, tree = train(_untrained_config(tmp_path, "tree", exact / 2), data=data, progress=False)
    ind_dir, ind = train(_untrained_config(tmp_path, "ind", exact * 2), data=data, progress=False)
    assert tree["dependence"]["tree_chosen"] and not ind["dependence"]["tree_chosen"]
    assert ind["plan"]["model"] == "independent" and tree["plan"]["model"].startswith("tree: the items")
    ledgers = {name: PrivacyLedger.load(d / "release" / "ledger.json") for name, d in
               (("tree", tree_dir), ("ind", ind_dir))}
    (tree_choice,), (ind_choice,) = (list(_entries(ledgers[n], STAGE)) for n in ("tree", "ind"))
    assert (tree_choice.taken, ind_choice.taken) == (TREE, TRAINED) and tree_choice.branches == ind_choice.branches
    # the choice is charged before the means, whose multiplier follows it: the tree's 1 / sigma^2 moves to them
    for ledger in ledgers.values():
        stages = [e.stage for e in ledger.entries]
        assert stages.index(STAGE) < stages.index("part_means")
    (means_tree,), (means_ind,) = (list(_entries(ledgers[n], "part_means")) for n in ("tree", "ind"))
    moved = 5 * TREE_OPTIONS["select_epsilon"] ** 2 / 4 + 1 / TREE_OPTIONS["pair_noise_multiplier"] ** 2
    assert means_tree.noise_multiplier == 2.0
    assert means_ind.noise_multiplier ** -2 == pytest.approx(2.0 ** -2 + moved, rel=1e-12)
    (extra, count), = ind_choice.branches[TRAINED]
    assert count == 1 and extra.noise_multiplier ** -2 == pytest.approx(moved, rel=1e-12)
    # the independent branch's curve is at least the tree's at every order: the ledgers end at one epsilon
    assert np.all(plan_rdp(ind_choice.branches[TRAINED]) >= plan_rdp(tree_choice.branches[TREE]) - 1e-15)
    assert not _entries(ledgers["ind"], "item_pairs") and _entries(ledgers["tree"], "item_pairs")
    assert tree["epsilon"] == pytest.approx(ind["epsilon"], rel=1e-9)
    assert "independent items at its noisy means" in summary_markdown(ind, dataset="chain", version="0", commit="x")
    assert isinstance(load_release(ind_dir / "release").models[0], Independent)
    assert isinstance(load_release(tree_dir / "release").models[0], Tree)
