"""Release: sampling from a trained run, output formats, atomic writes, no data access."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpgm import release as rel
from dpgm.errors import DpgmError
from dpgm.training import run as run_mod
from dpgm.training.mixture import part_probabilities
from tests.training.test_run import tiny_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("release")
    run_dir, _ = run_mod.train(tiny_config(tmp), progress=False)
    return run_dir


def test_part_probabilities_follow_noisy_sizes():
    p = part_probabilities(np.array([30.0, -5.0, 10.0]))
    assert p.tolist() == pytest.approx([0.75, 0.0, 0.25])
    assert part_probabilities(np.array([-1.0, -2.0])).tolist() == pytest.approx([0.5, 0.5])


def test_csv_release_has_header_rows_and_report(trained_run, tmp_path, monkeypatch):
    import dpgm.data

    def no_data(*args, **kwargs):
        raise AssertionError("release must not read the training data")

    monkeypatch.setattr(dpgm.data, "load_dataset", no_data)
    out = tmp_path / "syn.csv"
    report = rel.release(trained_run, out, 1000, fmt="csv", seed=1, progress=False)
    lines = out.read_text().splitlines()
    assert lines[0].split(",")[:2] == ["px0", "px1"] and len(lines[0].split(",")) == 64
    rows = np.loadtxt(out, delimiter=",", skiprows=1)
    assert rows.shape == (1000, 64) and set(np.unique(rows)) <= {0.0, 1.0}
    side = json.loads(Path(f"{out}.privacy.json").read_text())
    assert side["epsilon"] == report["epsilon"] and side["release"]["records"] == 1000


def test_parts_are_drawn_in_proportion_to_noisy_sizes(trained_run):
    mixture = rel.load_release(trained_run)
    import torch

    g = torch.Generator().manual_seed(0)
    parts = np.concatenate([p for _, p in rel.sample_chunks(mixture, 20_000, g, chunk_size=5000)])
    expected = part_probabilities(mixture.noisy_sizes).numpy()
    observed = np.bincount(parts, minlength=len(expected)) / len(parts)
    assert observed == pytest.approx(expected, abs=0.02)


def test_transactions_and_png_and_threshold(trained_run, tmp_path):
    out = tmp_path / "syn.txt"
    rel.release(trained_run, out, 50, fmt="transactions", seed=2, progress=False)
    lines = out.read_text().splitlines()
    assert len(lines) == 50
    assert all(0 <= int(t) < 64 for line in lines for t in line.split())
    png = tmp_path / "grid.png"
    rel.release(trained_run, png, 16, fmt="png", seed=2, threshold=0.5, progress=False)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_killed_release_leaves_no_partial_file(trained_run, tmp_path, monkeypatch):
    real = rel.sample_chunks

    def dying(*args, **kwargs):
        for i, chunk in enumerate(real(*args, **kwargs)):
            if i == 1:
                raise KeyboardInterrupt
            yield chunk

    monkeypatch.setattr(rel, "sample_chunks", dying)
    out = tmp_path / "big.csv"
    with pytest.raises(KeyboardInterrupt):
        rel.release(trained_run, out, 25_000, fmt="csv", seed=3, progress=False)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_requests_are_one_line_errors(trained_run, tmp_path):
    with pytest.raises(DpgmError, match="no models.pt"):
        rel.release(tmp_path, tmp_path / "x.csv", 10)
    with pytest.raises(DpgmError, match="--n"):
        rel.release(trained_run, tmp_path / "x.csv", 0)


def test_generate_cli(trained_run, tmp_path):
    out = tmp_path / "synthetic.csv"
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), "--run", str(trained_run), "--n", "1000",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "epsilon" in proc.stdout and "add_remove" in proc.stdout
    assert len(out.read_text().splitlines()) == 1001
    assert Path(f"{out}.privacy.json").is_file()
    bad = subprocess.run([sys.executable, str(ROOT / "generate.py"), "--run", str(tmp_path / "nope"), "--n", "5",
                          "--out", str(tmp_path / "y.csv")], capture_output=True, text=True, cwd=ROOT, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr
