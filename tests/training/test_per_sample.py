"""Ghost clipping: per-record norms and clipped sums equal explicit per-record gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpgm.errors import ConfigError
from dpgm.models import RBM, VAE, ConvVAE
from dpgm.training.per_sample import GhostClipper


def loop_grads(model: nn.Module, loss_fn, batch_size: int) -> list[list[torch.Tensor]]:
    """Per-record gradients by a Python loop over single records (the reference)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [list(torch.autograd.grad(loss_fn(i), params)) for i in range(batch_size)]


def flat_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    return torch.sqrt(sum(g.pow(2).sum() for g in grads))


def check_against_loop(model: nn.Module, batch_loss, single_loss, batch_size: int) -> None:
    ghost = GhostClipper(model).compute(batch_loss)
    per_record = loop_grads(model, single_loss, batch_size)
    expected_norms = torch.stack([flat_norm(g) for g in per_record])
    torch.testing.assert_close(ghost.norms, expected_norms, rtol=1e-10, atol=1e-12)
    weights = torch.linspace(0.1, 2.0, batch_size, dtype=torch.float64)
    sums = ghost.clipped_sum(weights)
    for j, s in enumerate(sums):
        expected = sum(w * g[j] for w, g in zip(weights, per_record))
        torch.testing.assert_close(s, expected, rtol=1e-10, atol=1e-12)
    written = [torch.full_like(s, float("nan")) for s in sums]  # whatever the buffers held is written over
    ghost.set_clipped_sum(weights, written)
    for s, w in zip(sums, written):
        torch.testing.assert_close(w, s, rtol=1e-12, atol=1e-14)


def test_vae_norms_and_clipped_sum_equal_single_record_loop() -> None:
    gen = torch.Generator().manual_seed(0)
    model = VAE(12, hidden=[8, 5], latent=3, generator=gen).double()
    x = (torch.rand(7, 12, generator=gen) < 0.4).double()
    eps = torch.randn(7, 3, generator=gen, dtype=torch.float64)
    check_against_loop(model, lambda: model(x, eps), lambda i: model(x[i : i + 1], eps[i : i + 1]).sum(), 7)


def test_rbm_norms_and_clipped_sum_equal_single_record_loop() -> None:
    gen = torch.Generator().manual_seed(1)
    model = RBM(10, n_hidden=6, generator=gen).double()
    with torch.no_grad():  # non-zero biases so every term of the positive phase is exercised
        model.hidden.bias.normal_(0, 0.5, generator=gen)
        model.visible_bias.weight.normal_(0, 0.5, generator=gen)
    x = (torch.rand(9, 10, generator=gen) < 0.5).double()
    check_against_loop(model, lambda: model.loss_per_record(x, gen), lambda i: model.free_energy(x[i : i + 1]).sum(), 9)


def test_rbm_positive_phase_is_v_times_hidden_probabilities() -> None:
    gen = torch.Generator().manual_seed(2)
    model = RBM(5, n_hidden=4, generator=gen).double()
    x = (torch.rand(6, 5, generator=gen) < 0.5).double()
    ghost = GhostClipper(model).compute(lambda: model.loss_per_record(x, gen))
    grad_w, grad_c, grad_b = ghost.clipped_sum(torch.ones(6, dtype=torch.float64))
    probs = model.hidden_probs(x).detach()
    torch.testing.assert_close(grad_w, -probs.t() @ x)
    torch.testing.assert_close(grad_c, -probs.sum(0))
    torch.testing.assert_close(grad_b, -x.sum(0, keepdim=True))


def test_vae_norms_match_torch_func_per_sample_gradients() -> None:
    gen = torch.Generator().manual_seed(3)
    model = VAE(9, hidden=[7], latent=2, generator=gen).double()
    x = (torch.rand(5, 9, generator=gen) < 0.5).double()
    eps = torch.randn(5, 2, generator=gen, dtype=torch.float64)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def one(p, xi, ei):
        return functional_call(model, p, (xi.unsqueeze(0), ei.unsqueeze(0))).sum()

    per_sample = vmap(grad(one), in_dims=(None, 0, 0))(params, x, eps)
    expected = torch.sqrt(sum(g.reshape(5, -1).pow(2).sum(1) for g in per_sample.values()))
    ghost = GhostClipper(model).compute(lambda: model(x, eps))
    torch.testing.assert_close(ghost.norms, expected, rtol=1e-10, atol=1e-12)


def test_frozen_parameters_are_left_out_of_the_norm() -> None:
    gen = torch.Generator().manual_seed(4)
    model = VAE(6, hidden=[4], latent=2, generator=gen).double()
    model.encoder[0].weight.requires_grad_(False)
    x = (torch.rand(3, 6, generator=gen) < 0.5).double()
    eps = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    check_against_loop(model, lambda: model(x, eps), lambda i: model(x[i : i + 1], eps[i : i + 1]).sum(), 3)


def test_parameter_outside_linear_layers_is_rejected() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    with pytest.raises(ConfigError, match=r"nn.Linear or nn.Conv2d"):
        GhostClipper(model)


def test_layer_called_twice_is_rejected() -> None:
    layer = nn.Linear(3, 3)
    clipper = GhostClipper(layer)
    with pytest.raises(ConfigError, match="once"):
        clipper.compute(lambda: layer(layer(torch.ones(2, 3))).sum(1))
    # the clipper is usable again after the error, and hooks are inert outside compute()
    layer(torch.ones(2, 3))
    assert clipper.compute(lambda: layer(torch.ones(2, 3)).sum(1)).norms.shape == (2,)


def test_record_with_non_finite_gradient_is_dropped() -> None:
    layer = nn.Linear(3, 2).double()
    x = torch.tensor([[1.0, 2.0, 3.0], [float("inf"), 0.0, 1.0]], dtype=torch.float64)
    ghost = GhostClipper(layer).compute(lambda: layer(x).pow(2).sum(1))
    assert ghost.norms[1] == 0 and torch.isfinite(ghost.norms[0])
    sums = ghost.clipped_sum(torch.ones(2, dtype=torch.float64))
    single = GhostClipper(layer).compute(lambda: layer(x[:1]).pow(2).sum(1)).clipped_sum(torch.ones(1, dtype=torch.float64))
    for s, t in zip(sums, single):
        torch.testing.assert_close(s, t)


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation"), [(4, 2, 1, 1), (3, 1, 1, 1), (3, 2, 0, 2), (2, 3, 2, 1)])
def test_conv2d_norms_and_clipped_sum_equal_single_record_loop(kernel, stride, padding, dilation) -> None:
    """Materialised per-record Conv2d gradients (one grouped convolution) for strides, paddings
    and dilations, next to a Linear layer (ghost norms) in one model."""
    gen = torch.Generator().manual_seed(5)
    conv = nn.Conv2d(2, 3, kernel, stride=stride, padding=padding, dilation=dilation).double()
    model = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.LazyLinear(2).double())
    x = torch.randn(4, 2, 9, 9, generator=gen, dtype=torch.float64)
    model(x)  # materialise the lazy layer
    check_against_loop(model, lambda: model(x).pow(2).sum(1), lambda i: model(x[i : i + 1]).pow(2).sum(), 4)


@pytest.mark.parametrize("norm", [False, True])
def test_conv_vae_matches_torch_func_per_sample_gradients(norm: bool) -> None:
    """Also with group normalisation (per record, so each record's gradient is still its own)."""
    gen = torch.Generator().manual_seed(6)
    model = ConvVAE(64, channels=[3, 4], latent=2, norm=norm, generator=gen).double()
    x = (torch.rand(5, 64, generator=gen) < 0.5).double()
    eps = torch.randn(5, 2, generator=gen, dtype=torch.float64)
    trainable = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}

    def one(p, xi, ei):
        return functional_call(model, p, (xi.unsqueeze(0), ei.unsqueeze(0)), strict=False).sum()

    per_sample = vmap(grad(one), in_dims=(None, 0, 0))(trainable, x, eps)
    expected = torch.sqrt(sum(g.reshape(5, -1).pow(2).sum(1) for g in per_sample.values()))
    ghost = GhostClipper(model).compute(lambda: model(x, eps))
    torch.testing.assert_close(ghost.norms, expected, rtol=1e-10, atol=1e-12)


def test_conv_record_with_non_finite_gradient_is_dropped() -> None:
    conv = nn.Conv2d(1, 2, 3, padding=1).double()
    x = torch.ones(2, 1, 4, 4, dtype=torch.float64)
    x[1, 0, 2, 2] = float("inf")
    ghost = GhostClipper(conv).compute(lambda: conv(x).pow(2).sum((1, 2, 3)))
    assert ghost.norms[1] == 0 and torch.isfinite(ghost.norms[0])
    single = GhostClipper(conv).compute(lambda: conv(x[:1]).pow(2).sum((1, 2, 3))).clipped_sum(torch.ones(1, dtype=torch.float64))
    for s, t in zip(ghost.clipped_sum(torch.ones(2, dtype=torch.float64)), single):
        torch.testing.assert_close(s, t)


def test_conv_empty_batch_gives_empty_norms_and_zero_sums() -> None:
    conv = nn.Conv2d(1, 2, 3, padding=1).double()
    ghost = GhostClipper(conv).compute(lambda: conv(torch.ones(0, 1, 4, 4, dtype=torch.float64)).sum((1, 2, 3)))
    assert ghost.norms.shape == (0,)
    assert all(not bool(s.any()) for s in ghost.clipped_sum(torch.ones(0, dtype=torch.float64)))


@pytest.mark.parametrize("conv", [nn.Conv2d(2, 2, 3, groups=2), nn.Conv2d(1, 2, 3, padding="same"),
                                  nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect")])
def test_unsupported_conv2d_is_rejected(conv) -> None:
    with pytest.raises(ConfigError, match="Conv2d"):
        GhostClipper(nn.Sequential(conv))


@pytest.mark.parametrize("kind", ["vae", "conv_vae"])
def test_several_draws_per_record_sum_over_their_rows(kind: str) -> None:
    """K latent draws per record: the decoder's layers see K rows per record (Gram-matrix ghost norms
    for nn.Linear, summed materialised rows for nn.Conv2d) and the norms and sums still equal the
    single-record loop, where each record's loss is the mean of its K ELBOs."""
    gen = torch.Generator().manual_seed(7)
    if kind == "vae":
        model = VAE(12, hidden=[8, 5], latent=3, draws=4, generator=gen).double()
    else:
        model = ConvVAE(64, channels=[3, 4], latent=3, draws=4, generator=gen).double()
    x = (torch.rand(6, model.n_items, generator=gen) < 0.4).double()
    eps = model.step_noise(6, gen)
    assert eps.shape == (6, 4, 3)
    check_against_loop(model, lambda: model(x, eps), lambda i: model(x[i : i + 1], eps[i : i + 1]).sum(), 6)


def test_a_record_with_several_draws_drops_all_its_rows_when_not_finite() -> None:
    gen = torch.Generator().manual_seed(8)
    model = VAE(5, hidden=[4], latent=2, draws=3, generator=gen).double()
    x = (torch.rand(3, 5, generator=gen) < 0.5).double()
    eps = model.step_noise(3, gen)
    eps[1, 2, 0] = float("inf")
    ghost = GhostClipper(model).compute(lambda: model(x, eps))
    assert ghost.norms[1] == 0 and bool(torch.isfinite(ghost.norms).all())
    keep = torch.tensor([0, 2])
    rest = GhostClipper(model).compute(lambda: model(x[keep], eps[keep]))
    for s, t in zip(ghost.clipped_sum(torch.ones(3, dtype=torch.float64)), rest.clipped_sum(torch.ones(2, dtype=torch.float64))):
        torch.testing.assert_close(s, t)


def test_a_layer_whose_rows_are_not_whole_per_record_is_rejected() -> None:
    layer = nn.Linear(3, 2)
    with pytest.raises(ConfigError, match="K >= 1 rows per record") as caught:
        GhostClipper(layer).compute(lambda: layer(torch.ones(5, 3)).sum(1).reshape(-1)[:2])
    assert "5" not in str(caught.value) and "2 records" not in str(caught.value)  # no private batch size in the message
    with pytest.raises(ConfigError, match="K >= 1 rows per record"):  # a layer that saw no row for a batch of records
        GhostClipper(layer).compute(lambda: (layer(torch.ones(0, 3)).sum() + torch.zeros(4, requires_grad=True)))


@pytest.mark.parametrize("kind", ["vae", "conv_vae"])
def test_group_norms_and_per_group_clipped_sum_equal_single_record_loop(kind: str) -> None:
    """groups=("decoder",): each record's norm per group (the rest, the decoder) and a clipped sum weighting
    each group's part by its own weight, against per-record gradients split by hand."""
    gen = torch.Generator().manual_seed(3)
    model = (VAE(16, hidden=[8], latent=3, generator=gen) if kind == "vae"
             else ConvVAE(16, channels=[2, 3], latent=3, generator=gen)).double()
    x = (torch.rand(6, 16, generator=gen) < 0.4).double()
    eps = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    ghost = GhostClipper(model, groups=("decoder",)).compute(lambda: model(x, eps))
    params = [p for p in model.parameters() if p.requires_grad]
    in_decoder = [any(p is q for q in model.decoder.parameters()) for p in params]
    assert any(in_decoder) and not all(in_decoder)
    per_record = loop_grads(model, lambda i: model(x[i: i + 1], eps[i: i + 1]).sum(), 6)
    rest = torch.stack([flat_norm([g for g, d in zip(gs, in_decoder) if not d]) for gs in per_record])
    dec = torch.stack([flat_norm([g for g, d in zip(gs, in_decoder) if d]) for gs in per_record])
    torch.testing.assert_close(ghost.group_norms, torch.stack([rest, dec]), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ghost.norms, torch.sqrt(rest ** 2 + dec ** 2), rtol=1e-10, atol=1e-12)
    weights = torch.stack([torch.linspace(0.1, 2.0, 6), torch.linspace(3.0, -1.0, 6)]).double()
    for j, s in enumerate(ghost.clipped_sum(weights)):
        w = weights[1 if in_decoder[j] else 0]
        torch.testing.assert_close(s, sum(wi * g[j] for wi, g in zip(w, per_record)), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="per-group weights"):
        GhostClipper(model).compute(lambda: model(x, eps)).clipped_sum(weights)


def test_clip_groups_need_the_named_trainable_submodule() -> None:
    with pytest.raises(ConfigError, match="no trainable 'decoder'"):
        GhostClipper(RBM(6, n_hidden=3), groups=("decoder",))
