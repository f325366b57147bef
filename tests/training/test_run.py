"""End-to-end training runs on the bundled digits data: run directory, ledger, resume, budgets."""

from __future__ import annotations

import copy
import json
import os
import signal
from pathlib import Path

import matplotlib.image
import pytest
import torch

from dpgm.cli import run_cli
from dpgm.config import config_from_dict
from dpgm.errors import PrivacyBudgetError
from dpgm.pipeline import run as run_mod
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.mechanisms import SNAP_SHARE
from dpgm.stages.items import STAGE as ITEMS_STAGE
from dpgm.stages.partition import part_labels
from dpgm.training.mixture import STAGE, MixtureTrainer


def tiny_config(tmp_path, **over):
    data = {
        "name": "tiny",
        "seed": 3,
        "runs_dir": str(tmp_path / "runs"),
        "data": {"source": "digits", "limit": 300},
        "privacy": {"delta": 1e-4},
        "partition": {"method": "kernel_kmeans", "k": 2, "iterations": 3, "noise_multiplier": 5.0,
                      "features": 20, "gamma": 0.05, "init": "random"},
        "model": {"kind": "vae", "options": {"hidden": [16], "latent": 2}},
        "training": {"epochs": 1, "sampling_rate": 0.1, "checkpoint_every": 4, "log_every": 2,
                     "hist_bins": 10},
    }
    if "model.kind" in over:  # another kind: the VAE's options are not its own
        over = {"model.options": "{}", **over}
    overrides = [f"{k}={v}" for k, v in over.items()]
    return config_from_dict(data, overrides)


def killed_run(cfg, monkeypatch, *, at_step: int):
    """Train ``cfg`` until a KeyboardInterrupt during step ``at_step``; return its run directory."""
    real_step = MixtureTrainer.step
    calls = {"n": 0}

    def dying_step(self, accountant):
        calls["n"] += 1
        if calls["n"] == at_step:
            raise KeyboardInterrupt
        return real_step(self, accountant)

    with monkeypatch.context() as patch:
        patch.setattr(MixtureTrainer, "step", dying_step)
        with pytest.raises(KeyboardInterrupt):
            run_mod.train(cfg, progress=False)
    return Path(cfg.runs_dir) / cfg.name


def terminated_run(cfg, monkeypatch, *, at_step: int) -> tuple[int, Path]:
    """Train ``cfg`` with a SIGTERM arriving during step ``at_step``; (exit code, run directory)."""
    real_step, calls = MixtureTrainer.step, {"n": 0}

    def terminated_step(self, accountant):
        calls["n"] += 1
        if calls["n"] == at_step:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-step; the loop stops after it
        return real_step(self, accountant)

    with monkeypatch.context() as patch:
        patch.setattr(MixtureTrainer, "step", terminated_step)
        code = run_cli(lambda argv: run_mod.train(cfg, progress=False))
    return code, Path(cfg.runs_dir) / cfg.name


def test_run_directory_and_ledger(tmp_path):
    cfg = tiny_config(tmp_path)
    run_dir, _ = run_mod.train(cfg, progress=False)
    for name in ("config.yaml", "models.pt", "ledger.json", "privacy_report.json", "samples.png"):
        assert (run_dir / "release" / name).is_file(), name
    assert not (run_dir / "private").exists()  # deleted when the run completed
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    assert ledger.count(STAGE) == 10  # 1 epoch = ceil(1/0.1) steps, one entry each (parallel schedule)
    assert ledger.count("partition") >= 3
    saved = json.loads((run_dir / "release" / "privacy_report.json").read_text())
    # the report says what the saved ledger says, and the sizes are those the release samples with
    replayed = Accountant(ledger, delta=1e-4)
    assert saved["epsilon"] == replayed.spent().epsilon and saved["delta"] == 1e-4
    assert saved["stage_epsilons"] == replayed.stage_epsilons()
    assert saved["noisy_part_sizes"] == torch.load(run_dir / "release" / "models.pt", weights_only=True)["noisy_sizes"].tolist()
    assert saved["fixed_seed"] is True and saved["neighbouring"] == "add_remove"
    assert saved["epsilon_by_bound"]["joint"] <= saved["epsilon_by_bound"]["holder"]
    assert saved["epsilon"] == pytest.approx(saved["epsilon_by_bound"]["joint"])
    payload = torch.load(run_dir / "release" / "models.pt", weights_only=True)
    assert len(payload["state_dicts"]) == 2
    # one row of 8 samples per part, each 8x8 digit scaled 4 times (32 x 32), 1-pixel separators
    assert matplotlib.image.imread(run_dir / "release" / "samples.png").shape[:2] == (2 * 33 - 1, 8 * 33 - 1)


def test_alternate_schedule_and_rbm(tmp_path):
    """The paper's schedule: one charged step moves exactly ONE part's model; the parallel one moves all."""
    for schedule, moved in (("alternate", 1), ("parallel", 2)):
        cfg = tiny_config(tmp_path, **{"training.schedule": schedule, "model.kind": "rbm",
                                       "model.options": "{hidden: 8}",
                                       "name": schedule})
        run = run_mod.TrainingRun(cfg, tmp_path / schedule, progress=False)
        run.start()
        before = [copy.deepcopy(m.state_dict()) for m in run.training.trainer.models]
        run.training.trainer.step(run.accountant)
        changed = [any(not torch.equal(b[k], v) for k, v in m.state_dict().items() if k in b)
                   for b, m in zip(before, run.training.trainer.models)]
        assert sum(changed) == moved and run.accountant.ledger.count(STAGE) == 1
    run_dir, report = run_mod.train(tiny_config(tmp_path, **{"training.schedule": "alternate", "model.kind": "rbm",
                                                             "model.options": "{hidden: 8}"}), progress=False)
    assert report["plan"]["schedule"] == "alternate"
    assert PrivacyLedger.load(run_dir / "release" / "ledger.json").count(STAGE) == 10


def test_resume_after_kill_neither_loses_nor_double_counts(tmp_path, monkeypatch):
    cfg = tiny_config(tmp_path, **{"training.epochs": 2})
    run_dir = killed_run(cfg, monkeypatch, at_step=7)  # the last checkpoint was after step 4
    state = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)
    assert state["stages"]["training"]["step"] == 4
    assert PrivacyLedger.from_json(state["ledger"]).count(STAGE) == 4
    run_dir, report = run_mod.resume(run_dir, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    assert ledger.count(STAGE) == 20
    assert report["plan"]["steps_taken"] == 20
    # the partition ran once: its entries were not charged again on resume
    fresh = tiny_config(tmp_path, **{"training.epochs": 2, "name": "fresh"})
    _, fresh_report = run_mod.train(fresh, progress=False)
    assert report["epsilon"] == pytest.approx(fresh_report["epsilon"])


def test_target_epsilon_covers_whole_pipeline(tmp_path):
    cfg = tiny_config(tmp_path, **{"privacy.target_epsilon": 3.0})
    _, report = run_mod.train(cfg, progress=False)
    assert report["epsilon"] <= 3.0
    assert report["epsilon"] > 2.5  # calibration uses the budget rather than wasting it


def test_budget_that_cannot_cover_partition_is_refused(tmp_path):
    cfg = tiny_config(tmp_path, **{"privacy.target_epsilon": 0.01})
    with pytest.raises(PrivacyBudgetError):
        run_mod.train(cfg, progress=False)


def test_existing_run_is_not_overwritten(tmp_path):
    cfg = tiny_config(tmp_path)
    run_mod.train(cfg, progress=False)
    with pytest.raises(Exception, match="already holds a run"):
        run_mod.train(cfg, progress=False)


def test_ema_release_averages_the_iterates(tmp_path):
    cfg = tiny_config(tmp_path, **{"training.ema_decay": 0.5, "keep_private": True})
    run_dir, _ = run_mod.train(cfg, progress=False)
    released = torch.load(run_dir / "release" / "models.pt", weights_only=True)["state_dicts"][0]
    state = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)
    last = state["stages"]["training"]["trainer"]["models"][0]
    average = {k.removeprefix("module."): v for k, v in state["stages"]["training"]["trainer"]["averages"][0].items()}
    for name, value in released.items():
        assert torch.equal(value, average[name])
    assert any(not torch.equal(released[n], last[n]) for n in released)


def test_top_items_are_chosen_privately_and_kept_on_resume(tmp_path, monkeypatch):
    """data.top_items: ONE charged Gaussian choice (stage 'items'); resume reuses it, never redraws."""
    cfg = tiny_config(tmp_path, **{"data.top_items": 20, "data.top_items_noise_multiplier": 3.0,
                                   "training.epochs": 1})
    run_dir = killed_run(cfg, monkeypatch, at_step=6)
    chosen = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)["stages"]["items"]["output"].tolist()
    run_dir, report = run_mod.resume(run_dir, progress=False)
    [entry] = [e for e in PrivacyLedger.load(run_dir / "release" / "ledger.json").entries if e.stage == ITEMS_STAGE]
    event = entry.event
    assert isinstance(event, DiscreteGaussianEvent) and entry.count == 1
    # the 64 pixels' normalised counts (L2 sensitivity 1), on a power-of-two grid
    assert event.noise_multiplier == 3.0 and event.dim == 64 and event.grid < 1.0
    assert 1.0 <= event.sensitivity * event.grid <= (1.0 + SNAP_SHARE) * (1 + 1e-12)
    # the exact choice costs what the continuous Gaussian at the same multiplier would
    continuous = GaussianEvent(noise_multiplier=3.0)
    items_epsilon = Accountant(delta=report["delta"]).epsilon_if(continuous)
    assert report["stage_epsilons"][ITEMS_STAGE] == pytest.approx(items_epsilon, rel=1e-12)
    payload = torch.load(run_dir / "release" / "models.pt", weights_only=True)
    assert payload["item_ids"] == chosen and len(chosen) == 20 and chosen == sorted(chosen)
    assert payload["item_names"] == [f"px{j}" for j in chosen]
    # the digits' always-blank border pixels (0 and 7 of row 0) cannot be among the 20 most frequent
    assert 0 not in chosen and 7 not in chosen
    # the transactions output speaks the source's item ids, not column positions
    from dpgm.release import release

    release(run_dir, tmp_path / "syn.txt", 200, fmt="transactions", seed=0, progress=False)
    written = {int(t) for line in (tmp_path / "syn.txt").read_text().splitlines() for t in line.split()}
    assert written and written <= set(chosen) and max(written) > 19


def test_a_run_by_label_releases_each_parts_label(tmp_path):
    """Part j holds label j; a CSV source keeps its own label column's name for the release."""
    assert part_labels(tiny_config(tmp_path)) is None  # k-means parts are not labels
    by_label = part_labels(tiny_config(tmp_path, **{"partition.method": "label", "partition.k": 3}))
    assert by_label.labels == (0, 1, 2) and by_label.column == "label"
    csv = tiny_config(tmp_path, **{"partition.method": "label", "partition.k": 3, "data.source": "csv",
                                   "data.path": "x.csv", "data.label_column": "digit"})
    assert part_labels(csv).column == "digit"


def test_more_parts_than_records_runs_like_any_other_plan(tmp_path):
    """k > n is not refused: an error would tell its reader one bit about n outside the ledger.
    The run spends what the same plan spends on more data; the extra parts are noise."""
    few = tiny_config(tmp_path, **{"data.limit": 3, "partition.k": 5, "name": "few", "model.kind": "independent"})
    many = tiny_config(tmp_path, **{"data.limit": 300, "partition.k": 5, "name": "many", "model.kind": "independent"})
    (few_dir, few_report), (_, many_report) = run_mod.train(few, progress=False), run_mod.train(many, progress=False)
    assert few_report["epsilon"] == many_report["epsilon"]
    assert len(torch.load(few_dir / "release" / "models.pt", weights_only=True)["state_dicts"]) == 5
