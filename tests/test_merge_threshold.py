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
    assert [(r["seed"], r["score"], r["merged"], r["candidate"]) for r in made] == [
        (0, -0.3, True, "merge0.03"), (1, -0.2, False, "merge0.03")]  # seed 2 would merge: no row that way
    assert [r["score"] for r in merge_threshold.threshold_rows(rows, 0.001)] == [-0.1, -0.2, 0.0]


def test_rows_that_measured_different_values_are_refused():
    rows = [_row("dep_keep", 0, 0.01, -0.1), _row("dep_merge", 0, 0.02, -0.3)]
    with pytest.raises(SystemExit, match="not the same draws"):
        merge_threshold.threshold_rows(rows, 0.03)
