"""VAE: negative ELBO per record, per-record reparameterisation noise, sampling, build_model."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dpgm.config import ModelConfig
from dpgm.errors import ConfigError
from dpgm.models import RBM, VAE, GenerativeModel, build_model


def test_architecture_matches_the_paper_by_default() -> None:
    model = VAE(784, generator=torch.Generator().manual_seed(0))
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(200, 784), (200,), (4, 200), (4,), (200, 2), (200,), (784, 200), (784,)]
    assert isinstance(model, GenerativeModel)


def test_generator_makes_initialisation_reproducible() -> None:
    a = VAE(20, hidden=[7], generator=torch.Generator().manual_seed(3))
    b = VAE(20, hidden=[7], generator=torch.Generator().manual_seed(3))
    c = VAE(20, hidden=[7], generator=torch.Generator().manual_seed(4))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.encoder[0].weight, c.encoder[0].weight)


def test_loss_is_negative_elbo_with_one_noise_draw_per_record() -> None:
    gen = torch.Generator().manual_seed(1)
    model = VAE(8, hidden=[5], latent=3, generator=gen).double()
    x = (torch.rand(4, 8, generator=gen) < 0.5).double()
    loss = model.loss_per_record(x, torch.Generator().manual_seed(9))
    eps = torch.randn(4, 3, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    stats = model.encoder(x)
    mu, logvar = stats[:, :3], stats[:, 3:]
    logits = model.decoder(mu + torch.exp(0.5 * logvar) * eps)
    log_lik = -F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(1)
    kl = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu, torch.exp(0.5 * logvar)), torch.distributions.Normal(0.0, 1.0)
    ).sum(1)
    torch.testing.assert_close(loss, kl - log_lik)
    same_record_twice = model.loss_per_record(x[:1].repeat(2, 1), gen)
    assert same_record_twice[0] != same_record_twice[1]  # independent noise per record


def test_several_draws_average_the_single_draw_losses() -> None:
    """draws K: a record's loss is the mean of its K single-draw negative ELBOs (same KL, K decodings)."""
    gen = torch.Generator().manual_seed(3)
    model = VAE(8, hidden=[5], latent=3, draws=4, generator=gen).double()
    x = (torch.rand(5, 8, generator=gen) < 0.5).double()
    eps = model.step_noise(5, gen)
    singles = torch.stack([model(x, eps[:, k]) for k in range(4)], dim=1)
    torch.testing.assert_close(model(x, eps), singles.mean(1))
    assert model.sample(7, gen).shape == (7, 8)  # sampling is unchanged: one draw per record
    with pytest.raises(ConfigError, match="draws"):
        VAE(8, draws=0)


def test_samples_and_probabilities() -> None:
    model = VAE(15, hidden=[6], generator=torch.Generator().manual_seed(2))
    probs = model.sample_probs(50, torch.Generator().manual_seed(5))
    assert probs.shape == (50, 15) and float(probs.min()) >= 0 and float(probs.max()) <= 1
    draws = model.sample(50, torch.Generator().manual_seed(5))
    assert draws.shape == (50, 15) and set(draws.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(draws, model.sample(50, torch.Generator().manual_seed(5)))


def test_plain_training_learns_two_clusters() -> None:
    gen = torch.Generator().manual_seed(3)
    data = torch.zeros(200, 10)
    data[:100, :5] = 1.0
    data[100:, 5:] = 1.0
    model = VAE(10, hidden=[16], latent=2, generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(300):
        opt.zero_grad()
        model.loss_per_record(data, gen).mean().backward()
        opt.step()
    draws = model.sample(1000, gen)
    first, second = draws[:, :5].sum(1), draws[:, 5:].sum(1)
    near_prototype = ((first >= 4) & (second <= 1)) | ((first <= 1) & (second >= 4))
    assert float(near_prototype.float().mean()) > 0.8  # independent fair coins give ~0.07
    assert float(torch.corrcoef(torch.stack([first, second]))[0, 1]) < -0.8


def test_build_model_from_config() -> None:
    vae = build_model(ModelConfig(kind="vae", options={"hidden": [30, 20], "latent": 4}), 12)
    assert isinstance(vae, VAE) and vae.hidden == [30, 20] and vae.latent == 4
    rbm = build_model(ModelConfig(kind="rbm", options={"hidden": 9, "gibbs_steps": 3, "chains": 7}), 12)
    assert isinstance(rbm, RBM) and rbm.n_hidden == 9 and rbm.gibbs_steps == 3 and rbm.chains.shape == (7, 12)


def test_bad_sizes_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        VAE(0)
    with pytest.raises(ConfigError):
        VAE(5, hidden=[0])
