"""benchmarks/rules_sweep.py: the shipped rules beside every peer, paired by seed."""

from __future__ import annotations

import json

import pytest

from tests._benchmarks import load_benchmark

sweep = load_benchmark("rules_sweep")


def row(seed: int, groups: list[float], *, who: str = "default", marginals: float = 0.1, dataset: str = "msnbc",
        size: str = "3000", epsilon: float = 1.0, tvd2: float = 0.01) -> dict:
    peer = who if who != "default" else None
    return {"dataset": dataset, "size": size, "epsilon": epsilon, "seed": seed, "n_fit": 3000, "n_items": 17,
            "candidate": who if peer is None else f"peer:{who}", **({"peer": peer} if peer else {}),
            "groups": {str(g + 1): v for g, v in enumerate(groups)},
            "marginals": {str(g + 1): marginals for g in range(5)}, "marginals_tvd2": 0.02,
            "score": sum(groups) / 5, "tvd2": tvd2, "seconds": 1.0}


def test_a_peer_is_compared_on_the_seeds_both_ran_only():
    ours = {0: row(0, [0.05] * 5), 1: row(1, [0.5] * 5)}
    theirs = {0: row(0, [0.06, 0.06, 0.04, 0.04, 0.06], who="mst"), 2: row(2, [0.01] * 5, who="mst")}
    got = sweep.compare(ours, theirs)
    assert got["seeds"] == 1
    assert got["at_or_below"] == 3
    assert got["dpgm_groups"] == [0.05] * 5
    assert sweep.compare(ours, {5: theirs[2]}) == {"seeds": 0}


def test_every_seed_of_a_shipped_file_counts_once_and_other_files_rules_are_ignored():
    old = [row(s, [0.2] * 5) for s in range(3)] + [row(s, [0.09] * 5, who="mst") for s in range(3)]
    a = [row(s, [0.05] * 5) for s in range(4)]
    cells = sweep.sweep({"old.json": old, "a.json": a}, ["a.json"])
    assert len(cells) == 1
    c = cells[0]
    assert c["seeds"] == 4 and c["groups"] == pytest.approx([0.05] * 5)  # seeds 0..3; old.json's rules unused
    assert c["below_marginals"] == 5
    assert c["peers"]["mst"]["seeds"] == 3 and c["peers"]["mst"]["at_or_below"] == 5
    assert sweep.targets(cells)["1"]["mst"]["at_or_below_4_of_5"] == 1


def test_a_later_shipped_file_replaces_the_settings_it_reran():
    a = [row(s, [0.05] * 5) for s in range(3)] + [row(s, [0.07] * 5, dataset="retail") for s in range(3)]
    b = [row(s, [0.04] * 5) for s in range(10)]  # msnbc re-ran with ten seeds under a change of the rules
    cells = {c["dataset"]: c for c in sweep.sweep({"a.json": a, "b.json": b}, ["a.json", "b.json"])}
    assert cells["msnbc"]["seeds"] == 10 and cells["msnbc"]["groups"] == pytest.approx([0.04] * 5)
    assert cells["retail"]["seeds"] == 3 and cells["retail"]["groups"] == pytest.approx([0.07] * 5)


def test_two_files_that_disagree_on_one_seed_are_refused():
    with pytest.raises(ValueError, match="disagree"):
        sweep.sweep({"a.json": [row(0, [0.05] * 5)], "b.json": [row(0, [0.06] * 5, who="mst")],
                     "c.json": [row(0, [0.07] * 5, who="mst")]}, ["a.json"])


def test_the_3way_tvd_is_compared_where_both_rows_hold_it():
    ours = {0: {**row(0, [0.05] * 5), "tvd3": 0.02}, 1: row(1, [0.05] * 5)}
    theirs = {0: {**row(0, [0.06] * 5, who="mst"), "tvd3": 0.03}, 1: {**row(1, [0.06] * 5, who="mst"), "tvd3": 0.5}}
    got = sweep.compare(ours, theirs)
    assert (got["dpgm_tvd3"], got["tvd3"], got["tvd3_seeds"]) == (0.02, 0.03, 1)


def test_the_worst_dataset_is_the_largest_mean_over_its_sizes():
    rows = [row(0, [0.05] * 5, dataset="msnbc", size="3000"), row(0, [0.3] * 5, dataset="msnbc", size="30000"),
            row(0, [0.2] * 5, dataset="retail", size="3000")]
    cells = sweep.sweep({"f.json": rows}, ["f.json"])
    w = sweep.worst(cells)["1"]
    assert w["worst"] == "retail"
    assert abs(w["per_dataset"]["msnbc"] - 0.175) < 1e-12


def test_the_command_writes_the_summary_and_refuses_a_missing_file(tmp_path, capsys):
    path = tmp_path / "rules_lodo_x.json"
    path.write_text(json.dumps({"rows": [row(0, [0.05] * 5), row(0, [0.06] * 5, who="aim")]}))
    out = tmp_path / "sweep.json"
    assert sweep.main([str(path), "--shipped", path.name, "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["cells"][0]["peers"]["aim"]["at_or_below"] == 5
    assert "provenance" in summary
    assert sweep.main([str(tmp_path / "absent.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_single_item_tvd_target_is_counted_against_mst_within_its_ratio():
    ours = [{**row(0, [0.05] * 5, dataset=d), "tvd1": t} for d, t in (("msnbc", 0.0119), ("retail", 0.0121))]
    mst = [{**row(0, [0.05] * 5, who="mst", dataset=d), "tvd1": 0.01} for d in ("msnbc", "retail")]
    cells = sweep.sweep({"f.json": ours + mst}, ["f.json"])
    t = sweep.targets(cells)["1"]["mst"]
    assert (t["tvd1_within"], t["tvd1_settings"]) == (1, 2)
    assert "1.19" in sweep.text(cells)


def test_a_shipped_entry_may_name_the_candidate_that_became_the_rules():
    rows = [row(0, [0.05] * 5), {**row(0, [0.03] * 5), "candidate": "better"}]
    ours, _ = sweep.gather({"f.json": rows}, ["f.json:better"])
    [runs] = ours.values()
    assert runs[0]["groups"]["1"] == 0.03
    ours, _ = sweep.gather({"f.json": rows}, ["f.json"])
    assert next(iter(ours.values()))[0]["groups"]["1"] == 0.05
