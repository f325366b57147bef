"""The rules' plan as data (dpgm.plan): every decided setting's reason is a row of the table that holds for it, the
report's words read those reasons, and a plan applies only options the config has."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpgm.config import config_from_dict
from dpgm.errors import ConfigError
from dpgm.plan import DECIDED, TABLE, Case, Plan, Row, apply_plan, plan, row_for, table_markdown, words
from dpgm.rules import PublicFacts
from tests.test_rules_pinned import _config, _facts, settings


@pytest.mark.parametrize("name", sorted(settings()))
def test_every_decided_setting_of_an_unstated_plan_has_a_rule_row(name: str) -> None:
    """Without stated options every decision is the rules' own: its reason is a row of the table, never the
    fallback for a stated model."""
    magnitude, items, epsilon, stated = settings()[name]
    facts = _facts(_config(magnitude, epsilon, items, stated), magnitude, items)
    chosen = plan(facts, top_items=stated.get("data", {}).get("top_items"))
    assert set(DECIDED) - set(chosen.reasons) <= {"model.options"}  # options of a tree or a VAE, no other kind's
    assert ("model.options" in chosen.reasons) == (chosen.settings["model.kind"] in ("tree", "vae"))
    assert "as the config states" not in chosen.reasons["model.kind"]
    assert words(chosen).startswith(f"The rules chose {chosen.reasons['model.kind']}, in ")


def test_the_words_say_what_the_plan_measures_and_nothing_it_does_not() -> None:
    """n = 100,000, 100 items, epsilon 1: a tree over every pair's count, not along privately chosen edges."""
    said = words(plan(PublicFacts(n_items=100, records_magnitude=100_000, epsilon=1.0, delta=1e-7)))
    assert "every pair's count is measured" in said and "privately chosen edges" not in said
    assert "in 20 groups" in said and "histogram of record lengths" in said
    selected = words(plan(PublicFacts(n_items=100, records_magnitude=100_000, epsilon=1.0, delta=1e-7,
                                      lengths=False)))
    assert "privately chosen edges" in selected and "every pair's count" not in selected


def test_every_setting_has_a_reason_and_every_row_names_known_words() -> None:
    chosen = plan(PublicFacts(n_items=17, records_magnitude=10_000, epsilon=1.0, delta=1e-6))
    assert set(chosen.reasons) == set(chosen.settings) and all(chosen.reasons.values())
    assert chosen.reasons["model.mean_noise_multiplier"].endswith("of rho (a Gaussian release)")
    assert {row.setting for row in TABLE} == set(DECIDED)


def test_a_plan_with_a_setting_the_config_lacks_is_refused_before_anything_is_set() -> None:
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0, "delta": 1e-6}})
    chosen = plan(PublicFacts(n_items=17, records_magnitude=10_000, epsilon=1.0, delta=1e-6))
    misspelt = dataclasses.replace(chosen, settings={"model.kind": "tree", "model.kindd": "tree"})
    with pytest.raises(ConfigError, match=r"^rules: model.kindd is not an option of the config$"):
        apply_plan(cfg, misspelt, frozenset())
    assert cfg.model.kind == "vae" and not hasattr(cfg.model, "kindd")
    with pytest.raises(ConfigError, match="nowhere.k is not an option"):
        apply_plan(cfg, Plan(chosen.facts, {"nowhere.k": 1}, {}, ()), frozenset())


def test_the_rules_page_shows_the_decision_table_of_the_code() -> None:
    """docs/guide/rules.md holds ``table_markdown()`` between its markers, as generated from dpgm.plan.TABLE."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "rules.md").read_text()
    shown = page.split("<!-- generated: decision table -->\n")[1].split("\n<!-- end of the decision table -->")[0]
    assert shown == table_markdown()


def near(a: Any, b: Any) -> bool:
    """Whether two values of a setting are neighbours: equal, numbers within 25% (counts within one or 25%), or
    dicts of such values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(near(a[key], b[key]) for key in a)
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    if not numbers or a == b:
        return a == b
    if isinstance(a, int) and isinstance(b, int) and abs(a - b) <= max(1, 0.25 * max(a, b)):
        return True
    return min(a, b) > 0 and max(a, b) / min(a, b) <= 1.25


def planned_rows(f: PublicFacts) -> tuple[Plan, dict[str, Row]]:
    """The plan at ``f`` and the table's row behind each decided setting."""
    p = plan(f)
    case = Case(f, f.n_items, p.settings)
    return p, {setting: row_for(setting, case) for setting in DECIDED if setting in p.settings}


def walks() -> list[list[PublicFacts]]:
    """Fine walks through the public facts: n from 500 to 2,000,000 records in 2% steps (as a noisy count reads it)
    at four epsilons, and epsilon from 0.05 to 10 in 2% steps at four n, over 17, 119 and 2,000 items."""
    out = []
    for items in (17, 119, 2_000):
        for eps in (0.1, 0.3, 1.0, 4.0):
            out.append([PublicFacts(n_items=items, records_magnitude=1_000, epsilon=eps, delta=1e-6, records=n)
                        for n in np.exp(np.arange(math.log(500), math.log(2e6), 0.02))])
        for n in (1_000.0, 3_000.0, 17_721.0, 100_000.0):
            out.append([PublicFacts(n_items=items, records_magnitude=1_000, epsilon=eps, delta=1e-6, records=n)
                        for eps in np.exp(np.arange(math.log(0.05), math.log(10.0), 0.02))])
    return out


def test_along_n_and_epsilon_every_jump_of_the_plan_is_a_rule_that_changes_with_its_reason() -> None:
    """No hidden cliff: between two neighbours of a fine walk through n or epsilon, a decided setting whose value
    jumps (any change but a small step of a number) is decided by another row of the table, so its reason in the
    report changes with it; any other setting jumps only where some decided setting's row changes; and where the
    model family changes, the report's words name both families."""
    jumps = 0
    for walk in walks():
        before, rows_before = planned_rows(walk[0])
        for f in walk[1:]:
            after, rows_after = planned_rows(f)
            moved = {s for s in rows_after if rows_before.get(s) is not rows_after[s]}
            for setting in set(before.settings) | set(after.settings):
                if near(before.settings.get(setting), after.settings.get(setting)):
                    continue
                jumps += 1
                step = f"{setting} from {before.settings.get(setting)!r} to {after.settings.get(setting)!r} at {f}"
                numbers = all(isinstance(p.settings.get(setting), (int, float, dict)) for p in (before, after))
                assert moved, f"a jump no rule explains: {step}"
                assert numbers or setting not in rows_after or setting in moved, f"a jump within one row: {step}"
            if before.settings["model.kind"] != after.settings["model.kind"]:
                assert before.reasons["model.kind"] in words(before) and after.reasons["model.kind"] in words(after)
                assert before.reasons["model.kind"] != after.reasons["model.kind"]
            before, rows_before = after, rows_after
    assert jumps > 0  # the walks cross the rules' thresholds


def test_a_declared_tables_groups_are_larger_than_other_datas_and_the_plan_says_why():
    """A tree over a declared table's attributes forms one group per TABLE_RECORDS_PER_PART records at epsilon 1 where
    other data form one per RECORDS_PER_PART, and the plan's reason names the table's size of group."""
    from dpgm import rules

    def chosen(n: float, schema: bool) -> Plan:
        return plan(PublicFacts(n_items=12, records_magnitude=10_000, epsilon=3.0, delta=1e-6, records=n,
                                attributes=4 if schema else None, schema=schema))

    table, items = chosen(20_000.0, True), chosen(20_000.0, False)
    assert table.settings["partition.k"] == 60_000 // rules.TABLE_RECORDS_PER_PART < items.settings["partition.k"]
    assert items.settings["partition.k"] == min(rules.MAX_PARTS, 60_000 // rules.RECORDS_PER_PART)
    assert f"one per {rules.TABLE_RECORDS_PER_PART:,} records" in table.reasons["partition.k"]
    assert (table.settings["partition.method"], items.settings["partition.method"]) == (
        rules.TABLE_PARTITIONER, rules.PARTITIONER)  # a table's groups by its own partitioner, with its reason
    assert f"formed by {rules.TABLE_PARTITIONER}" in table.reasons["partition.method"]
    assert "partition.method" in table.said and "partition.method" not in items.said


def test_a_multiplier_whose_release_is_switched_off_is_said_not_released():
    """A declared table's records all hold one item per attribute: no length bound is measured, and the plan says
    so rather than the share its unread default multiplier would cost; data with a measured bound show its share."""
    table = plan(PublicFacts(n_items=70, records_magnitude=1_000, epsilon=0.3, delta=1e-5, records=3_000.0,
                             attributes=35, schema=True))
    items = plan(PublicFacts(n_items=70, records_magnitude=1_000, epsilon=0.3, delta=1e-5, records=3_000.0))
    assert table.settings["model.mean_clip_quantile"] is None
    assert table.reasons["model.length_bound_noise_multiplier"] == "not released"
    assert items.settings["model.mean_clip_quantile"] is not None
    assert items.reasons["model.length_bound_noise_multiplier"].endswith("of rho (a Gaussian release)")
