"""Release: sampling from a trained run, output formats, atomic writes, no data access."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import torch

from dpgm import release as rel
from dpgm.cli import run_cli
from dpgm.clustering.base import size_shares
from dpgm.errors import DpgmError
from dpgm.training import run as run_mod
from tests.training.test_run import tiny_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("release")
    run_dir, _ = run_mod.train(tiny_config(tmp), progress=False)
    return run_dir


def test_part_probabilities_follow_noisy_sizes():
    p = size_shares(np.array([30.0, -5.0, 10.0]))  # projected to [27.5, 0, 7.5]: the total 35 is kept
    assert p.tolist() == pytest.approx([27.5 / 35, 0.0, 7.5 / 35])
    assert size_shares(np.array([-1.0, -2.0])).tolist() == pytest.approx([0.5, 0.5])


def test_csv_release_needs_only_the_release_folder(trained_run, tmp_path):
    """The release/ folder alone, copied where neither the data nor private/ exist, is enough."""
    shared = tmp_path / "shared"
    shutil.copytree(trained_run / "release", shared)
    out = tmp_path / "syn.csv"
    report = rel.release(shared, out, 1000, fmt="csv", seed=1, progress=False)
    assert report == {**json.loads((shared / "privacy_report.json").read_text()), "release": report["release"]}
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
    expected = size_shares(mixture.noisy_sizes)
    observed = np.bincount(parts, minlength=len(expected)) / len(parts)
    assert observed == pytest.approx(expected, abs=0.02)


def test_transactions_and_png_and_threshold(trained_run, tmp_path):
    """Each format writes the SAME records as the CSV for the same seed; threshold = probs >= T."""
    csv, txt, png = tmp_path / "syn.csv", tmp_path / "syn.txt", tmp_path / "grid.png"
    rel.release(trained_run, csv, 16, fmt="csv", seed=2, threshold=0.5, progress=False)
    rel.release(trained_run, txt, 16, fmt="transactions", seed=2, threshold=0.5, progress=False)
    rel.release(trained_run, png, 16, fmt="png", seed=2, threshold=0.5, progress=False)
    rows = np.loadtxt(csv, delimiter=",", skiprows=1).astype(int)
    lines = txt.read_text().splitlines()
    assert [sorted(map(int, line.split())) for line in lines] == [np.flatnonzero(r).tolist() for r in rows]
    mixture, g = rel.load_release(trained_run), torch.Generator().manual_seed(2)
    [(records, _)] = list(rel.sample_chunks(mixture, 16, g, threshold=0.5))
    np.testing.assert_array_equal(records, rows)
    grid = matplotlib.image.imread(png)[..., 0]
    assert grid.shape == (4 * 33 - 1, 4 * 33 - 1)  # 4 x 4 images of 8 x 8, scaled 4 times, 1-pixel gaps
    np.testing.assert_allclose(grid[:32:4, :32:4], rows[0].reshape(8, 8), atol=1e-6)


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
    with pytest.raises(DpgmError, match="no release/models.pt"):
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


def test_gz_output_is_gzipped_and_equals_the_plain_one(trained_run, tmp_path):
    import gzip

    plain, packed = tmp_path / "syn.csv", tmp_path / "syn.csv.gz"
    rel.release(trained_run, plain, 300, seed=4, progress=False)
    rel.release(trained_run, packed, 300, seed=4, progress=False)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()


def test_missing_output_folder_is_an_error_unless_mkdir(trained_run, tmp_path):
    with pytest.raises(DpgmError, match="does not exist .*--mkdir"):
        rel.release(trained_run, tmp_path / "typo" / "syn.csv", 10, progress=False)
    assert not (tmp_path / "typo").exists()
    rel.release(trained_run, tmp_path / "new" / "syn.csv", 10, progress=False, mkdir=True)
    assert (tmp_path / "new" / "syn.csv").is_file()


def test_bad_paths_fail_fast_with_one_line(tmp_path):
    """Before torch loads: exit 2, one line, well under a second of the command's own time."""
    import time

    for args in (["--run", str(tmp_path / "nope"), "--n", "5", "--out", str(tmp_path / "y.csv")],):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "generate.py"), *args],
                              capture_output=True, text=True, cwd=ROOT, check=False)
        elapsed = time.perf_counter() - start
        lines = [x for x in proc.stderr.splitlines() if not x.startswith("import time:")]
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
        assert " torch" not in proc.stderr  # nothing of torch was imported
        assert elapsed < 5.0  # generous for a loaded CI machine; ~0.3 s here


def test_generate_summary_prints_the_runs_report_and_the_release(trained_run, tmp_path, capsys):
    from tests.test_train_cli import load_script

    generate = load_script("generate")
    out = tmp_path / "syn.csv"
    assert run_cli(generate.main, ["--run", str(trained_run), "--n", "20", "--out", str(out), "--seed", "1",
                                   "--summary", "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert (trained_run / "release" / "privacy_report.md").read_text() in shown
    assert "## This release" in shown and "20 synthetic records (csv)" in shown and "a fixed sampling seed" in shown
    older = tmp_path / "older"
    shutil.copytree(trained_run / "release", older)
    (older / "privacy_report.md").unlink()  # a run from before dpgm wrote the markdown
    assert run_cli(generate.main, ["--run", str(older), "--n", "5", "--out", str(tmp_path / "o.csv"), "--summary",
                                   "--no-progress"]) == 2
    assert "no release/privacy_report.md" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()  # refused before drawing
