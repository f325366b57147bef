"""benchmarks/tables_lodo.py: its candidates patch constants that exist, and one that does not is refused; its deep
peers' pipe to another environment's Python."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dpgm.errors import ConfigError
from tests._benchmarks import load_benchmark

lodo = load_benchmark("tables_lodo")


@pytest.mark.parametrize("name", sorted(lodo.CANDIDATES))
def test_every_candidate_patches_a_constant_that_exists(name: str) -> None:
    assert lodo.candidate_patch(name) == lodo.CANDIDATES[name]


def test_a_candidate_naming_a_removed_constant_is_refused_before_any_fit(monkeypatch) -> None:
    monkeypatch.setitem(lodo.CANDIDATES, "gone", {"dpgm.stages.attribute_pairs.NO_SUCH_CONSTANT": 1.0})
    with pytest.raises(SystemExit, match="candidate gone: no constant dpgm.stages.attribute_pairs.NO_SUCH_CONSTANT"):
        lodo.candidate_patch("gone")
    with pytest.raises(SystemExit, match="candidate gone"):
        lodo.main(["--candidates", "gone", "--tables", "salary", "--data-dir", "/nonexistent"])


def test_a_deep_peer_is_refused_before_any_fit_without_its_python(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"the deep peers \(dpctgan\) need --deep-python"):
        lodo.main(["--peers", "dpctgan", "--tables", "salary", "--deep-python", str(tmp_path / "none"),
                   "--data-dir", "/nonexistent"])


def test_a_deep_peer_s_draws_come_back_through_the_pipe_as_a_table(tmp_path: Path) -> None:
    """The fit sample's codes go to the deep peer's Python and its drawn codes come back decoded to the table (a
    stand-in child here that draws the fit rows in reverse; the real one needs smartnoise-synth's environment)."""
    folder = Path(os.environ.get("DPGM_DATA_DIR", "data")) / "tables"
    if not (folder / "online-shoppers").is_dir():
        pytest.skip("the shared tables are not here (DPGM_DATA_DIR)")
    child = tmp_path / "child.py"
    child.write_text(
        "import argparse, json, numpy as np\n"
        "p = argparse.ArgumentParser(); [p.add_argument(a) for a in ('--synth', '--codes', '--out', '--epsilon',"
        " '--delta', '--records', '--seed', '--threads')]\n"
        "a = p.parse_args(); codes = np.load(a.codes)['codes']\n"
        "assert a.synth == 'dpctgan' and len(codes) == int(a.records) and float(a.epsilon) == 1.0\n"
        "np.savez(a.out, codes=codes[::-1])\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nshift\nexec "{sys.executable}" "{child}" "$@"\n')
    python.chmod(0o755)
    split = lodo.Split("online-shoppers", folder)
    rows = split.fit_rows(200, seed=0)
    fit = lodo.Fit(split.frame.iloc[rows], split.table.rows(rows), 0, 1.0, 1e-5)
    table, report = lodo.fit_peer("dpctgan", split, fit, argparse.Namespace(deep_python=str(python), threads=1))
    assert table.n == 200 and np.array_equal(table.codes, fit.table.codes[::-1])
    assert report["spent_epsilon"] == 1.0


def test_a_deep_peer_fits_a_tiny_table_in_its_own_environment(tmp_path: Path) -> None:
    """DP-CTGAN through smartnoise-synth on 300 rows (where $DPGM_DEEP_PEER_PYTHON names that environment's Python)."""
    python = os.environ.get("DPGM_DEEP_PEER_PYTHON")
    if not python:
        pytest.skip("no smartnoise-synth environment ($DPGM_DEEP_PEER_PYTHON)")
    folder = Path(os.environ.get("DPGM_DATA_DIR", "data")) / "tables"
    if not (folder / "online-shoppers").is_dir():
        pytest.skip("the shared tables are not here (DPGM_DATA_DIR)")
    split = lodo.Split("online-shoppers", folder)
    rows = split.fit_rows(300, seed=0)
    fit = lodo.Fit(split.frame.iloc[rows], split.table.rows(rows), 0, 1.0, 1e-5)
    table, _ = lodo.fit_peer("dpctgan", split, fit, argparse.Namespace(deep_python=python, threads=1))
    sizes = np.asarray(split.schema.attribute_sizes)
    assert table.n == 300 and ((table.codes >= 0) & (table.codes < sizes)).all()


def test_one_rule_for_every_epsilon_scores_each_table_by_what_the_others_choose() -> None:
    """Three tables, two epsilons: a candidate that wins on two tables is chosen for the third, where it loses, and
    scored there; a candidate no longer in CANDIDATES (a rule since removed) is read from the rows alike."""
    scores = {"t1": (-1.0, -2.0), "t2": (-1.0, -2.0), "t3": (-1.0, -0.5)}  # (default, gone)
    rows = [{"dataset": t, "size": "3000", "epsilon": eps, "seed": 0, "candidate": c, "score": s + eps}
            for t, pair in scores.items() for eps in (0.3, 1.0) for c, s in zip(("default", "gone"), pair)]
    text = lodo.one_rule_text(rows)
    assert "among default, gone" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines()[1:4]}
    assert lines["t3"][1] == "gone" and float(lines["t3"][2]) == pytest.approx(-0.5 + 0.65)
    assert lines["t1"][1] == "gone" and float(lines["t1"][2]) == pytest.approx(-2.0 + 0.65)
    assert "mean over held-out tables -0.850, worst +0.150 (t3)" in text.splitlines()[4]
