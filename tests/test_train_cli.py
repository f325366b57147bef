"""train.py command line: one run in a process of its own (forked from the preloaded server, tests/_forked.py),
then in-process calls for errors and flags."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from dpgm.cli import run_cli
from tests._forked import run_script

ROOT = Path(__file__).resolve().parents[1]
DIGITS = str(ROOT / "configs/digits.yaml")


def load_script(name: str):
    """Import a top-level script (train.py, generate.py, evaluate.py) as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train_script = load_script("train")


def test_train_cli_runs_digits_config_quickly(tmp_path):
    (tmp_path / "out").mkdir()
    proc = run_script(ROOT / "train.py", ["--config", DIGITS, "--no-progress", "--set", f"runs_dir={tmp_path}", "--set",
                                          "seed=0", "--set", "training.epochs=1"],
                      cwd=ROOT, env=dict(os.environ), timeout=300, folder=tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "epsilon =" in proc.stdout
    assert (tmp_path / "digits" / "release" / "privacy_report.json").is_file()
    assert not (tmp_path / "digits" / "private").exists()


@pytest.mark.parametrize(
    "setup, expected",
    [
        (["--set", "training.sampling_rate=3"], "training.sampling_rate"),
        (["--set", "partition.kk=3"], "unknown key 'kk'"),
        (["--set", "privacy.target_epsilon=0.001"], "budget"),
        (["--set", "data.source=csv", "--set", "data.path=missing.csv"], "missing.csv"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_leaves_no_run(tmp_path, capsys, setup, expected):
    code = run_cli(train_script.main, ["--config", DIGITS, "--no-progress", "--set", f"runs_dir={tmp_path}", *setup])
    err = capsys.readouterr().err
    assert code == 2, err
    assert expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # a failed run leaves no (empty) run directory


def test_non_binary_csv_is_refused(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n0,1\n2,0\n")
    code = run_cli(train_script.main, ["--config", DIGITS, "--no-progress", "--set", f"runs_dir={tmp_path}",
                                       "--set", "data.source=csv", "--set", f"data.path={data}"])
    assert code == 2 and "binary" in capsys.readouterr().err


def test_nonprivate_diagnostics_say_so_first(tmp_path, capsys):
    code = run_cli(train_script.main, ["--config", DIGITS, "--no-progress", "--nonprivate-diagnostics",
                                       "--set", f"runs_dir={tmp_path}", "--set", "seed=0", "--set", "training.epochs=0.2"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith("NOT DIFFERENTIALLY PRIVATE")
    assert "wall seconds per stage (NOT private): {" in out and '"training": ' in out
    report_text = (tmp_path / "digits" / "release" / "privacy_report.json").read_text()
    assert "NOT DIFFERENTIALLY PRIVATE" in report_text.splitlines()[1]  # the first key of the report
    assert json.loads(report_text)["warning"].startswith("NOT DIFFERENTIALLY PRIVATE")


def test_bare_config_name_resolves_to_the_shipped_configs_from_anywhere(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # not the repository root
    code = run_cli(train_script.main, ["--config", "digits.yaml", "--no-progress", "--threads", "1",
                                       "--set", f"runs_dir={tmp_path}", "--set", "training.epochs=0.2"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "digits" / "release" / "models.pt").is_file()
    code = run_cli(train_script.main, ["--config", "nosuch", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "shipped configs: " in err and "digits" in err and "transactions" in err


def test_summary_prints_the_privacy_report_in_plain_language(tmp_path, capsys):
    code = run_cli(train_script.main, ["--config", DIGITS, "--no-progress", "--summary", "--set", f"runs_dir={tmp_path}",
                                       "--set", "seed=0", "--set", "training.epochs=0.2", "--set", "data.limit=300"])
    assert code == 0
    out = capsys.readouterr().out
    summary = (tmp_path / "digits" / "release" / "privacy_report.md").read_text()
    assert out.endswith(summary) and "# Privacy report" in out and "| stage | what it did |" in out
    run_cli(train_script.main, ["--config", DIGITS, "--no-progress", "--set", f"runs_dir={tmp_path}",
                                "--set", "name=quiet", "--set", "seed=0", "--set", "training.epochs=0.2",
                                "--set", "data.limit=300"])
    assert "# Privacy report" not in capsys.readouterr().out  # only when asked
