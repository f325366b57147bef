"""benchmarks/merge_threshold.py: a threshold's rows are the always-merged ones below it, the kept ones above."""

from __future__ import annotations

import pytest

from tests._benchmarks import load_benchmark

merge_threshold = load_benchmark("merge_threshold")


def _row(candidate: str, seed: int, measured: float, score: float) -> dict:
    return {"dataset": "d", "size": "full", "epsilon": 4.0, "seed": seed, "candidate": candidate, "score": score,
            "dependence": {"per_record_and_edge": measured}}


def test_a_threshold_takes_the_merged_row_where_the_measurement_is_below_it():
    rows = [_row("dep_keep", 0, 0.01, -0.1), _row("dep_merge", 0, 0.01, -0.3),
            _row("dep_keep", 1, 0.05, -0.2), _row("dep_merge", 1, 0.05, -0.4), _row("dep_keep", 2, 0.02, 0.0)]
    made = merge_threshold.threshold_rows(rows, 0.03)
    assert [(r["seed"], r["score"], r["taken"], r["candidate"]) for r in made] == [
        (0, -0.3, True, "merge0.03"), (1, -0.2, False, "merge0.03")]  # seed 2 would merge: no row that way
    assert [r["score"] for r in merge_threshold.threshold_rows(rows, 0.001)] == [-0.1, -0.2, 0.0]


def test_rows_that_measured_different_values_are_refused():
    rows = [_row("dep_keep", 0, 0.01, -0.1), _row("dep_merge", 0, 0.02, -0.3)]
    with pytest.raises(SystemExit, match="not the same draws"):
        merge_threshold.threshold_rows(rows, 0.03)


def test_a_length_gate_takes_the_histogram_rows_from_the_declared_scale_up():
    """``--gate lengths5``: N epsilon as the rules read it, N the declared magnitude (3,000 records count 1,000)."""
    def row(candidate: str, n_fit: int, epsilon: float, score: float) -> dict:
        return {"dataset": "d", "size": str(n_fit), "n_fit": n_fit, "epsilon": epsilon, "seed": 0,
                "candidate": candidate, "score": score}

    rows = [row(c, n, e, s) for n, e in ((3_000, 1.0), (3_000, 4.0), (30_000, 1.0))
            for c, s in (("default", -0.1), ("lengths5", -0.2))]
    made = merge_threshold.threshold_rows(rows, 2_000, merge_threshold.GATES["lengths5"])
    assert [(r["size"], r["epsilon"], r["taken"], r["score"]) for r in made] == [
        ("3000", 1.0, False, -0.1), ("3000", 4.0, True, -0.2), ("30000", 1.0, True, -0.2)]
    assert {r["candidate"] for r in made} == {"len5_2000"}
