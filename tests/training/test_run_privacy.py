"""Everything a run shows or writes is a DP output or absent; kills and resumes lose nothing.

One test per finding of the privacy-hardening issue: non-private loss, declared item universe,
public inputs listed, float64 Poisson sampling, release/ apart from private/, no data in what a
failed run leaves, bit-identical resume, checkpoints on time and on SIGTERM/SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from dpgm.config import config_from_dict
from dpgm.errors import ConfigError, DataError
from dpgm.pipeline import run as run_mod
from dpgm.stages.partition import PartitionStage
from dpgm.training.mechanism import poisson_sample
from tests._forked import start_script
from tests.training.test_run import killed_run, terminated_run, tiny_config

ROOT = Path(__file__).resolve().parents[2]
#: Files a finished run may leave, all under release/: each a DP output or data-independent.
RELEASE_FILES = {"config.yaml", "models.pt", "ledger.json", "privacy_report.json", "privacy_report.md", "samples.png"}


def scalar_tags(run_dir: Path) -> set[str]:
    acc = EventAccumulator(str(run_dir / "release" / "tensorboard"))
    acc.Reload()
    return set(acc.Tags()["scalars"])


def test_training_loss_is_neither_shown_nor_logged(tmp_path, progress_output):
    run_dir, report = run_mod.train(tiny_config(tmp_path, seed="null"), progress=True)  # a private run
    shown = progress_output.getvalue()
    assert "eps=" in shown and "loss" not in shown
    assert scalar_tags(run_dir) == {"privacy/epsilon", "train/clip_norm"}  # and the noisy part sizes as text
    assert "warning" not in report


def test_nonprivate_diagnostics_are_logged_and_reported_as_not_private(tmp_path, progress_output):
    run_dir, report = run_mod.train(tiny_config(tmp_path, nonprivate_diagnostics=True), progress=True)
    assert "loss(nonprivate)" in progress_output.getvalue()
    assert "nonprivate/train_loss" in scalar_tags(run_dir)
    assert next(iter(report)) == "warning" and report["warning"].startswith("NOT DIFFERENTIALLY PRIVATE")
    from dpgm.release import release

    out = tmp_path / "syn.csv"
    release(run_dir, out, 10, seed=0, progress=False)
    assert "NOT DIFFERENTIALLY PRIVATE" in Path(f"{out}.privacy.json").read_text().splitlines()[1]


def transactions_config(tmp_path, path: Path, **over):
    data = {"name": "shop", "seed": 1, "runs_dir": str(tmp_path / "runs"),
            "data": {"source": "transactions", "path": str(path)}, "privacy": {"delta": 1e-4},
            "partition": {"method": "none", "k": 1, "noise_multiplier": 5.0},
            "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}, "output_bias": "default"},
            "training": {"epochs": 0.2, "sampling_rate": 0.1, "hist_bins": 10}}
    return config_from_dict(data, [f"{k}={v}" for k, v in over.items()])


def test_item_universe_is_declared_not_read_off_the_data(tmp_path):
    rng = np.random.default_rng(0)
    lines = [" ".join(map(str, sorted(set(rng.integers(0, 20, 4).tolist())))) for _ in range(200)]
    plain, canary = tmp_path / "plain.txt", tmp_path / "canary.txt"
    plain.write_text("\n".join(lines) + "\n")
    canary.write_text("\n".join(lines) + "\n45\n")  # one record with a rare large id
    with pytest.raises(ConfigError, match="item universe must be declared"):
        run_mod.train(transactions_config(tmp_path, plain), progress=False)
    sizes = set()
    for i, path in enumerate((plain, canary)):
        run_dir, report = run_mod.train(transactions_config(tmp_path, path, **{"data.n_items": 50, "name": f"r{i}"}),
                                        progress=False)
        sizes.add(len(torch.load(run_dir / "release" / "models.pt", weights_only=True)["item_names"]))
        assert {"quantity": "item universe", "value": "50 items", "why": "data.n_items"} in report["public_inputs"]
    assert sizes == {50}  # the canary does not change the columns of the release
    with pytest.raises(DataError, match="outside the 40 items"):
        run_mod.train(transactions_config(tmp_path, canary, **{"data.n_items": 40, "name": "r3"}), progress=False)
    assert not (tmp_path / "runs" / "r3").exists()


def test_public_inputs_list_the_order_of_magnitude_of_n(tmp_path):
    _, report = run_mod.train(tiny_config(tmp_path, **{"privacy.delta": "null"}), progress=False)
    assert report["delta"] == 1e-4  # 300 records: N = 100, delta = 1/(100 N)
    quantities = {item["quantity"]: item for item in report["public_inputs"]}
    assert quantities["order of magnitude of the number of records"]["value"] == "N = 100 (N <= n < 10 N)"
    assert quantities["image shape"]["value"] == [8, 8]


def test_a_delta_above_one_over_n_magnitude_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"above 1/N .* N = 100\b"):  # 300 records
        run_mod.train(tiny_config(tmp_path, **{"privacy.delta": 0.02}), progress=False)
    with pytest.raises(ConfigError, match=r"N = 1000\b"):  # a declared magnitude decides
        run_mod.train(tiny_config(tmp_path, **{"privacy.delta": 0.002, "data.records_magnitude": 1000}),
                      progress=False)
    assert not (tmp_path / "runs" / "tiny").exists()


def test_poisson_sampling_uses_float64_uniforms_at_the_exact_rate():
    g, ref = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    picked = poisson_sample(100_000, 0.3, g)
    expected = torch.nonzero(torch.rand(100_000, generator=ref, dtype=torch.float64) < 0.3).squeeze(1)
    assert torch.equal(picked, expected)  # float32 uniforms have 2^-24 resolution and round q
    rates = [len(poisson_sample(200_000, 0.01, g)) / 200_000 for _ in range(10)]
    assert abs(np.mean(rates) - 0.01) < 4 * np.sqrt(0.01 * 0.99 / 2_000_000)


def test_a_finished_run_leaves_only_its_release(tmp_path):
    run_dir, _ = run_mod.train(tiny_config(tmp_path), progress=False)
    files = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    for name in files:
        top, rest = name.split("/", 1)
        assert top == "release", name
        assert rest in RELEASE_FILES or rest.startswith("tensorboard/events.out.tfevents."), name
    assert {f"release/{n}" for n in RELEASE_FILES} <= set(files)


def test_kept_private_folder_is_owner_only(tmp_path):
    run_dir, _ = run_mod.train(tiny_config(tmp_path, keep_private=True), progress=False)
    assert stat.S_IMODE((run_dir / "private").stat().st_mode) == 0o700
    assert stat.S_IMODE((run_dir / "private" / "checkpoint.pt").stat().st_mode) == 0o600
    assert [p.name for p in (run_dir / "private").iterdir()] == ["checkpoint.pt"]


def test_failed_run_writes_no_data_anywhere(tmp_path):
    """A data error names the file and the problem, never the value or the line, and leaves no run folder."""
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 x9\n")
    with pytest.raises(DataError, match="not an item id") as exc:
        run_mod.train(transactions_config(tmp_path, bad, **{"data.n_items": 10}), progress=False)
    assert "x9" not in str(exc.value) and "line 2" not in str(exc.value)
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []


def release_state(run_dir: Path) -> tuple[dict, str]:
    payload = torch.load(run_dir / "release" / "models.pt", weights_only=True)
    return payload, (run_dir / "release" / "ledger.json").read_text()


def assert_same_release(a: Path, b: Path) -> None:
    (pa, la), (pb, lb) = release_state(a), release_state(b)
    assert la == lb
    report_a, report_b = (json.loads((p / "release" / "privacy_report.json").read_text()) for p in (a, b))
    assert report_a["epsilon"] == report_b["epsilon"]  # the same bits, not just close
    assert torch.equal(pa["noisy_sizes"], pb["noisy_sizes"])
    for sa, sb in zip(pa["state_dicts"], pb["state_dicts"], strict=True):
        assert sa.keys() == sb.keys()
        for key in sa:
            assert torch.equal(sa[key], sb[key]), key


def test_resumed_run_is_bit_identical_to_an_uninterrupted_one(tmp_path, monkeypatch):
    whole, _ = run_mod.train(tiny_config(tmp_path, **{"training.epochs": 2, "name": "whole"}), progress=False)
    cut = killed_run(tiny_config(tmp_path, **{"training.epochs": 2, "name": "cut"}), monkeypatch, at_step=7)
    run_mod.resume(cut, progress=False)
    assert_same_release(whole, cut)


def test_sigterm_checkpoints_prints_the_resume_command_and_resumes_exactly(tmp_path, monkeypatch, capsys):
    whole, _ = run_mod.train(tiny_config(tmp_path, **{"training.epochs": 2, "name": "whole"}), progress=False)
    cfg = tiny_config(tmp_path, **{"training.epochs": 2, "name": "term", "training.checkpoint_every": 1000})
    code, run_dir = terminated_run(cfg, monkeypatch, at_step=7)
    err = capsys.readouterr().err
    assert code == 128 + signal.SIGTERM
    assert f"Resume with: python train.py --resume {run_dir}" in err
    assert torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)["stages"]["training"]["step"] == 7
    run_mod.resume(run_dir, progress=False)
    assert_same_release(whole, run_dir)


def test_time_interval_checkpoints(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path, **{"training.checkpoint_every": 1000, "training.checkpoint_seconds": 1e-9})
    run_dir = killed_run(cfg, monkeypatch, at_step=7)
    assert torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)["stages"]["training"]["step"] == 6


def test_sigkill_at_a_random_time_then_resume_is_exact(tmp_path):
    """A real process killed with SIGKILL (no handler runs): the resume neither loses nor double-counts."""
    config = tmp_path / "c.yaml"
    body = json.loads(json.dumps(tiny_config(tmp_path, **{"training.epochs": 3, "training.checkpoint_every": 2,
                                                               "name": "killed"}).to_dict()))
    import yaml

    config.write_text(yaml.safe_dump(body))
    proc = start_script(ROOT / "train.py", ["--config", str(config), "--no-progress"], cwd=ROOT, env=dict(os.environ),
                        folder=tmp_path)
    checkpoint = tmp_path / "runs" / "killed" / "private" / "checkpoint.pt"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.is_alive():
        if checkpoint.is_file() and torch.load(checkpoint, weights_only=True)["stages"]["training"]["step"] > 0:
            break
        time.sleep(0.05)
    proc.kill()  # SIGKILL
    proc.join()
    run_dir = tmp_path / "runs" / "killed"
    if checkpoint.is_file():  # killed mid-run (the usual case): resume
        run_mod.resume(run_dir, progress=False)
    whole, _ = run_mod.train(config_from_dict({**body, "name": "whole"}), progress=False)
    assert_same_release(whole, run_dir)


def test_a_run_killed_before_its_first_checkpoint_can_start_again(tmp_path):
    cfg = tiny_config(tmp_path)
    layout = run_mod.RunLayout(Path(cfg.runs_dir) / cfg.name)
    layout.create()  # what a SIGKILL during the partition leaves: folders, no checkpoint
    with pytest.raises(ConfigError, match="before its first checkpoint"):
        run_mod.resume(layout.root, progress=False)
    run_dir, _ = run_mod.train(cfg, progress=False)
    assert (run_dir / "release" / "models.pt").is_file()


def test_sigterm_during_the_partition_stops_after_its_checkpoint(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path)
    real = PartitionStage.run

    def signalled(self, ctx):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the run is starting
        return real(self, ctx)

    monkeypatch.setattr(PartitionStage, "run", signalled)
    with pytest.raises(run_mod.RunInterrupted, match="after step 0 of 10; checkpoint saved. Resume with"):
        run_mod.train(cfg, progress=False)
    monkeypatch.undo()
    _, report = run_mod.resume(Path(cfg.runs_dir) / cfg.name, progress=False)
    assert report["plan"]["steps_taken"] == 10
