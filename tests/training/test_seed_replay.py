"""An adversary holding a release folder cannot replay the run's noise.

The attack: read the seed from the release, run the same config on the same data again, and
compare the released noisy statistics. With the seed in hand the noise cancels and the exact
counts come out; so a private run holds no seed anywhere in release/, and a seeded run (an
experiment) says NOT DIFFERENTIALLY PRIVATE in the first line of every output.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import generate as generate_script
import train as train_script
from dpgm.cli import run_cli
from dpgm.config import load_config
from dpgm.pipeline import run as run_mod
from dpgm.privacy import collective
from tests.training.test_run import killed_run, tiny_config

ROOT = Path(__file__).resolve().parents[2]
CANARY_SEED = 987654321


@pytest.fixture()
def survey(tmp_path: Path) -> Path:
    """1,000 records of 6 binary answers, a few of them empty."""
    rng = np.random.default_rng(0)
    rows = (rng.random((1000, 6)) < np.linspace(0.05, 0.6, 6)).astype(int)
    path = tmp_path / "survey.csv"
    path.write_text("a,b,c,d,e,f\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


def train_csv(tmp_path: Path, data: Path, name: str, *sets: str) -> tuple[int, Path]:
    """``train.py --config csv`` on ``data``; returns the exit code and the run folder."""
    args = ["--config", str(ROOT / "configs" / "csv.yaml"), "--no-progress", "--threads", "1",
            "--set", f"runs_dir={tmp_path / 'runs'}", "--set", f"name={name}", "--set", f"data.path={data}"]
    for s in sets:
        args += ["--set", s]
    code = run_cli(train_script.main, args)
    return code, tmp_path / "runs" / name


def replay(release: Path, data: Path, tmp_path: Path) -> list[float]:
    """The adversary: the released config, with whatever seed it holds, run again on the data."""
    cfg = load_config(release / "config.yaml", [f"runs_dir={tmp_path / 'replay'}", "name=replay",
                                                 f"data.path={data}", "threads=1"])
    _, report = run_mod.train(cfg, progress=False)
    return report["noisy_part_sizes"] + [report.get("noisy_empty_records", 0.0)]


def released(run_dir: Path) -> list[float]:
    report = json.loads((run_dir / "release" / "privacy_report.json").read_text())
    return report["noisy_part_sizes"] + [report.get("noisy_empty_records", 0.0)]


def release_bytes(run_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((run_dir / "release").rglob("*")) if p.is_file())


def test_the_replay_attack_works_when_the_seed_is_known(tmp_path, survey):
    """The attack itself is sound: two runs with one seed release the very same noisy values."""
    cfg = load_config(ROOT / "configs" / "csv.yaml", [f"runs_dir={tmp_path}", f"data.path={survey}",
                                                      f"seed={CANARY_SEED}", "threads=1"])
    first = run_mod.train(cfg, progress=False)[1]
    cfg.name = "again"
    second = run_mod.train(cfg, progress=False)[1]
    assert first["noisy_part_sizes"] == second["noisy_part_sizes"]


def test_a_default_run_cannot_be_replayed_from_its_release(tmp_path, survey, monkeypatch):
    drawn: list[int] = []
    real = collective.secrets.randbits
    monkeypatch.setattr(collective.secrets, "randbits", lambda k: drawn.append(real(k)) or drawn[-1])
    code, run_dir = train_csv(tmp_path, survey, "default")
    assert code == 0 and drawn  # the noise came from fresh OS entropy
    drawn += [part for value in drawn for part in (value >> 128, value & (2**128 - 1))]  # the two seeds
    assert yaml.safe_load((run_dir / "release" / "config.yaml").read_text())["seed"] is None
    assert replay(run_dir / "release", survey, tmp_path) != released(run_dir)
    blob = release_bytes(run_dir)
    for value in drawn:  # the entropy is in no released file, as text or as bytes
        assert str(value).encode() not in blob
        assert value.to_bytes((value.bit_length() + 7) // 8 or 1, "little") not in blob


def test_a_seeded_run_says_not_private_first_and_releases_no_seed(tmp_path, survey, capsys):
    code, run_dir = train_csv(tmp_path, survey, "seeded", f"seed={CANARY_SEED}")
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith("NOT DIFFERENTIALLY PRIVATE") and "fixed seed" in out.splitlines()[0]
    assert "safe to share" not in out
    release = run_dir / "release"
    assert (release / "privacy_report.md").read_text().splitlines()[0].startswith("**NOT DIFFERENTIALLY PRIVATE")
    report_text = (release / "privacy_report.json").read_text()
    assert next(iter(json.loads(report_text))) == "warning"
    assert "NOT DIFFERENTIALLY PRIVATE" in report_text.splitlines()[1]
    assert yaml.safe_load((release / "config.yaml").read_text())["seed"] is None
    blob = release_bytes(run_dir)
    assert str(CANARY_SEED).encode() not in blob and CANARY_SEED.to_bytes(4, "little") not in blob
    assert replay(release, survey, tmp_path) != released(run_dir)  # nothing in release/ to replay with

    out_csv = tmp_path / "syn.csv"
    code = run_cli(generate_script.main, ["--run", str(run_dir), "--n", "20", "--out", str(out_csv),
                                          "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0 and printed.splitlines()[0].startswith("NOT DIFFERENTIALLY PRIVATE")
    beside = Path(f"{out_csv}.privacy.json").read_text()
    assert "NOT DIFFERENTIALLY PRIVATE" in beside.splitlines()[1]


def test_a_resumed_seeded_run_still_says_not_private(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path, seed=CANARY_SEED)
    run_dir = killed_run(cfg, monkeypatch, at_step=5)
    monkeypatch.undo()
    assert yaml.safe_load((run_dir / "release" / "config.yaml").read_text())["seed"] is None
    _, report = run_mod.resume(run_dir, progress=False)
    assert report["warning"].startswith("NOT DIFFERENTIALLY PRIVATE") and report["fixed_seed"] is True
