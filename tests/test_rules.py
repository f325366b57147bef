"""rules: public: every unstated option follows a rule of public quantities; stated ones are kept."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.config import config_from_dict, load_config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.pipeline.run import TrainingRun
from dpgm.plan import plan, words
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import records_magnitude
from dpgm.privacy.events import GaussianEvent
from dpgm.rules import LENGTHS_SHARE, MAX_PARTS, PublicFacts, parts, public_defaults, zcdp_rho
from dpgm.stages.training import release_min_items

ROOT = Path(__file__).resolve().parents[1]
def why(f: PublicFacts, top_items: int | None = None) -> str:
    """The privacy report's words for the rules' plan at ``f``."""
    return words(plan(f, top_items=top_items))


def facts(n: int, epsilon: float = 1.0, items: int = 17, lengths: bool = True) -> PublicFacts:
    """The public facts of n records over ``items`` items; ``lengths``: False where the config turns the release's
    length histogram off (``model.length_noise_multiplier: null``)."""
    return PublicFacts(n_items=items, records_magnitude=records_magnitude(n), epsilon=epsilon, delta=1e-6,
                       lengths=lengths)


def test_records_magnitude() -> None:
    assert [records_magnitude(n) for n in (1, 9, 10, 3_000, 989_818)] == [1, 1, 10, 1_000, 100_000]


def test_small_data_gets_one_part_and_large_data_more() -> None:
    assert parts(facts(3_000)) == 1  # n = 3,000 must not fall apart into empty parts
    assert parts(facts(30_000)) == 1  # N eps = 10,000: two groups would halve the records for little structure
    assert parts(facts(30_000, epsilon=2.0, items=784)) == 4  # N eps = 20,000, each group's tree along chosen edges
    # 17 items: each group's tree would count every pair, and one tree over all the records fits them, to 50,000
    assert parts(facts(30_000, epsilon=2.0)) == 1 and parts(facts(30_000, epsilon=5.0)) == 10
    assert parts(facts(30_000, epsilon=2.0), kind="vae") == 4  # a stated model that counts no pair
    assert parts(facts(300_000)) == MAX_PARTS
    assert parts(facts(300_000, epsilon=0.5)) == 10
    assert parts(facts(3_000_000, epsilon=4.0)) == MAX_PARTS
    assert public_defaults(facts(3_000), top_items=None)["partition.method"] == "none"
    assert public_defaults(facts(300_000), top_items=None)["partition.method"] == "lloyd"



def test_fixed_stages_take_their_share_of_rho_and_leave_the_rest() -> None:
    """Where DP-SGD trains (a stated VAE) and the config turns the record-length histogram off: items 5% (the top
    100 of 200 chosen), partition 15% (2T + 1 releases), empty records 1%, the length bound 2%, means 58% of which
    the global pairs take 30% at N epsilon = 100,000 and the items' dependence 2%: a Gaussian of multiplier s costs
    1/(2 s^2), an epsilon exponential mechanism epsilon^2 / 8."""
    f = facts(300_000, items=200, lengths=False)
    rho = zcdp_rho(f.epsilon, f.delta)
    rules = public_defaults(f, top_items=100, kind="vae")
    cost = (1 / (2 * rules["data.top_items_noise_multiplier"] ** 2)
            + 21 / (2 * rules["partition.noise_multiplier"] ** 2)
            + 1 / (2 * rules["partition.empty_part_noise_multiplier"] ** 2)
            + 1 / (2 * rules["model.length_bound_noise_multiplier"] ** 2)
            + 1 / (2 * rules["model.mean_noise_multiplier"] ** 2)
            + (100 - 1) * rules["model.pairs_select_epsilon"] ** 2 / 8  # the global pairs over the top items'
            + 1 / (2 * rules["model.pairs_noise_multiplier"] ** 2)
            + 1 / (2 * rules["partition.dependence_noise_multiplier"] ** 2))  # from the means'
    assert cost == pytest.approx(0.81 * rho) and rules["model.length_noise_multiplier"] is None
    assert 1 / (2 * rules["model.mean_noise_multiplier"] ** 2) == pytest.approx(0.26 * rho)
    assert rules["model.mean_clip_quantile"] == 0.9
    # no top items to choose (all 200 kept): no release, so the plan lists no multiplier for one
    assert "data.top_items_noise_multiplier" not in public_defaults(f, top_items=200, kind="vae")
    acc = Accountant(delta=f.delta)  # rho is the largest zCDP budget the accountant fits in epsilon
    acc.spend("x", GaussianEvent(noise_multiplier=1 / math.sqrt(2 * rho)))
    assert acc.spent().epsilon == pytest.approx(f.epsilon, rel=1e-5) and acc.spent().epsilon <= f.epsilon


@pytest.mark.parametrize("name", ["lloyd", "kernel_kmeans", "lsh_tree"])
def test_every_partitioner_rule_costs_the_partition_share(name: str) -> None:
    """The partition's plan, as its partitioner calibrates it, costs 15% of rho whichever rule runs."""
    from dpgm.clustering import make_partitioner
    from dpgm.config import PartitionConfig
    from dpgm.privacy.calibrate import plan_rdp

    f = facts(300_000)
    chosen = public_defaults(f, top_items=None, partitioner=name)
    assert chosen["partition.method"] == name
    model = make_partitioner(PartitionConfig(**{key.removeprefix("partition."): value for key, value in chosen.items()
                                                if key.startswith("partition.")}))
    if name == "lsh_tree":
        from dpgm.clustering.lsh_tree import resolve_noise
        plan = resolve_noise(model.noise_multiplier, None, model.options, f.delta).plan()
    else:
        plan = [(GaussianEvent(noise_multiplier=model.noise_multiplier), 2 * model.iterations + 1)]
    assert plan_rdp(plan, orders=[2.0])[0] / 2.0 == pytest.approx(0.15 * zcdp_rho(f.epsilon, f.delta))


def test_sampling_rate_and_steps() -> None:
    small, large = public_defaults(facts(3_000), top_items=None), public_defaults(facts(300_000), top_items=None)
    assert small["training.sampling_rate"] == 0.1  # capped
    assert large["training.sampling_rate"] == pytest.approx(256 * 20 / 100_000)
    for rules in (small, large):
        assert rules["training.epochs"] * (1 / rules["training.sampling_rate"]) == pytest.approx(200)


def shaped(n: int, m: int) -> BinaryDataset:
    rng = np.random.default_rng(0)
    return BinaryDataset(records=sp.csr_matrix((rng.random((n, m)) < 0.2).astype(np.uint8)),
                         item_names=[str(j) for j in range(m)], name="synthetic")


def test_a_run_keeps_what_its_config_states_and_stays_within_the_target(tmp_path) -> None:
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 2.0, "delta": 1e-6},
                            "model": {"options": {"hidden": [16]}, "kind": "vae"}, "runs_dir": str(tmp_path)})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(11_000, 17), progress=False)  # N x epsilon about 22,000
    assert cfg.model.options == {"hidden": [16]} and "model.options" not in run.ruled  # stated: kept
    assert cfg.partition.method == "lloyd" and cfg.partition.k == 4 and cfg.model.calibrate is True
    run.start()
    assert run.planned_epsilon() == pytest.approx(2.0, abs=1e-6) and run.planned_epsilon() <= 2.0


def test_shipped_generic_config_uses_the_rules() -> None:
    cfg = load_config(ROOT / "configs" / "transactions.yaml")
    assert cfg.rules == "public" and "partition.k" not in cfg.stated and "privacy.target_epsilon" in cfg.stated


def test_below_the_training_scale_the_means_are_the_models_and_take_the_budget(tmp_path) -> None:
    """N * epsilon below MIN_TRAINING_SCALE: independent items, no DP-SGD, the means get DP-SGD's share."""
    from dpgm import rules

    assert 1_000 < rules.MIN_TRAINING_SCALE <= 10_000  # n = 3,000 at epsilon 1 skips DP-SGD; 30,000 trains
    small, large = public_defaults(facts(3_000), top_items=None), public_defaults(facts(300_000), top_items=None)
    assert small["model.kind"] == "independent" and small["model.calibrate"] is True  # matters with min_items
    assert large["model.kind"] == "tree"  # in DP-SGD's place
    f = facts(3_000)
    rho = zcdp_rho(f.epsilon, f.delta)
    cost = sum(1 / (2 * small[key] ** 2) for key in ("partition.noise_multiplier", "model.mean_noise_multiplier",
                                                      "partition.empty_part_noise_multiplier",
                                                      "model.length_bound_noise_multiplier"))
    assert cost == pytest.approx((1 - rules.MARGIN - rules.COUNT_SHARE) * rho)  # the rest: the noisy count of n
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(1_500, 17), progress=False)
    run.start()
    assert run.steps == 0 and run.accountant.ledger.count("training") == 0
    assert 0.95 < run.planned_epsilon() <= 1.0
    run.checkpoint()
    run.train({})
    report = run.finish()
    assert report["plan"]["model"] == "independent" and report["plan"]["steps_taken"] == 0
    from dpgm.release import sample_dataset

    synthetic = sample_dataset(run.run_dir, 20_000, seed=0)
    assert abs(float(synthetic.records.mean()) - 0.2) < 0.02  # the items' frequency in shaped()


def test_empty_records_are_a_part_unless_the_user_declares_none_can_be() -> None:
    """data.min_items = 0 (and no length histogram, whose first bin counts them): the empty records' noisy count
    takes EMPTY_SHARE of rho; >= 1: no count."""
    from dpgm import rules

    f = facts(300_000, lengths=False)
    rho = zcdp_rho(f.epsilon, f.delta)
    split = public_defaults(f, top_items=None)["partition.empty_part_noise_multiplier"]
    assert 1 / (2 * split**2) == pytest.approx(rules.EMPTY_SHARE * rho) and rules.EMPTY_SHARE > 0
    declared = PublicFacts(n_items=17, records_magnitude=100_000, epsilon=1.0, delta=1e-6, min_items=1)
    assert public_defaults(declared, top_items=None)["partition.empty_part_noise_multiplier"] is None


def test_below_the_empty_scale_no_empty_part_and_the_means_take_its_share(monkeypatch) -> None:
    """EMPTY_SCALE (0 as shipped: an empty part at every scale): below it no noisy empty count, and the means of the
    independent items take its share; from it up, the count as before."""
    from dpgm import rules

    monkeypatch.setattr(rules, "EMPTY_SCALE", 1_000)
    below, at = public_defaults(facts(999), top_items=None), public_defaults(facts(1_000), top_items=None)
    assert below["partition.empty_part_noise_multiplier"] is None and at["partition.empty_part_noise_multiplier"]
    rho = zcdp_rho(1.0, 1e-6)
    gained = 1 / (2 * below["model.mean_noise_multiplier"] ** 2) - 1 / (2 * at["model.mean_noise_multiplier"] ** 2)
    assert gained == pytest.approx(rules.EMPTY_SHARE * rho)


def test_a_generic_run_with_min_items_spends_nothing_on_empty_records(tmp_path) -> None:
    for min_items, expected in ((0, 1), (1, 0)):
        cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                                "data": {"min_items": min_items}, "runs_dir": str(tmp_path), "seed": 0})
        run = TrainingRun(cfg, tmp_path / f"r{min_items}", data=shaped(1_500, 17), progress=False)
        run.start()
        assert run.accountant.ledger.count("empty_records") == expected
        assert release_min_items(run.cfg) == 1


def test_no_empty_part_where_a_stated_option_rules_it_out(tmp_path) -> None:
    """A stated label partition (an empty part has no label) or record-length histogram: no empty part."""
    from dpgm.plan import apply_public_rules

    for stated in ({"partition": {"method": "label", "k": 3}}, {"model": {"length_noise_multiplier": 50.0}}):
        cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6}, **stated})
        chosen = apply_public_rules(cfg, facts(300_000), cfg.stated)
        assert "partition.empty_part_noise_multiplier" not in chosen
        assert cfg.partition.empty_part_noise_multiplier is None


def test_a_length_histogram_share_leaves_the_empty_records_to_it() -> None:
    """The shipped LENGTHS_SHARE (5%): the histogram's first bin counts the empty records, so no empty part (the
    two together are refused) and its share is not spent; no global pairs beside it (the release follows one or
    the other). The shipped histogram is the length bound's (LENGTHS_FROM_BOUND), which takes both shares."""
    from dpgm import rules
    from dpgm.plan import apply_public_rules

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6}})
    f = facts(300_000)
    apply_public_rules(cfg, f, cfg.stated)  # validates
    assert cfg.partition.empty_part_noise_multiplier is None and cfg.model.pairs_noise_multiplier is None
    assert cfg.model.lengths_from_bound and cfg.model.length_noise_multiplier is None
    both = (rules.LENGTH_BOUND_SHARE + LENGTHS_SHARE) * zcdp_rho(f.epsilon, f.delta)
    assert 1 / (2 * cfg.model.length_bound_noise_multiplier**2) == pytest.approx(both)
    assert "histogram of record lengths is measured" in why(f)
    table = dataclasses.replace(f, attributes=17)  # one item per attribute: every record of one length
    assert public_defaults(table, top_items=None)["model.length_noise_multiplier"] is None
    assert not public_defaults(table, top_items=None)["model.lengths_from_bound"]
    assert "record lengths" not in why(table)


def test_the_length_histogram_takes_the_means_share_from_its_scale_up() -> None:
    """From N epsilon = LENGTHS_SCALE up (N's declared magnitude) the histogram takes LENGTHS_SHARE of rho from the
    means' share, and no empty part is counted; below, the rules are those without it. Where a tree takes DP-SGD's
    place the means lose exactly the histogram's share; where independent items take the rest, net of the empty
    part's."""
    from dpgm import rules as rules_module

    share = LENGTHS_SHARE
    below = facts(30_000, epsilon=0.99 * rules_module.LENGTHS_SCALE / 10_000)
    at = facts(30_000, epsilon=rules_module.LENGTHS_SCALE / 10_000)
    large = facts(300_000)
    shipped = {f: public_defaults(f, top_items=None) for f in (below, at, large)}
    without = {f: public_defaults(dataclasses.replace(f, lengths=False), top_items=None) for f in (below, at, large)}

    def spent(rules: dict, key: str, f: PublicFacts) -> float:
        return 1 / (2 * rules[key] ** 2) / zcdp_rho(f.epsilon, f.delta)

    assert shipped[below] == without[below] and shipped[below]["model.length_noise_multiplier"] is None
    for f in (at, large):  # the length bound's histogram, which the release follows, takes the share too
        assert shipped[f]["model.lengths_from_bound"] and shipped[f]["model.length_noise_multiplier"] is None
        assert spent(shipped[f], "model.length_bound_noise_multiplier", f) == pytest.approx(
            spent(without[f], "model.length_bound_noise_multiplier", f) + share)
        assert shipped[f]["partition.empty_part_noise_multiplier"] is None
    means = "model.mean_noise_multiplier"
    assert shipped[large]["model.kind"] == "tree"
    assert spent(shipped[large], means, large) == pytest.approx(spent(without[large], means, large) - share)
    assert shipped[at]["model.kind"] == "independent"
    empty = spent(without[at], "partition.empty_part_noise_multiplier", at)
    assert spent(shipped[at], means, at) == pytest.approx(spent(without[at], means, at) - share + empty)


def test_a_stated_partitioner_gets_its_own_rule() -> None:
    """partition.method stated as lsh_tree under rules: public: its noise is the lsh rule's, not DP Lloyd's."""
    from dpgm.plan import apply_public_rules
    from dpgm.rules import PARTITIONER_RULES

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "partition": {"method": "lsh_tree"}})
    f = facts(300_000)
    chosen = apply_public_rules(cfg, f, cfg.stated)
    expected = PARTITIONER_RULES["lsh_tree"](0.15 * zcdp_rho(f.epsilon, f.delta))
    assert chosen["partition.noise_multiplier"] == pytest.approx(expected["partition.noise_multiplier"])
    assert cfg.partition.options == expected["partition.options"] and "partition.method" not in chosen
    assert public_defaults(f, top_items=None)["partition.method"] == "lloyd"


def test_without_an_empty_part_its_share_goes_back_to_the_means() -> None:
    """Small data (independent models): the means take the rest, including the empty count's 1%."""
    from dpgm.plan import apply_public_rules

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "partition": {"method": "label", "k": 3}})
    apply_public_rules(cfg, facts(3_000), cfg.stated)
    plain = public_defaults(facts(3_000), top_items=None)
    assert cfg.model.mean_noise_multiplier < plain["model.mean_noise_multiplier"]  # more budget: less noise


@pytest.mark.parametrize("n, epsilon, items, family, groups", [
    (3_000, 1.0, 17, "independent items", "one group"),  # N eps = 1e3: DP-SGD cannot pay
    (30_000, 1.0, 17, "a tree of items per group", "one group (N x epsilon = 10,000 is below 20,000"),
    (30_000, 4.0, 17, "a tree of items per group", "one group (N x epsilon = 40,000 is below 50,000 and"),
    (300_000, 1.0, 17, "a tree of items per group", f"{MAX_PARTS} groups"),
    (30_000, 4.0, 784, "a tree of items per group", "8 groups"),  # each group's tree along chosen edges
    (300_000, 0.01, 17, "independent items", "one group"),  # many records, a tiny budget
    (300_000, 4.0, 2_000, "a VAE per group", f"{MAX_PARTS} groups"),  # too many items for pair counts
])
def test_the_regime_follows_n_and_epsilon_and_says_why(n, epsilon, items, family, groups) -> None:
    f = facts(n, epsilon, items)
    defaults = public_defaults(f, top_items=None)
    said = why(f)
    assert family in said and groups in said and f"N = {f.records_magnitude:,}" in said
    assert ("independent" in said) == (defaults["model.kind"] == "independent")
    assert groups.startswith("one group") == (defaults["partition.method"] == "none")


def test_the_report_says_which_regime_was_chosen_and_what_the_config_stated(tmp_path) -> None:
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "model": {"kind": "independent"}, "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(11_000, 17), progress=False)
    run.start()
    run.checkpoint()
    run.train({})
    report = run.finish()
    assert report["rules"].startswith("The rules chose a tree of items per group")  # N eps = 1e4: a tree ...
    assert report["rules"].endswith("Stated in the config, so kept: model.kind.")  # ... but the config said no
    assert report["rules"] in (run.run_dir / "release" / "privacy_report.md").read_text()


@pytest.mark.parametrize("kind, trains", [("rbm", True), ("vae", True), ("independent", False), ("tree", False)])
def test_a_stated_model_kind_keeps_dp_sgd_its_share_if_it_trains(kind, trains) -> None:
    """A config that states its model: a trained kind leaves DP-SGD what the means do not take;
    a kind without DP-SGD gives the means that share too."""
    from dpgm import rules

    f = facts(300_000, lengths=False)
    rho = zcdp_rho(f.epsilon, f.delta)
    plan = public_defaults(f, top_items=None, kind=kind)
    releases = ("partition.noise_multiplier", "model.mean_noise_multiplier", "model.length_bound_noise_multiplier",
                "partition.empty_part_noise_multiplier", "partition.dependence_noise_multiplier")
    spent = sum(1 / (2 * plan[key] ** 2) * (2 * rules.LLOYD_ITERATIONS + 1 if key.startswith("partition.n") else 1)
                for key in releases)
    options = plan.get("model.options", {})
    if kind == "tree":
        spent += (f.n_items - 1) * options["select_epsilon"] ** 2 / 8 + 1 / (2 * options["pair_noise_multiplier"] ** 2)
    if plan["model.pairs_noise_multiplier"] is not None:  # the global pairs (not for a tree)
        spent += ((f.n_items - 1) * plan["model.pairs_select_epsilon"] ** 2 / 8
                  + 1 / (2 * plan["model.pairs_noise_multiplier"] ** 2))
    if trains:  # DP-SGD calibrates itself on what is left
        assert spent / rho < 1 - rules.MARGIN - 0.1
    else:  # nothing is left to a later stage
        assert spent / rho == pytest.approx(1 - rules.MARGIN - rules.COUNT_SHARE)  # the rest: the count of n


def test_a_declared_table_gets_a_tree_below_its_scale_and_its_clip_from_the_declaration(tmp_path) -> None:
    """data.attributes: each record holds one item per attribute, so the clip is sqrt(attributes) (no
    private length bound), no record is empty (no empty part), and below TABLE_TREE_SCALE each part's
    model is a tree; the budget is still spent exactly."""
    from dpgm import rules

    plain = facts(3_000, items=100)
    table = PublicFacts(n_items=100, records_magnitude=1_000, epsilon=1.0, delta=1e-6, attributes=23)
    assert public_defaults(plain, top_items=None)["model.kind"] == "independent"  # undeclared: unchanged
    chosen = public_defaults(table, top_items=None)
    assert chosen["model.kind"] == "tree" and chosen["model.mean_clip"] == pytest.approx(math.sqrt(23))
    assert chosen["model.mean_clip_quantile"] is None and chosen["partition.empty_part_noise_multiplier"] is None
    assert "a table of 23 attributes (declared)" in why(table) and "a tree of items" in why(table)
    rho = zcdp_rho(table.epsilon, table.delta)
    options = chosen["model.options"]
    cost = (99 * options["select_epsilon"] ** 2 / 8 + 1 / (2 * options["pair_noise_multiplier"] ** 2)
            + sum(1 / (2 * chosen[key] ** 2) for key in ("partition.noise_multiplier", "model.mean_noise_multiplier")))
    assert cost == pytest.approx((1 - rules.MARGIN - rules.COUNT_SHARE) * rho)
    large = PublicFacts(n_items=100, records_magnitude=100_000, epsilon=1.0, delta=1e-8, attributes=23)
    assert public_defaults(large, top_items=None)["model.kind"] == "tree"  # above the scale: in DP-SGD's place
    assert public_defaults(large, top_items=None)["model.mean_clip"] == pytest.approx(math.sqrt(23))
    # a run lists the declaration among its public inputs and spends nothing on a length bound
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "data": {"attributes": 4}, "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(3_000, 17), progress=False)
    run.start()
    assert cfg.model.kind == "tree" and run.accountant.ledger.count("length_bound") == 0
    assert any(p["quantity"] == "attributes of the table" for p in run.public)
    assert 0.95 < run.planned_epsilon() <= 1.0


def test_a_declared_schema_puts_the_tables_tree_over_its_attributes_at_the_same_cost(tmp_path) -> None:
    """TABLE_BY_ATTRIBUTE with data.attribute_sizes: the tree spans the T attributes, its T - 1 selections priced
    from the same share (each at a larger epsilon than the items' m - 1); without the schema, a tree of items."""
    table = PublicFacts(n_items=100, records_magnitude=1_000, epsilon=1.0, delta=1e-6, attributes=23)
    items = public_defaults(table, top_items=None)["model.options"]
    assert items["by_attribute"] is False  # the count alone does not say which item is whose value
    chosen = public_defaults(dataclasses.replace(table, schema=True), top_items=None)
    options = chosen["model.options"]
    assert options["by_attribute"] is True
    assert options["select_epsilon"] ** 2 * 22 == pytest.approx(items["select_epsilon"] ** 2 * 99)
    assert options["pair_noise_multiplier"] == pytest.approx(items["pair_noise_multiplier"])
    sizes = [3] * 5 + [2]
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "data": {"attribute_sizes": sizes}, "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(3_000, sum(sizes)), progress=False)
    run.start()
    assert cfg.model.kind == "tree" and cfg.model.options["by_attribute"] is True
    assert run.rules_why.startswith("The rules chose a tree over the table's attributes per group")
    assert 0.95 < run.planned_epsilon() <= 1.0


def test_a_pairs_share_prices_the_global_tree_and_a_run_spends_the_budget(tmp_path) -> None:
    """From N epsilon = PAIRS_SCALE up, for a model not a tree and a release that follows no length histogram: one
    global tree of pairs, its selections and counts priced in zCDP from their shares (out of the means'), charged
    under release_pairs, and the run still ends at the target."""
    from dpgm import rules

    f = facts(300_000, lengths=False)
    vae = public_defaults(f, top_items=None, kind="vae")
    rho = zcdp_rho(f.epsilon, f.delta)
    assert (f.n_items - 1) * vae["model.pairs_select_epsilon"] ** 2 / 8 == pytest.approx(0.1 * rho)
    assert 1 / (2 * vae["model.pairs_noise_multiplier"] ** 2) == pytest.approx(0.2 * rho)
    assert 1 / (2 * vae["model.mean_noise_multiplier"] ** 2) == pytest.approx(
        (rules.MEANS_SHARE - 0.3 - rules.DEPENDENCE_SHARE) * rho)  # the pairs and the dependence from the means'
    assert vae["model.pairs_clip"] == "balanced"  # the pairs' own clip, where the length bound is measured
    # none below PAIRS_SCALE, none where each part's model is a tree of items, none where the release follows lengths
    assert public_defaults(facts(30_000, lengths=False), top_items=None, kind="vae")["model.pairs_noise_multiplier"] is None
    assert public_defaults(f, top_items=None, kind="tree")["model.pairs_noise_multiplier"] is None
    assert public_defaults(f, top_items=None)["model.kind"] == "tree"
    assert public_defaults(facts(300_000), top_items=None, kind="vae")["model.pairs_noise_multiplier"] is None
    table = PublicFacts(n_items=17, records_magnitude=10_000, epsilon=4.0, delta=1e-6, attributes=5)
    assert public_defaults(table, top_items=None, kind="vae")["model.pairs_clip"] == "means"
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "model": {"kind": "independent", "length_noise_multiplier": None},
                            "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=shaped(31_000, 17), progress=False)  # N x epsilon above 30,000
    run.start()
    assert run.accountant.ledger.count("release_pairs") == 17  # 16 selections, one release
    assert 0.95 < run.planned_epsilon() <= 1.0


def test_a_config_that_turns_the_global_pairs_off_keeps_their_share_for_the_rest() -> None:
    """model.pairs_noise_multiplier: null stated at N epsilon = 100,000: no pairs, and a stated model without
    DP-SGD gets the whole budget in its means (none left unspent)."""
    from dpgm.plan import apply_public_rules

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "model": {"kind": "independent", "pairs_noise_multiplier": None,
                                      "length_noise_multiplier": None}})
    apply_public_rules(cfg, facts(300_000), cfg.stated)
    off = cfg.model.mean_noise_multiplier
    on = public_defaults(facts(300_000, lengths=False), top_items=None,
                         kind="independent")["model.mean_noise_multiplier"]
    assert cfg.model.pairs_noise_multiplier is None and off < on  # the means took the pairs' 30% back


def test_a_merge_threshold_prices_the_dependence_from_the_means_where_groups_form() -> None:
    """Where k > 1 (not for one group, not for a table, not where the config states the parts) the dependence is
    measured at DEPENDENCE_SHARE of rho, taken from the means' where DP-SGD trains, and below MERGE_BELOW the records
    form one group."""
    from dpgm import rules
    from dpgm.plan import apply_public_rules

    many = facts(300_000)
    shipped = public_defaults(many, top_items=None)
    rho = zcdp_rho(many.epsilon, many.delta)
    assert shipped["partition.merge_below"] == rules.MERGE_BELOW == 0.025
    assert 1 / (2 * shipped["partition.dependence_noise_multiplier"] ** 2) == pytest.approx(
        rules.DEPENDENCE_SHARE * rho)
    assert "one group where it is below 0.025" in why(many)
    trained = facts(300_000, lengths=False)
    merged, kept = (public_defaults(trained, top_items=None, kind="vae", merge=merge) for merge in (True, False))
    assert kept["partition.dependence_noise_multiplier"] is None and kept["partition.merge_below"] == 0.0
    means = [1 / (2 * d["model.mean_noise_multiplier"] ** 2) for d in (kept, merged)]
    assert means[0] - means[1] == pytest.approx(rules.DEPENDENCE_SHARE * rho)  # the rest is unchanged
    assert public_defaults(facts(30_000), top_items=None)["partition.dependence_noise_multiplier"] is None  # k = 1
    table = PublicFacts(n_items=17, records_magnitude=100_000, epsilon=1.0, delta=1e-6, attributes=5)
    assert public_defaults(table, top_items=None, kind="vae")["partition.dependence_noise_multiplier"] is None
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "partition": {"k": 5}})
    apply_public_rules(cfg, many, cfg.stated)
    assert cfg.partition.dependence_noise_multiplier is None and cfg.partition.merge_below == 0.0
    # a partitioner whose budget the means cannot take, or a partition calibrated to its own epsilon: no merge
    assert public_defaults(many, top_items=None, partitioner="lsh_tree")["partition.dependence_noise_multiplier"] is None
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "partition": {"target_epsilon": 0.2}})
    apply_public_rules(cfg, many, cfg.stated)  # validates
    assert cfg.partition.dependence_noise_multiplier is None and cfg.partition.merge_below == 0.0


def test_a_tree_in_dp_sgds_place_where_one_group_would_train_takes_dp_sgds_budget() -> None:
    """From MIN_TRAINING_SCALE up the model is a tree; the means keep their trained share and the tree's options
    cost the rest but the margin; independent items below, DP-SGD where a record needs more than one item."""
    from dpgm import rules

    one = facts(30_000, lengths=False)
    out = public_defaults(one, top_items=None)
    rho = zcdp_rho(one.epsilon, one.delta)
    assert out["model.kind"] == "tree" and not out["model.calibrate"] and out["partition.k"] == 1
    assert 1 / (2 * out["model.mean_noise_multiplier"] ** 2) == pytest.approx(rules.MEANS_SHARE * rho)
    options = out["model.options"]
    tree = (one.n_items - 1) * options["select_epsilon"] ** 2 / 8 + 1 / (2 * options["pair_noise_multiplier"] ** 2)
    fixed = sum(1 / (2 * out[key] ** 2) for key in ("partition.noise_multiplier", "model.mean_noise_multiplier",
                                                      "model.length_bound_noise_multiplier",
                                                      "partition.empty_part_noise_multiplier"))
    assert fixed + tree == pytest.approx((1 - rules.MARGIN - rules.COUNT_SHARE) * rho)
    assert tree / rho == pytest.approx(1 - rules.MARGIN - rules.COUNT_SHARE - rules.MEANS_SHARE - rules.SINGLE_PART_SHARE
                                       - rules.LENGTH_BOUND_SHARE - rules.EMPTY_SHARE)
    assert "in DP-SGD's place and with its budget: N x epsilon = 10,000 is at least 3,000, where" in why(one)
    assert public_defaults(facts(3_000), top_items=None)["model.kind"] == "independent"  # N eps = 1,000
    assert public_defaults(facts(300_000), top_items=None)["model.kind"] == "tree"  # groups form: a tree each
    assert public_defaults(facts(30_000), top_items=None, kind="vae")["model.kind"] == "vae"  # stated: kept
    required = PublicFacts(n_items=17, records_magnitude=10_000, epsilon=1.0, delta=1e-6, min_items=2)
    assert public_defaults(required, top_items=None)["model.kind"] == "vae"  # a tree keeps at most one item


def test_the_shipped_rules_put_a_tree_wherever_dp_sgd_would_train(tmp_path) -> None:
    """A tree from N epsilon = 3,000 up, one group or many, nothing trained; a run on public rules spends within its
    target, all but the margin."""
    kinds = {n: public_defaults(facts(n), top_items=None)["model.kind"] for n in (3_000, 30_000, 300_000)}
    assert kinds == {3_000: "independent", 30_000: "tree", 300_000: "tree"}
    assert public_defaults(facts(300_000), top_items=None)["partition.k"] == MAX_PARTS  # the groups stay
    wide = facts(300_000, items=5_000)  # dense pair counts over 5,000 items: DP-SGD instead, nothing over pairs
    ruled = public_defaults(wide, top_items=None)
    assert ruled["model.kind"] == "vae" and "set data.top_items" in why(wide)
    assert ruled["partition.dependence_noise_multiplier"] is None and ruled["model.pairs_noise_multiplier"] is None
    assert "dependence" not in why(wide) and "pairs is measured over all records" not in why(wide)
    assert public_defaults(wide, top_items=100)["model.kind"] == "tree" and "a tree" in why(wide, top_items=100)
    assert "N x epsilon = 100,000 is at least 3,000, where the pairs measured directly" in why(facts(300_000))
    rng = np.random.default_rng(0)
    x = sp.csr_matrix((rng.random((30_000, 12)) < 0.2).astype(np.float32))
    data = BinaryDataset(records=x, item_names=[f"i{j}" for j in range(12)])
    cfg = config_from_dict({"rules": "public", "runs_dir": str(tmp_path), "seed": 1,
                            "privacy": {"target_epsilon": 2.0, "delta": 1e-6}})
    run = TrainingRun(cfg, tmp_path / "run", data=data, progress=False)
    run.start()
    assert cfg.model.kind == "tree" and run.steps == 0 and run.output("item_pairs") is not None
    assert 2.0 * 0.98 < run.accountant.spent().epsilon <= 2.0


def test_a_declared_tables_own_tree_keeps_its_shares_where_the_tree_takes_dp_sgds_place() -> None:
    """Below TABLE_TREE_SCALE a table's tree has its own shares (40% of rho); above, the tree in DP-SGD's place
    takes DP-SGD's."""
    from dpgm import rules

    table = PublicFacts(n_items=75, records_magnitude=1_000, epsilon=4.0, delta=1e-6, attributes=37)
    before = public_defaults(table, top_items=None)
    options, rho = before["model.options"], zcdp_rho(table.epsilon, table.delta)
    tree = 74 * options["select_epsilon"] ** 2 / 8 + 1 / (2 * options["pair_noise_multiplier"] ** 2)
    assert before["model.kind"] == "tree" and tree == pytest.approx((rules.TREE_SELECT_SHARE + rules.TREE_PAIRS_SHARE) * rho)
    assert "a table of 37 attributes" in why(table)
    larger = dataclasses.replace(table, records_magnitude=100_000)  # N eps = 400,000: DP-SGD's place
    assert public_defaults(larger, top_items=None)["model.kind"] == "tree" and "DP-SGD's place" in why(larger)


def table_run(tmp_path: Path, first: np.ndarray, second: np.ndarray, epsilon: float) -> tuple[Any, TrainingRun, dict]:
    """A whole ``rules: public`` run on a declared table of two attributes of 2 and 3 values (each record's values
    ``first`` and ``second``): its config, the run and its report."""
    x = np.concatenate([np.eye(2)[first], np.eye(3)[second]], axis=1)
    data = BinaryDataset(records=x.astype(np.uint8), item_names=[f"v{j}" for j in range(5)], name="table")
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": epsilon, "delta": 1e-6},
                            "data": {"records_magnitude": 1_000, "attribute_sizes": [2, 3]},
                            "runs_dir": str(tmp_path), "seed": 0})
    run = TrainingRun(cfg, tmp_path / "r", data=data, progress=False)
    run.start()
    run.checkpoint()
    run.train({})
    return cfg, run, run.finish()


def test_the_report_says_a_declared_schema_shapes_the_tables_trees(tmp_path) -> None:
    rng = np.random.default_rng(0)
    cfg, run, report = table_run(tmp_path, rng.integers(0, 2, 2_000), rng.integers(0, 3, 2_000), 1.0)
    assert cfg.model.kind == "tree" and cfg.data.attributes == 2
    assert "declared schema (data.attribute_sizes)" in report["rules"]
    assert report["rules"] in (run.run_dir / "release" / "privacy_report.md").read_text()


def test_without_lengths_from_the_bound_the_release_gets_a_histogram_of_its_own() -> None:
    """A config that turns model.lengths_from_bound off: a second histogram at LENGTHS_SHARE for the release, the
    bound's keeps its own share."""
    from dpgm import rules as rules_module

    chosen = public_defaults(facts(300_000), top_items=None, bound_lengths=False)
    rho = zcdp_rho(1.0, 1e-6)
    assert not chosen["model.lengths_from_bound"]
    assert 1 / (2 * chosen["model.length_noise_multiplier"] ** 2) == pytest.approx(LENGTHS_SHARE * rho)
    assert 1 / (2 * chosen["model.length_bound_noise_multiplier"] ** 2) == pytest.approx(
        rules_module.LENGTH_BOUND_SHARE * rho)


@pytest.mark.parametrize("stated", [{"length_noise_multiplier": 50.0}, {"length_noise_multiplier": None},
                                    {"lengths_from_bound": False}])
def test_a_stated_length_histogram_or_bound_keeps_the_release_off_the_bounds_histogram(stated) -> None:
    """The shipped rules follow the bound's histogram unless the config states the release's own (or none) or turns
    that off: the stated options are kept and the result validates."""
    from dpgm.plan import apply_public_rules

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6}, "model": stated})
    apply_public_rules(cfg, facts(300_000), cfg.stated)  # validates
    assert not cfg.model.lengths_from_bound
    for key, value in stated.items():
        assert getattr(cfg.model, key) == value


def test_a_config_that_turns_the_lengths_off_gets_the_rules_without_them() -> None:
    """model.length_noise_multiplier: null stated where the shipped rules would follow lengths: every other option is
    what the rules without a length histogram give (an empty part, the bound at its own share, nothing left unspent),
    and the report does not speak of a histogram."""
    from dpgm.pipeline.plan import rules_why
    from dpgm.plan import apply_public_rules

    f = facts(300_000)
    without = public_defaults(dataclasses.replace(f, lengths=False), top_items=None)
    assert public_defaults(f, top_items=None) != without  # the shipped rules follow lengths here
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "model": {"length_noise_multiplier": None}})
    chosen = apply_public_rules(cfg, f, cfg.stated)
    assert chosen == {key: value for key, value in without.items() if key != "model.length_noise_multiplier"}
    assert cfg.partition.empty_part_noise_multiplier is not None and not cfg.model.follows_lengths
    assert "record lengths" not in rules_why(cfg, dataclasses.replace(f, lengths=False))
    assert "record lengths" in rules_why(cfg, f)


def test_a_config_that_turns_the_length_bound_off_validates_and_keeps_a_histogram_of_its_own() -> None:
    """model.mean_clip_quantile: null stated: no bound's options, the means clipped at MEAN_CLIP_ITEMS items, and the
    release's length histogram measured on its own at LENGTHS_SHARE."""
    from dpgm import rules
    from dpgm.plan import apply_public_rules

    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6},
                            "model": {"mean_clip_quantile": None}})
    apply_public_rules(cfg, facts(300_000), cfg.stated)  # validates
    model = cfg.model
    assert model.mean_clip_quantile is None and model.mean_clip_balance is None and not model.lengths_from_bound
    assert model.mean_clip == pytest.approx(math.sqrt(rules.MEAN_CLIP_ITEMS))
    assert 1 / (2 * model.length_noise_multiplier**2) == pytest.approx(LENGTHS_SHARE * zcdp_rho(1.0, 1e-6))


def test_a_tree_releases_every_pair_from_its_scale_up_where_the_release_follows_lengths() -> None:
    """From N * epsilon per pair = ALL_PAIRS_SCALE up, where the release follows lengths, a tree of items releases
    every pair's count with the whole tree share (no selections); more items, or no length histogram: selections."""
    from dpgm import rules
    from dpgm.plan import apply_public_rules
    from dpgm.stages.model_choice import tree_options, tree_releases

    assert rules.ALL_PAIRS_SCALE == 1.0
    few = facts(30_000)  # 17 items, one group, a tree in DP-SGD's place; N epsilon = 10,000 over 136 pairs
    chosen = public_defaults(few, top_items=None)
    options = chosen["model.options"]
    assert chosen["model.kind"] == "tree" and options["all_pairs"] and "select_epsilon" not in options
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6}})
    apply_public_rules(cfg, few, cfg.stated)  # validates: the release follows lengths
    [(event, count)] = tree_releases(tree_options(cfg.model), 17)
    assert count == 1 and event.noise_multiplier == options["pair_noise_multiplier"]  # one release, every pair
    # 141 items: 9,870 pairs, at most 10,000; 142 items: 10,011 pairs, more
    assert public_defaults(facts(30_000, items=141), top_items=None)["model.options"]["all_pairs"]
    assert "all_pairs" not in public_defaults(facts(30_000, items=142), top_items=None)["model.options"]
    # no length histogram: the release could not follow the pairs; the selections take their share of the same tree
    selected = public_defaults(dataclasses.replace(few, lengths=False), top_items=None)["model.options"]
    assert "all_pairs" not in selected and selected["select_epsilon"] > 0


def test_every_pair_without_a_length_histogram_is_refused() -> None:
    with pytest.raises(ConfigError, match="all_pairs needs"):
        config_from_dict({"model": {"kind": "tree", "output_bias": "noisy_mean", "calibrate": False,
                                    "options": {"all_pairs": True}}})


def test_the_report_says_when_every_pair_is_measured() -> None:
    assert "every pair's count is measured" in why(facts(30_000))  # 10,000 over 136 pairs: at least 1
    assert "at least 1)" in why(facts(30_000))
    assert "every pair's count" not in why(facts(30_000, items=142))  # 10,000 over 10,011 pairs


def test_a_declared_schema_keeps_the_tree_over_its_attributes_above_the_items_cap() -> None:
    """Where DP-SGD would train, a tree takes its place over at most PAIRS_MAX_ITEMS items, or over a declared
    table's attributes however many values they hold (its pair tables are over attributes and groups of values);
    without the schema, more items than the cap get a VAE; the plan's reason is the tree's in DP-SGD's place."""
    from dpgm.plan import plan
    from dpgm.rules import PAIRS_MAX_ITEMS

    wide = PublicFacts(n_items=PAIRS_MAX_ITEMS + 1_733, records_magnitude=100_000, epsilon=1.0, delta=1e-7,
                       attributes=48)
    assert public_defaults(wide, top_items=None)["model.kind"] == "vae"
    declared = dataclasses.replace(wide, schema=True)
    chosen = public_defaults(declared, top_items=None)
    assert chosen["model.kind"] == "tree" and chosen["model.options"]["by_attribute"] is True
    assert "in DP-SGD's place" in plan(declared).reasons["model.kind"]


def test_a_declared_table_in_groups_measures_every_values_total_from_the_means_share(monkeypatch) -> None:
    """Where a declared table forms k > 1 groups, every value's count over all records is released at
    TABLE_TOTALS_SHARE of rho, taken from the means' share (the tree's and the rest unchanged); in one group, or
    for records that are not a declared table, none is."""
    from dpgm import rules
    from dpgm.privacy.calibrate import sigma_for_share

    table = PublicFacts(n_items=2_733, records_magnitude=10_000, epsilon=1.0, delta=1e-6, attributes=48,
                        schema=True, records=50_000.0)
    rho = zcdp_rho(table.epsilon, table.delta)
    shipped = public_defaults(table, top_items=None)
    assert rules.TABLE_TOTALS_SHARE > 0 and shipped["partition.k"] > 1
    assert shipped["model.totals_noise_multiplier"] == pytest.approx(sigma_for_share(rho, rules.TABLE_TOTALS_SHARE))
    monkeypatch.setattr(rules, "TABLE_TOTALS_SHARE", 0.0)
    without = public_defaults(table, top_items=None)
    assert without["model.totals_noise_multiplier"] is None
    cost = lambda s: 1 / (2 * s["model.mean_noise_multiplier"] ** 2)  # a Gaussian release's rho
    monkeypatch.undo()
    assert cost(without) - cost(shipped) == pytest.approx(rules.TABLE_TOTALS_SHARE * rho)
    assert shipped["model.options"] == without["model.options"]  # the tree keeps its share
    one_group = dataclasses.replace(table, records=3_000.0)
    items = dataclasses.replace(table, attributes=None, schema=False, n_items=100)
    assert public_defaults(one_group, top_items=None)["model.totals_noise_multiplier"] is None
    assert parts(items) > 1 and public_defaults(items, top_items=None)["model.totals_noise_multiplier"] is None
    assert "model.totals_noise_multiplier" in plan(table).reasons


def test_a_run_on_a_declared_table_in_groups_charges_the_totals_and_spends_the_budget(tmp_path) -> None:
    """A table of two attributes at N x epsilon = 35,000: k > 1 groups, the values' totals one charged release beside
    the groups' means, the whole run within its target."""
    from dpgm.stages.item_totals import STAGE as TOTALS

    rng = np.random.default_rng(0)
    first = rng.integers(0, 2, 2_500)
    cfg, _, report = table_run(tmp_path, first, np.where(rng.random(2_500) < 0.8, first, rng.integers(0, 3, 2_500)),
                               14.0)
    assert cfg.partition.k > 1 and cfg.model.kind == "tree" and cfg.model.totals_noise_multiplier is not None
    assert TOTALS in report["stage_epsilons"] and report["epsilon"] <= 14.0
