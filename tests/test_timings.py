"""Wall seconds per stage: collected in a timing scope, in a run's report only with non-private diagnostics."""

from __future__ import annotations

import json
import time

import pytest

from dpgm import release as rel
from dpgm.pipeline import run as run_mod
from dpgm.privacy.verdict import judge
from dpgm.progress import timed, timing_scope
from tests.training.test_run import tiny_config


def test_timed_steps_add_up_by_name_inside_a_scope_only():
    with timed("outside"):  # no scope: nothing is kept, nothing fails
        pass
    with timing_scope() as seconds:
        for _ in range(2):
            with timed("nap"):
                time.sleep(0.01)
        with pytest.raises(ValueError), timed("failed"):
            raise ValueError
    assert set(seconds) == {"nap", "failed"} and seconds["nap"] >= 0.02
    with timing_scope() as again:
        pass
    assert again == {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same tiny run without and with non-private diagnostics: (report, run directory) of each."""
    tmp = tmp_path_factory.mktemp("timings")
    out = {}
    for diagnostics in (False, True):
        cfg = tiny_config(tmp, name=f"d{diagnostics}", nonprivate_diagnostics=str(diagnostics).lower(),
                          **{"training.epochs": 0.2, "model.calibrate": "true"})
        run_dir, report = run_mod.train(cfg, progress=False)
        out[diagnostics] = report, run_dir
    return out


def test_a_run_reports_its_stage_timings_only_with_nonprivate_diagnostics(runs):
    private, _ = runs[False]
    assert "nonprivate_seconds" not in private and judge(private).label != "NOT PRIVATE"
    report, run_dir = runs[True]
    assert judge(report).headline.startswith("NOT DIFFERENTIALLY PRIVATE")
    seconds = report["nonprivate_seconds"]
    assert {"loading", "partition", "part_means", "training", "calibration"} <= set(seconds)
    assert all(value >= 0 for value in seconds.values())
    written = json.loads((run_dir / "release" / "privacy_report.json").read_text())
    assert written["nonprivate_seconds"] == seconds


def test_a_release_times_its_drawing_and_writing(runs, tmp_path):
    _, run_dir = runs[False]
    with timing_scope() as seconds:
        report = rel.release(run_dir, tmp_path / "out.csv", 200, seed=0, progress=False)
    assert {"drawing", "writing"} <= set(seconds)
    assert "seconds" not in json.dumps(report)  # the release's report stays as it was
