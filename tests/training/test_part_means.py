"""Noisy per-part means: one charged Gaussian release, right noise scale, clipping, model init."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.errors import PrivacyBudgetError
from dpgm.models import RBM, VAE
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent
from dpgm.training.part_means import FLOOR, STAGE, noisy_part_means
from dpgm.training.run import TrainingRun

from .test_run import tiny_config


def _data(n=4000, m=6, seed=0):
    rng = np.random.default_rng(seed)
    records = (rng.random((n, m)) < np.linspace(0.1, 0.6, m)).astype(np.uint8)
    assignments = rng.integers(0, 2, size=n)
    return records, assignments


def test_one_gaussian_release_is_charged():
    records, assignments = _data()
    acc = Accountant(delta=1e-5)
    noisy_part_means(records, assignments, np.bincount(assignments).astype(float), clip=1.0,
                     noise_multiplier=3.0, accountant=acc, rng=np.random.default_rng(1))
    assert [(e.stage, e.event, e.count) for e in acc.ledger.entries] == [(STAGE, GaussianEvent(noise_multiplier=3.0), 1)]


def test_refused_over_budget_before_release():
    records, assignments = _data()
    acc = Accountant(delta=1e-5, budget_epsilon=0.01)
    with pytest.raises(PrivacyBudgetError):
        noisy_part_means(records, assignments, np.array([2000.0, 2000.0]), clip=1.0, noise_multiplier=1.0,
                         accountant=acc, rng=np.random.default_rng(1))
    assert acc.ledger.entries == []


@pytest.mark.parametrize("sparse", [False, True])
def test_means_noise_scale_and_clip(sparse):
    records, assignments = _data(m=4)
    sizes = np.bincount(assignments).astype(float)
    clip, sigma = 1.5, 50.0
    rows = sp.csr_matrix(records) if sparse else records
    draws = np.stack([
        noisy_part_means(rows, assignments, sizes, clip=clip, noise_multiplier=sigma,
                         accountant=Accountant(delta=1e-5), rng=np.random.default_rng(s))
        for s in range(300)
    ])
    # exact clipped means: each record scaled to norm <= clip
    norms = np.sqrt(records.sum(1))
    scaled = records * np.minimum(1.0, clip / np.maximum(norms, 1e-12))[:, None]
    exact = np.stack([scaled[assignments == j].sum(0) / sizes[j] for j in range(2)])
    assert np.abs(draws.mean(0) - exact).max() < 0.01
    expected_std = sigma * clip / sizes
    assert draws.std(0) == pytest.approx(np.repeat(expected_std[:, None], 4, axis=1), rel=0.15)


def test_means_stay_inside_the_floor():
    records, assignments = _data(n=50)
    means = noisy_part_means(records, assignments, np.array([25.0, 25.0]), clip=None, noise_multiplier=100.0,
                             accountant=Accountant(delta=1e-5), rng=np.random.default_rng(0))
    assert means.min() >= FLOOR and means.max() <= 1 - FLOOR


@pytest.mark.parametrize("model", [VAE(5, hidden=[4], latent=2), RBM(5, n_hidden=3)])
def test_models_start_at_the_given_frequencies(model):
    probs = torch.tensor([0.01, 0.2, 0.5, 0.7, 0.99])
    model.init_output_bias(probs)
    if isinstance(model, VAE):
        with torch.no_grad():
            model.decoder[-1].weight.zero_()  # the output is then the bias alone
        assert torch.allclose(model.sample_probs(3, None), probs.expand(3, 5), atol=1e-6)
    else:
        assert torch.allclose(torch.sigmoid(model.visible_bias.weight[0]), probs, atol=1e-6)


def test_run_charges_part_means_only_when_asked(tmp_path):
    for choice, expected in (("noisy_mean", 1), ("default", 0)):
        cfg = tiny_config(tmp_path / choice, **{"model.output_bias": choice})
        run = TrainingRun(cfg, tmp_path / choice, progress=False)
        run.start()
        assert run.accountant.ledger.count(STAGE) == expected
