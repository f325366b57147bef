"""benchmarks/wide_speed.py's projection: each stage scaled by what its time grows with."""

from __future__ import annotations

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
