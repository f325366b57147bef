"""benchmarks/wide_speed.py's projection: each stage scaled by what its time grows with."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests._benchmarks import load_benchmark

wide_speed = load_benchmark("wide_speed")


def test_projection_scales_the_release_by_records_drawn_the_rest_by_records_read_and_keeps_training() -> None:
    cpu = {"partition": 2.0, "training": 80.0, "calibration": 30.0, "drawing": 10.0, "tilt": 20.0, "writing": 1.0}
    measured = {"settings": {"records": 200_000, "release": None},
                "this": {"seconds": {k: 2 * v for k, v in cpu.items()}, "cpu_seconds": cpu}}
    out = wide_speed.project(measured, 1_000_000, 500_000)
    assert out["cpu_seconds"] == {"partition": 10.0, "training": 80.0, "calibration": 30.0, "drawing": 25.0,
                                  "tilt": 50.0, "writing": 2.5}
    assert out["seconds"]["tilt"] == 100.0
    assert out["total_cpu_seconds"] == pytest.approx(197.5)


def test_the_records_written_for_a_run_on_ranks_read_back_as_they_were(tmp_path) -> None:
    from dpgm.data.transactions import load_transactions

    x = wide_speed.wide_dataset(300, 40, length=3.0, profiles=4, seed=2).records.tolil()
    x[5] = 0  # an empty record keeps its line
    records = x.tocsr()
    wide_speed.write_records(SimpleNamespace(records=records), tmp_path / "wide.txt")
    back = load_transactions(tmp_path / "wide.txt", n_items=40)
    assert back.records.shape == (300, 40)
    assert records[5].nnz == 0 and (back.records != records).nnz == 0
