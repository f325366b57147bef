"""benchmarks/rules_lodo.py: settings labelled by the items kept, held out with their dataset."""

from __future__ import annotations

from tests._benchmarks import load_benchmark

lodo = load_benchmark("rules_lodo")


def row(dataset: str, size: str, candidate: str, score: float, top_items: int | None = None) -> dict:
    return {"dataset": dataset, "size": size, "top_items": top_items, "epsilon": 1.0, "seed": 0,
            "candidate": candidate, "score": score, "groups": {str(g): 0.1 for g in range(1, 6)},
            "marginals": {str(g): 0.1 for g in range(1, 6)}, "tvd2": 0.01, "marginals_tvd2": 0.02}


def test_a_setting_of_fewer_items_is_its_own_setting_and_is_held_out_with_its_dataset():
    rows = [row("retail", "30000", "default", -0.5), row("retail", "30000", "pitems", -0.5),
            row("retail", "30000", "default", -0.2, top_items=17), row("retail", "30000", "pitems", -0.9, top_items=17),
            row("msnbc", "30000", "default", -0.6), row("msnbc", "30000", "pitems", -1.0)]
    assert [lodo.row_size(r) for r in rows[:3]] == ["30000", "30000", "30000@17"]
    assert sorted(["full", "30000@17", "3000", "30000"], key=lodo.size_order) == ["3000", "30000", "30000@17", "full"]
    text = lodo.summarize(rows, groups=False)
    assert "retail/30000@17 eps 1" in text
    retail = next(line for line in text.splitlines() if line.strip().startswith("retail "))
    # held out: retail's two settings together; msnbc alone chooses pitems, whose mean on retail is -0.7
    assert "30000,30000@17" in retail and "pitems" in retail and "-0.700" in retail


def test_one_rule_for_every_epsilon_is_chosen_on_the_other_datasets_at_both():
    """msnbc alone prefers x at epsilon 1 and default at 4, by more at 4: held out, retail gets default at both."""
    def at(eps: float, *args) -> dict:
        return {**row(*args), "epsilon": eps}

    rows = [at(1.0, "msnbc", "30000", "default", -0.5), at(1.0, "msnbc", "30000", "x", -0.6),
            at(4.0, "msnbc", "30000", "default", -0.9), at(4.0, "msnbc", "30000", "x", -0.6),
            at(1.0, "retail", "30000", "default", -0.2), at(1.0, "retail", "30000", "x", -0.4),
            at(4.0, "retail", "30000", "default", -0.3), at(4.0, "retail", "30000", "x", -0.5)]
    text = lodo.summarize(rows, groups=False)
    joint = text[text.index("one rule for every epsilon"):].splitlines()
    retail = next(line for line in joint if line.strip().startswith("retail "))
    msnbc = next(line for line in joint if line.strip().startswith("msnbc "))
    assert retail.split()[1] == "default" and "-0.200 (-0.200)" in retail and "-0.300 (-0.300)" in retail
    assert msnbc.split()[1] == "x" and "-0.600 (-0.500)" in msnbc  # retail prefers x at both epsilons
    assert any("eps 4: held-out mean -0.450, worst -0.300 (retail)" in line for line in joint)
