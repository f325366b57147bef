"""RBM: initialisation, free energy against brute force, Gibbs sampling against the exact distribution."""

from __future__ import annotations

import itertools

import pytest
import torch

from dpgm.errors import ConfigError
from dpgm.models import RBM, GenerativeModel


def all_binary(n: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product([0.0, 1.0], repeat=n)), dtype=torch.float64)


def random_rbm(m: int, n: int, seed: int) -> RBM:
    gen = torch.Generator().manual_seed(seed)
    model = RBM(m, n_hidden=n, generator=gen).double()
    with torch.no_grad():
        model.hidden.weight.normal_(0, 1.0, generator=gen)
        model.hidden.bias.normal_(0, 1.0, generator=gen)
        model.visible_bias.weight.normal_(0, 1.0, generator=gen)
    return model


def test_initialisation_follows_the_paper() -> None:
    model = RBM(784, n_hidden=200, generator=torch.Generator().manual_seed(0))
    assert isinstance(model, GenerativeModel)
    assert abs(float(model.hidden.weight.detach().std()) - 0.01) < 5e-4
    assert not model.hidden.bias.any() and not model.visible_bias.weight.any()
    assert model.chains.shape == (100, 784)


def test_free_energy_matches_brute_force_sum_over_hidden_states() -> None:
    model = random_rbm(5, 4, seed=1)
    v, h = all_binary(5), all_binary(4)
    w, c, b = model.hidden.weight.detach(), model.hidden.bias.detach(), model.visible_bias.weight.detach().squeeze(0)
    energy = -(v @ b)[:, None] - (h @ c)[None, :] - v @ w.t() @ h.t()  # E(v, h) for every pair
    expected = -torch.logsumexp(-energy, dim=1)
    torch.testing.assert_close(model.free_energy(v).detach(), expected)


def test_gibbs_samples_follow_the_exact_distribution() -> None:
    model = random_rbm(3, 2, seed=2)
    v = all_binary(3)
    exact = torch.softmax(-model.free_energy(v).detach(), dim=0)
    draws = model.sample(20000, torch.Generator().manual_seed(3), steps=30)
    codes = (draws * torch.tensor([4.0, 2.0, 1.0], dtype=torch.float64)).sum(1).long()
    empirical = torch.bincount(codes, minlength=8).double() / 20000
    assert float((empirical - exact).abs().max()) < 0.015


def test_negative_phase_advances_chains_and_needs_no_data() -> None:
    gen = torch.Generator().manual_seed(4)
    model = RBM(6, n_hidden=3, chains=40, gibbs_steps=2, generator=gen)
    loss = model.post_processing_loss(model.post_processing_noise(gen))
    assert model.chains.abs().sum() > 0  # moved from the all-zero start
    grad_w = torch.autograd.grad(loss, model.hidden.weight)[0]
    chains = model.chains
    torch.testing.assert_close(grad_w, model.hidden_probs(chains).detach().t() @ chains / 40)


def test_samples_are_binary_and_probs_in_unit_interval() -> None:
    model = RBM(12, n_hidden=5, generator=torch.Generator().manual_seed(5))
    probs = model.sample_probs(30, torch.Generator().manual_seed(6), steps=3)
    assert probs.shape == (30, 12) and 0 <= float(probs.min()) and float(probs.max()) <= 1
    assert set(model.sample(30, torch.Generator().manual_seed(6), steps=3).unique().tolist()) <= {0.0, 1.0}


def test_bad_sizes_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        RBM(5, n_hidden=0)
