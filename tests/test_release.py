"""Release: sampling from a trained run, output formats, atomic writes, no data access."""

from __future__ import annotations

import json
import os
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
from dpgm.pipeline import run as run_mod
from tests._forked import Done, run_script
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
    def generate(*argv: str) -> Done:  # ``python generate.py ARGV``, forked from a server that imported dpgm
        return run_script(ROOT / "generate.py", list(argv), cwd=ROOT, env=dict(os.environ), timeout=120,
                          folder=tmp_path)

    proc = generate("--run", str(trained_run), "--n", "1000", "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "epsilon" in proc.stdout and "add_remove" in proc.stdout
    assert len(out.read_text().splitlines()) == 1001
    assert Path(f"{out}.privacy.json").is_file()
    bad = generate("--run", str(tmp_path / "nope"), "--n", "5", "--out", str(tmp_path / "y.csv"))
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
    import resource

    for args in (["--run", str(tmp_path / "nope"), "--n", "5", "--out", str(tmp_path / "y.csv")],):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "generate.py"), *args],
                              capture_output=True, text=True, cwd=ROOT, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = [x for x in proc.stderr.splitlines() if not x.startswith("import time:")]
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
        assert " torch" not in proc.stderr  # nothing of torch was imported
        # CPU seconds of the child, not wall time: a loaded machine must not fail it; ~0.3 s here
        assert (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) < 2.0


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


# ---------------------------------------------------------------- runs partitioned by label


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    """A tiny digits run with one part (and one VAE) per label 0..9."""
    tmp = tmp_path_factory.mktemp("labelled")
    cfg = tiny_config(tmp, **{"name": "labels", "partition.method": "label", "partition.k": 10,
                              "partition.noise_multiplier": 2.0})
    run_dir, _ = run_mod.train(cfg, progress=False)
    return run_dir


def csv_labels(path: Path) -> tuple[list[str], np.ndarray]:
    """The header and the label column (the last) of a labelled CSV release."""
    header = path.read_text().split("\n", 1)[0].split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)[:, -1]


def test_labelled_csv_release_follows_the_noisy_label_histogram(labelled_run, tmp_path):
    """20,000 records: the label column is last, holds declared labels only, and its shares are the
    released noisy label histogram's (the noisy part sizes of the release, as the report shows them)."""
    out = tmp_path / "syn.csv"
    report = rel.release(labelled_run, out, 20_000, seed=0, progress=False)
    header, labels = csv_labels(out)
    assert header[-1] == "label" and header[:-1] == [f"px{j}" for j in range(64)]
    assert set(np.unique(labels)) <= set(range(10)) and len(labels) == 20_000
    noisy = rel.load_release(labelled_run).noisy_sizes
    assert noisy.tolist() == report["noisy_part_sizes"]
    assert np.bincount(labels, minlength=10) / len(labels) == pytest.approx(size_shares(noisy), abs=0.015)
    assert report["release"]["labels"] == {"labels": list(range(10)), "column": "label"}


def test_labels_restrict_the_release_and_renormalise_the_histogram(labelled_run, tmp_path):
    out = tmp_path / "syn.csv"
    rel.release(labelled_run, out, 6000, seed=1, labels=[7, 0, 3], progress=False)
    _, labels = csv_labels(out)
    shares = size_shares(rel.load_release(labelled_run).noisy_sizes)[[0, 3, 7]]
    observed = np.bincount(labels, minlength=10)
    assert observed.sum() == observed[[0, 3, 7]].sum() == 6000
    assert observed[[0, 3, 7]] / 6000 == pytest.approx(shares / shares.sum(), abs=0.025)


def test_per_label_draws_exactly_n_of_each_label(labelled_run, tmp_path):
    out = tmp_path / "syn.csv"
    report = rel.release(labelled_run, out, None, seed=2, labels=[3, 1], per_label=7, progress=False)
    _, labels = csv_labels(out)
    assert labels.tolist() == [3] * 7 + [1] * 7  # in the order asked
    assert report["release"]["records"] == 14 and report["release"]["per_label"] == 7
    rel.release(labelled_run, out, None, seed=2, per_label=3, progress=False)
    assert np.bincount(csv_labels(out)[1]).tolist() == [3] * 10  # every declared label


def test_labelled_png_has_one_scaled_row_per_label(labelled_run, tmp_path):
    """Each row holds the samples of one label; an 8x8 digit is a 32x32 cell, 1-pixel separators."""
    png = tmp_path / "grid.png"
    rel.release(labelled_run, png, None, fmt="png", seed=3, labels=[0, 3, 7], per_label=5, progress=False)
    grid = matplotlib.image.imread(png)[..., 0]
    assert grid.shape == (3 * 33 - 1, 5 * 33 - 1)
    csv = tmp_path / "same.csv"
    rel.release(labelled_run, csv, None, seed=3, labels=[0, 3, 7], per_label=5, progress=False)
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    second_row_first_digit = rows[5, :64].reshape(8, 8)  # label 3's first sample
    np.testing.assert_allclose(grid[33:65:4, 0:32:4], second_row_first_digit, atol=1e-6)
    rel.release(labelled_run, png, 30, fmt="png", seed=3, progress=False)  # following the histogram: ten rows
    assert matplotlib.image.imread(png).shape[0] == 10 * 33 - 1


def test_label_requests_are_one_line_errors(labelled_run, trained_run, tmp_path, capsys):
    from tests.test_train_cli import load_script

    generate = load_script("generate")
    out = tmp_path / "syn.csv"
    cases = [
        ([labelled_run, "--n", "10", "--labels", "0,12"], "12 is not a declared label (this run's labels: 0,1,2,3,4,5,6,7,8,9)"),
        ([labelled_run, "--n", "10", "--labels", "zero"], "comma-separated integer labels"),
        ([labelled_run, "--n", "10", "--per-label", "3"], "not both"),
        ([labelled_run], "--n is required"),
        ([labelled_run, "--per-label", "0"], "--per-label must be >= 1"),
        ([trained_run, "--n", "10", "--labels", "1"], "need a run partitioned by label"),
        ([trained_run, "--per-label", "2"], "need a run partitioned by label"),
    ]
    for (run, *args), message in cases:
        code = run_cli(generate.main, ["--run", str(run), *args, "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error:") and message in err and err.count("\n") == 1, err
        assert not out.exists()


def test_generate_cli_per_label_and_summary(labelled_run, tmp_path, capsys):
    from tests.test_train_cli import load_script

    generate = load_script("generate")
    out = tmp_path / "syn.csv"
    assert run_cli(generate.main, ["--run", str(labelled_run), "--per-label", "4", "--labels", "2,5", "--out",
                                   str(out), "--seed", "1", "--summary", "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert "wrote 8 records" in shown
    assert "Labels 2, 5: 4 records of each. The label is the last column, 'label'." in shown
    assert np.bincount(csv_labels(out)[1]).tolist() == [0, 0, 4, 0, 0, 4]
