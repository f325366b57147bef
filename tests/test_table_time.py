"""benchmarks/table_time.py: each method timed in a process of its own, its seconds, memory and the ratios."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests._benchmarks import BENCHMARKS, load_benchmark
from tests._forked import run_script
from tests.test_benchmarks_smoke import TIMEOUT, tiny_table


def test_dpgm_is_timed_in_a_process_of_its_own(tmp_path: Path) -> None:
    tiny_table(tmp_path, "salary")
    argv = ["--table", "salary", "--rows", "300", "--peers", "--data-dir", str(tmp_path),
            "--json", str(tmp_path / "out.json")]
    env = {**os.environ, "PYTHONPATH": str(BENCHMARKS.parent), "MPLBACKEND": "Agg"}
    done = run_script(BENCHMARKS / "table_time.py", argv, cwd=BENCHMARKS.parent, env=env, timeout=TIMEOUT,
                      folder=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((tmp_path / "out.json").read_text())
    row = found["methods"]["dpgm"]
    assert list(found["methods"]) == ["dpgm"] and found["ratios"] == {}  # no peer: nothing to compare
    assert row["n"] == row["n_synthetic"] == 300 and row["columns"] == 3 and row["delta"] == 1e-4
    assert row["total_s"] == pytest.approx(row["fit_s"] + row["sample_s"] + row["write_s"])
    assert 0 < row["total_cpu_s"] == pytest.approx(row["fit_cpu_s"] + row["sample_cpu_s"] + row["write_cpu_s"])
    assert row["peak_rss_mb"] >= row["loaded_rss_mb"] > 0 and row["csv_bytes"] > 300
    assert row["spent_epsilon"] <= 1.0 and row["measured"]["date"] and found["settings"]["threads"] == 1


def test_the_ratios_name_each_target_on_both_clocks() -> None:
    bench = load_benchmark("table_time")
    rows = {"dpgm": {"total_s": 30.0, "total_cpu_s": 30.0}, "mst": {"total_s": 20.0, "total_cpu_s": 10.0},
            "aim": {"total_s": 200.0, "total_cpu_s": 300.0}}
    out = bench.ratios(rows)
    assert (out["dpgm_over_mst_s"], out["target_met_mst_s"]) == (1.5, True)
    assert (out["dpgm_over_mst_cpu_s"], out["target_met_mst_cpu_s"]) == (3.0, False)
    assert (out["dpgm_over_aim_s"], out["target_met_aim_s"]) == (0.15, False)
    assert (out["dpgm_over_aim_cpu_s"], out["target_met_aim_cpu_s"]) == (0.1, True)
    rows["aim"]["total_s"] = 50.0  # AIM within a minute: the tenth does not apply
    assert bench.ratios(rows)["target_met_aim_s"]
    assert bench.ratios({"mst": rows["mst"]}) == {}
