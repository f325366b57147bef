"""Outputs that cannot be written, releases too big to write, SIGTERM mid-write, broken config and
report files: each ends in one line on stderr (exit 2, or 143 for SIGTERM), never a traceback or a
half-written file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import dpgm
from dpgm import io as dpgm_io
from dpgm import release as rel
from dpgm.artifact import MAX_PNG_IMAGES, MAX_RECORDS, PartLabels, ReleasedMixture, RunLayout
from dpgm.cli import run_cli
from dpgm.errors import ConfigError, DpgmError
from dpgm.io import OutputError, check_output
from dpgm.pipeline import run as run_mod
from tests._forked import start_script
from tests.test_train_cli import DIGITS, load_script
from tests.training.test_run import tiny_config

ROOT = Path(__file__).resolve().parents[1]
generate = load_script("generate")
train_script = load_script("train")


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    run_dir, _ = run_mod.train(tiny_config(tmp_path_factory.mktemp("bad_outputs")), progress=False)
    return run_dir


def one_line_error(capsys, code: int) -> str:
    """The single stderr line of a CLI call that exited with 2; fails otherwise."""
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def run_generate(run: Path, out: Path | str, *extra: str) -> int:
    return run_cli(generate.main, ["--run", str(run), "--out", str(out), "--no-progress", *extra])


# ---------------------------------------------------------------- unwritable outputs


def test_out_whose_folder_is_a_file_is_one_line_error(trained_run, tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    for out, extra in (
        (blocker / "x.csv", ()),
        (blocker / "sub" / "x.csv", ("--mkdir",)),
        (blocker / "sub" / "x.csv", ()),
    ):
        line = one_line_error(capsys, run_generate(trained_run, out, "--n", "10", *extra))
        assert f"{blocker} is not a folder" in line
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
        and blocker.read_text() == "not a folder"
    )


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_out_in_proc_is_one_line_error(trained_run, capsys):
    line = one_line_error(capsys, run_generate(trained_run, "/proc/x.csv", "--n", "10"))
    assert line.startswith("error: --out /proc/x.csv: cannot write in /proc")


def test_out_that_is_a_device_or_folder_is_refused(trained_run, tmp_path, capsys):
    """An atomic rename onto /dev/null would replace the device itself: refused before any work."""
    assert "exists and is not a regular file" in one_line_error(
        capsys, run_generate(trained_run, os.devnull, "--n", "10")
    )
    assert "is a folder" in one_line_error(capsys, run_generate(trained_run, tmp_path, "--n", "10"))
    assert Path(os.devnull).is_char_device()


def test_report_beside_the_output_is_checked_before_drawing(trained_run, tmp_path, capsys):
    (tmp_path / "syn.csv.privacy.json").mkdir()
    line = one_line_error(capsys, run_generate(trained_run, tmp_path / "syn.csv", "--n", "10"))
    assert "syn.csv.privacy.json: is a folder" in line
    assert not (tmp_path / "syn.csv").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
def test_read_only_folder_is_one_line_error(trained_run, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    line = one_line_error(capsys, run_generate(trained_run, locked / "x.csv", "--n", "10"))
    assert "cannot write in" in line and "Permission denied" in line


def test_check_output_leaves_no_probe_behind(tmp_path):
    check_output(tmp_path / "new" / "x.csv", mkdir=True)
    assert [p.name for p in tmp_path.iterdir()] == ["new"] and list(
        (tmp_path / "new").iterdir()
    ) == []


def test_runs_dir_that_is_a_file_fails_before_the_data_load(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "runs"
    blocker.write_text("")
    loads = []
    monkeypatch.setattr(
        run_mod, "load_dataset", lambda cfg: loads.append(cfg)
    )  # the data load: never reached
    code = run_cli(
        train_script.main, ["--config", DIGITS, "--no-progress", "--set", f"runs_dir={blocker}"]
    )
    line = one_line_error(capsys, code)
    assert line == f"error: run directory {blocker}/digits: {blocker} is not a folder"
    assert loads == [] and blocker.read_text() == ""


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_runs_dir_in_proc_is_one_line_error(capsys):
    code = run_cli(
        train_script.main, ["--config", DIGITS, "--no-progress", "--set", "runs_dir=/proc/runs"]
    )
    assert "cannot write in /proc" in one_line_error(capsys, code)


def test_layout_that_cannot_be_created_is_an_output_error(tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(
        OutputError, match=r"run directory .*afile/run: cannot create it \(Not a directory\)"
    ):
        RunLayout(tmp_path / "afile" / "run").create()


# ------------------------------------------------------- too many records, too little space


def test_n_over_the_limit_fails_before_the_run_is_read(tmp_path, capsys):
    """The limit is checked first: even a missing run directory reports the --n problem."""
    line = one_line_error(
        capsys, run_generate(tmp_path / "nope", tmp_path / "x.csv", "--n", str(MAX_RECORDS + 1))
    )
    assert (
        line == f"error: --n must be <= {MAX_RECORDS:,} (the most records one release may draw), "
        f"got {MAX_RECORDS + 1:,}"
    )
    assert "--per-label" in one_line_error(
        capsys, run_generate(tmp_path / "nope", tmp_path / "x.csv", "--per-label", str(10**15))
    )
    assert list(tmp_path.iterdir()) == []


def test_the_limits_are_stated_in_help(capsys):
    with pytest.raises(SystemExit):
        generate.parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        f"at most {MAX_RECORDS:,} in one release" in shown
        and f"{MAX_PNG_IMAGES:,} in a png grid" in shown
    )


def test_api_n_limit(trained_run, tmp_path):
    release = dpgm.load(trained_run)
    with pytest.raises(ConfigError, match=f"sample: n must be <= {MAX_RECORDS:,}"):
        release.sample(MAX_RECORDS + 1)
    with pytest.raises(DpgmError, match=f"must be <= {MAX_RECORDS:,}"):
        rel.release(trained_run, tmp_path / "unused.csv", MAX_RECORDS + 1)


def test_per_label_total_is_limited():
    mixture = ReleasedMixture(
        models=[],
        noisy_sizes=np.ones(3),
        item_names=["a"],
        image_shape=None,
        report={"epsilon": 1.0},
        item_ids=[0],
        part_labels=PartLabels(labels=(0, 1, 2)),
    )
    per_label = MAX_RECORDS // 3 + 1
    with pytest.raises(DpgmError, match=f"{per_label:,} records of each of 3 labels: more than"):
        rel.draw_plan(mixture, None, per_label=per_label)
    assert len(rel.draw_plan(mixture, None, per_label=MAX_RECORDS // 3)) == 3


def test_png_grid_limit(trained_run, tmp_path, capsys):
    line = one_line_error(
        capsys, run_generate(trained_run, tmp_path / "g.png", "--n", str(MAX_PNG_IMAGES + 1))
    )
    limit, asked = f"{MAX_PNG_IMAGES:,}", f"{MAX_PNG_IMAGES + 1:,}"
    assert line == f"error: --format png: at most {limit} images in one grid, got {asked}"
    assert list(tmp_path.iterdir()) == []


def test_output_that_cannot_fit_the_free_space_is_refused(
    trained_run, tmp_path, capsys, monkeypatch
):
    real = shutil.disk_usage
    seen = []

    def small_disk(path):
        seen.append(Path(path))
        return real(path)._replace(free=100_000)

    monkeypatch.setattr(dpgm_io.shutil, "disk_usage", small_disk)
    out = tmp_path / "syn.csv"
    line = one_line_error(capsys, run_generate(trained_run, out, "--n", "1000"))
    # 1000 records x 64 values x 2 bytes at least
    needs = "needs at least 128.0 kB"
    assert line == f"error: --out {out}: 1,000 records: {needs} but {tmp_path} has 100.0 kB free"
    assert seen == [tmp_path] and list(tmp_path.iterdir()) == []
    assert run_generate(trained_run, out, "--n", "700") == 0  # 89.6 kB fits
    assert out.is_file()


@pytest.mark.parametrize(
    ("name", "fmt"), [("s.csv", "csv"), ("s.txt", "transactions"), ("s.csv.gz", "csv")]
)
def test_least_bytes_is_a_lower_bound(trained_run, tmp_path, name, fmt):
    """The free-space check never refuses a release that would fit: estimate <= real size."""
    out = tmp_path / name
    rel.release(trained_run, out, 2000, fmt=fmt, seed=5, progress=False)
    mixture = rel.load_release(trained_run)
    least = rel.least_bytes(mixture, 2000, fmt, gzipped=name.endswith(".gz"))
    assert 0 < least <= out.stat().st_size
    if fmt == "csv" and not name.endswith(".gz"):  # the bound is tight for csv: header only on top
        assert out.stat().st_size - least == len(out.read_text().splitlines()[0]) + 1
    if name.endswith(".gz"):
        assert gzip.decompress(out.read_bytes())


# ---------------------------------------------------------------- SIGTERM mid-write


def test_sigterm_removes_the_temporary_file(trained_run, tmp_path, tmp_path_factory):
    out = tmp_path / "big.csv"
    logs = tmp_path_factory.mktemp("logs")  # the child's outputs, outside the folder that must end empty
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = start_script(ROOT / "generate.py", ["--run", str(trained_run), "--n", "2000000", "--out", str(out),
                                               "--no-progress"], cwd=ROOT, env=env, folder=logs)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".big.csv.*.tmp")):  # the release is being written
            assert proc.is_alive() and time.monotonic() < deadline, (logs / "forked.stderr").read_text()
            time.sleep(0.05)
        proc.terminate()  # SIGTERM
        proc.join(timeout=60)
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert proc.exitcode == 128 + signal.SIGTERM
    assert (logs / "forked.stderr").read_text().splitlines() == ["terminated (SIGTERM)"]
    assert list(tmp_path.iterdir()) == []


def test_run_cli_restores_the_sigterm_handler():
    before = signal.getsignal(signal.SIGTERM)

    def main(_argv):
        assert signal.getsignal(signal.SIGTERM) is not before
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        return 0

    assert run_cli(main, []) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


# ---------------------------------------------------------------- broken input files


def test_yaml_syntax_error_is_one_line_with_its_place(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndata: {source: digits\n  foo: [\n")
    line = one_line_error(capsys, run_cli(train_script.main, ["--config", str(bad)]))
    assert (
        line
        == f"error: {bad}: not valid YAML at line 3, column 6: expected ',' or '}}', but got ':'"
    )
    bad.write_bytes(b"name: \xff\xfe\n")
    line = one_line_error(capsys, run_cli(train_script.main, ["--config", str(bad)]))
    assert line.startswith(f"error: {bad}: not valid YAML at byte 6")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "privacy_report.json: not found"),
        ("truncate", "privacy_report.json: broken privacy report (not valid JSON at line"),
        ("[1, 2]", "privacy_report.json: broken privacy report (no epsilon)"),
        ('{"delta": 1e-5}', "privacy_report.json: broken privacy report (no epsilon)"),
    ],
)
def test_broken_privacy_report_is_named(trained_run, tmp_path, capsys, content, problem):
    shared = tmp_path / "shared"
    shutil.copytree(trained_run / "release", shared)
    report = shared / "privacy_report.json"
    if content is None:
        report.unlink()
    elif content == "truncate":
        report.write_text(report.read_text()[:100])
    else:
        report.write_text(content)
    line = one_line_error(capsys, run_generate(shared, tmp_path / "syn.csv", "--n", "10"))
    assert problem in line and "models.pt" not in line
    with pytest.raises(DpgmError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        dpgm.load(shared)
    assert not (tmp_path / "syn.csv").exists()


def test_broken_models_file_is_named_on_one_line(trained_run, tmp_path):
    shared = tmp_path / "shared"
    shutil.copytree(trained_run / "release", shared)
    models = shared / "models.pt"
    models.write_bytes(models.read_bytes()[:200])
    with pytest.raises(DpgmError, match="models.pt: cannot load the release") as caught:
        dpgm.load(shared)
    assert "\n" not in str(caught.value) and json.loads(
        (shared / "privacy_report.json").read_text()
    )
