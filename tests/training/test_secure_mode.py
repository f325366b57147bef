"""``privacy.secure_mode`` for DP-SGD: Opacus's secure noise (Holohan and Braghin 2021), checked
draw for draw against Opacus's own ``_generate_noise`` and ``DPOptimizer(secure_mode=True)``."""

from __future__ import annotations

import copy

import pytest
import torch
from scipy import stats

from dpgm.config import PrivacyConfig
from dpgm.models import VAE
from dpgm.privacy.mechanisms import SECURE_DRAWS, gaussian_noise, standard_normal_
from dpgm.training import dpsgd as dpsgd_mod
from dpgm.training.dpsgd import DPSGD, Mechanism


def flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_secure_draw_is_opacus_s_bit_for_bit() -> None:
    from opacus.optimizers.optimizer import _generate_noise

    reference = torch.zeros(3, 70)
    ours = standard_normal_(torch.empty(3, 70), torch.Generator().manual_seed(4), secure=True)
    theirs = _generate_noise(1.0, reference, torch.Generator().manual_seed(4), secure_mode=True)
    assert torch.equal(ours, theirs)
    plain = standard_normal_(torch.empty(3, 70), torch.Generator().manual_seed(4))
    assert not torch.equal(ours, plain)


def test_secure_draw_consumes_one_plus_four_draws_and_is_standard_normal() -> None:
    g, h = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    x = standard_normal_(torch.empty(200_000, dtype=torch.float64), g, secure=True)
    torch.empty(1, dtype=torch.float64).normal_(generator=h)
    for _ in range(SECURE_DRAWS):
        torch.empty(200_000, dtype=torch.float64).normal_(generator=h)
    assert torch.equal(g.get_state(), h.get_state())
    assert stats.kstest(x.numpy(), "norm").pvalue > 1e-6
    y = gaussian_noise((200_000,), 3.0, torch.Generator().manual_seed(1), secure=True)
    assert y.dtype == torch.float64 and float(y.std()) == pytest.approx(3.0, rel=0.01)


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_secure_fixed_step_equals_opacus_secure_dpoptimizer_step() -> None:
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.manual_seed(0)  # the models' initialisation only
    ours = VAE(10, hidden=[6], latent=2)
    theirs = copy.deepcopy(ours)
    start = flat(ours)
    x = (torch.rand(5, 10, generator=torch.Generator().manual_seed(9)) < 0.5).float()
    sigma, clip, expected = 1.3, 0.5, 8
    dp = DPSGD(
        [ours],
        Mechanism(sampling_rate=0.01, noise_multiplier=sigma, clipping="fixed", clip_norm=clip),
        expected_batch_sizes=[expected],
        optimizers=[torch.optim.SGD(ours.parameters(), lr=0.1)],
        generator=torch.Generator().manual_seed(5),
        secure_mode=True,
    )
    dp.step(x)
    gen = torch.Generator().manual_seed(5)
    opt = DPOptimizer(
        torch.optim.SGD(GradSampleModule(theirs, loss_reduction="mean").parameters(), lr=0.1),
        noise_multiplier=sigma,
        max_grad_norm=clip,
        expected_batch_size=expected,
        loss_reduction="mean",
        generator=gen,
        secure_mode=True,
    )
    theirs.loss_per_record(x, gen).mean().backward()
    opt.step()
    assert not torch.allclose(flat(ours), start, atol=1e-3)
    torch.testing.assert_close(flat(ours), flat(theirs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("secure", [False, True])
def test_every_dpsgd_draw_follows_the_mode(secure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gradient noise and the DPNorm histogram noise both take the engine's mode."""
    seen: list[bool] = []

    def spy(real):
        return lambda *args, secure=False, **kwargs: (
            seen.append(secure) or real(*args, secure=secure, **kwargs)
        )

    monkeypatch.setattr(dpsgd_mod, "standard_normal_", spy(standard_normal_))
    monkeypatch.setattr(dpsgd_mod, "gaussian_noise", spy(gaussian_noise))
    model = VAE(10, hidden=[6], latent=2, generator=torch.Generator().manual_seed(0))
    dp = DPSGD(
        [model],
        Mechanism(sampling_rate=0.1, noise_multiplier=1.0, clipping="adaptive"),
        expected_batch_sizes=[4.0],
        optimizers=[torch.optim.SGD(model.parameters(), lr=0.1)],
        generator=torch.Generator().manual_seed(1),
        secure_mode=secure,
    )
    dp.step(torch.ones(3, 10))
    assert len(seen) == 1 + len(list(model.parameters())) and set(seen) == {secure}


def test_the_engine_default_is_the_config_default() -> None:
    model = VAE(4, hidden=[3], latent=1, generator=torch.Generator().manual_seed(0))
    dp = DPSGD(
        [model],
        Mechanism(sampling_rate=0.1, noise_multiplier=1.0, clipping="fixed"),
        expected_batch_sizes=[1.0],
        optimizers=[torch.optim.SGD(model.parameters(), lr=0.1)],
        generator=None,
    )
    assert dp.secure_mode is PrivacyConfig().secure_mode


@pytest.mark.parametrize("on", [False, True])
def test_the_config_option_reaches_every_training_draw(tmp_path, monkeypatch, on: bool) -> None:
    """``privacy.secure_mode`` in a run's config turns the secure draw on for DP-SGD's noise."""
    from dpgm.pipeline import run as run_mod
    from tests.training.test_run import tiny_config

    flags: list[bool] = []
    real = dpsgd_mod.standard_normal_

    def spy(out, generator, *, secure=False):
        flags.append(secure)
        return real(out, generator, secure=secure)

    monkeypatch.setattr(dpsgd_mod, "standard_normal_", spy)
    cfg = tiny_config(tmp_path, **{"privacy.secure_mode": str(on).lower(), "training.epochs": 0.3})
    run_mod.train(cfg, progress=False)
    assert flags and set(flags) == {on}
