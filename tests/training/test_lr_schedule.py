"""training.lr_schedule: the learning rate over the planned steps (post-processing of noisy gradients)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.config import TrainingConfig
from dpgm.models import VAE
from dpgm.pipeline import run as run_mod
from dpgm.privacy.accountant import Accountant
from dpgm.training.mixture import MixtureTrainer, RecordStore, lr_factor

from .test_run import killed_run, tiny_config


def test_lr_factor_by_hand():
    assert [lr_factor("constant", s, 10) for s in (0, 5, 9)] == [1.0, 1.0, 1.0]
    assert [lr_factor("linear", s, 10) for s in (0, 5, 9)] == pytest.approx([1.0, 0.5, 0.1])
    assert [lr_factor("cosine", s, 10) for s in (0, 5)] == pytest.approx([1.0, 0.5])
    assert 0 < lr_factor("cosine", 9, 10) < 0.03


def trainer(schedule: str, total: int) -> MixtureTrainer:
    records = (np.random.default_rng(0).random((200, 6)) < 0.3).astype(np.float32)
    cfg = TrainingConfig(sampling_rate=0.2, noise_multiplier=1.0, clipping="fixed", learning_rate=0.01,
                         lr_schedule=schedule)
    model = VAE(6, hidden=[4], latent=2, generator=torch.Generator().manual_seed(0))
    return MixtureTrainer([model], RecordStore(records), np.zeros(200, dtype=np.int64), np.array([200.0]), cfg,
                          generator=torch.Generator().manual_seed(1), total_steps=total)


def test_the_optimizer_follows_the_schedule():
    t = trainer("linear", 4)
    seen = []
    for _ in range(4):
        t.step(Accountant(delta=1e-5))
        seen.append(t.optimizers[0].param_groups[0]["lr"])
    assert seen == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert t.state_dict()["steps_taken"] == 4


def test_a_schedule_needs_the_planned_steps():
    with pytest.raises(ValueError, match="planned number of steps"):
        trainer("cosine", 0)


def test_resumed_run_with_a_schedule_is_bit_identical(tmp_path, monkeypatch):
    over = {"training.lr_schedule": "cosine", "training.clipping": "fixed"}
    whole_dir, _ = run_mod.train(tiny_config(tmp_path / "a", **over), progress=False)
    run_dir = killed_run(tiny_config(tmp_path / "b", **over), monkeypatch, at_step=6)
    resumed_dir, _ = run_mod.resume(run_dir, progress=False)
    for a, b in zip(load_release(whole_dir).models, load_release(resumed_dir).models):
        assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
