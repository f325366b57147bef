"""train.py command line: a real run, and exit code 2 with one line for bad configs and data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_train_cli_runs_digits_config_quickly(tmp_path):
    proc = run_train("--config", str(ROOT / "configs/digits.yaml"), "--no-progress",
                     "--set", f"runs_dir={tmp_path}", "--set", "seed=0", "--set", "training.epochs=1", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "epsilon =" in proc.stdout
    assert (tmp_path / "digits" / "privacy_report.json").is_file()


@pytest.mark.parametrize(
    "setup, expected",
    [
        (["--set", "training.sampling_rate=3"], "training.sampling_rate"),
        (["--set", "partition.kk=3"], "unknown key 'kk'"),
        (["--set", "partition.k=5000"], "parts for only"),
        (["--set", "privacy.target_epsilon=0.001"], "budget"),
        (["--set", "data.source=csv", "--set", "data.path=missing.csv"], "missing.csv"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, setup, expected):
    proc = run_train("--config", str(ROOT / "configs/digits.yaml"), "--no-progress",
                     "--set", f"runs_dir={tmp_path}", *setup, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_non_binary_csv_is_refused(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n0,1\n2,0\n")
    proc = run_train("--config", str(ROOT / "configs/digits.yaml"), "--no-progress", "--set", f"runs_dir={tmp_path}",
                     "--set", "data.source=csv", "--set", f"data.path={data}", cwd=ROOT)
    assert proc.returncode == 2 and "binary" in proc.stderr
