"""The rules' plan as data (dpgm.plan): every decided setting's reason is a row of the table that holds for it, the
report's words read those reasons, and a plan applies only options the config has."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dpgm.config import config_from_dict
from dpgm.errors import ConfigError
from dpgm.plan import DECIDED, TABLE, Plan, apply_plan, plan, table_markdown, words
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
