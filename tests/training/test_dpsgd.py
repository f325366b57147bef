"""The DP-SGD engine: clipping, equality with Opacus, noise scale, empty batches, events, RBM phases,
stepping a subset of the parts."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from dpgm.errors import ConfigError
from dpgm.models import RBM, VAE
from dpgm.privacy.clipping import CLIP_MARGIN
from dpgm.privacy.events import SampledGaussianEvent, SampledJointGaussianEvent
from dpgm.privacy.noise_scale import scaled_noise
from dpgm.threads import torch_threads
from dpgm.training.background import Background, run_now
from dpgm.training.dpsgd import DPSGD, NOISE_CORE_BELOW, Mechanism
from dpgm.training.mechanism import poisson_sample
from dpgm.training.stacked import ModelStack


class ZeroGradient(nn.Module):
    """A model whose loss has zero gradient: any parameter movement is pure DP noise."""

    def __init__(self, n_in: int = 40, n_out: int = 25) -> None:
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def step_noise(self, n: int, generator: torch.Generator | None) -> torch.Tensor:
        return torch.zeros(n, 0)

    def record_losses(self, x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return (self.lin(x) * 0.0).sum(dim=-1)

    def post_processing_noise(self, generator: torch.Generator | None) -> None:
        return None

    def post_processing_loss(self, noise: torch.Tensor) -> None:
        return None


def single(model: nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator, *,
           expected_batch_size: float, secure_mode: bool = False, device_noise: bool = True, **mechanism) -> DPSGD:
    """The engine for one model (k = 1)."""
    return DPSGD([model], Mechanism(**mechanism), expected_batch_sizes=[expected_batch_size], optimizers=[optimizer],
                 generator=generator, secure_mode=secure_mode, device_noise=device_noise)


def make_dpsgd(model: nn.Module, seed: int = 0, lr: float = 0.1, **kwargs) -> DPSGD:
    args = {"sampling_rate": 0.01, "expected_batch_size": 10.0, "noise_multiplier": 1.0, "clipping": "fixed"}
    args.update(kwargs)
    return single(model, torch.optim.SGD(model.parameters(), lr=lr), torch.Generator().manual_seed(seed), **args)


def flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_every_per_record_contribution_is_clipped() -> None:
    gen = torch.Generator().manual_seed(1)
    model = VAE(16, hidden=[8], latent=2, generator=gen).double()
    dp = make_dpsgd(model, noise_multiplier=1e-12, clip_norm=0.7, expected_batch_size=1.0)
    x = (torch.rand(12, 16, generator=gen) < 0.5).double()
    for scale in (1e-3, 1.0, 50.0):  # gradients well below, around and far above the threshold
        for i in range(12):
            (grads,), (result,) = dp.privatised_gradients(x[i : i + 1] * scale)
            norm = float(torch.sqrt(sum(g.pow(2).sum() for g in grads)))
            assert norm <= 0.7
            if scale == 50.0:  # at the threshold, less the rounding margin
                assert norm == pytest.approx(0.7 * (1 - CLIP_MARGIN), rel=1e-8)
            assert result.batch_size == 1


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_fixed_step_equals_opacus_dpoptimizer_step() -> None:
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.manual_seed(0)  # only for this test's model init; the library code never uses it
    ours = VAE(10, hidden=[6], latent=2)
    theirs = copy.deepcopy(ours)
    start = flat(ours)
    x = (torch.rand(5, 10, generator=torch.Generator().manual_seed(9)) < 0.5).float()
    sigma, clip, expected = 1.3, 0.5, 8  # realised batch 5, expected 8: division must use 8

    dp = single(ours, torch.optim.SGD(ours.parameters(), lr=0.1), torch.Generator().manual_seed(5), sampling_rate=0.01,
                expected_batch_size=expected, noise_multiplier=sigma, clipping="fixed", clip_norm=clip)
    dp.step(x)

    gsm = GradSampleModule(theirs, loss_reduction="mean")
    gen = torch.Generator().manual_seed(5)  # same stream: reparameterisation noise, then gradient noise per parameter
    opt = DPOptimizer(torch.optim.SGD(gsm.parameters(), lr=0.1), noise_multiplier=sigma, max_grad_norm=clip,
                      expected_batch_size=expected, loss_reduction="mean", generator=gen)
    theirs.loss_per_record(x, gen).mean().backward()
    opt.step()
    assert not torch.allclose(flat(ours), start, atol=1e-3)
    torch.testing.assert_close(flat(ours), flat(theirs), rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_fixed_step_equals_opacus_with_noise_only_in_the_clipped_sum() -> None:
    """Same comparison with sigma tiny: the clipped sums themselves agree (no shared-noise luck)."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.manual_seed(1)
    ours = VAE(10, hidden=[6], latent=2)
    theirs = copy.deepcopy(ours)
    start = flat(ours)
    x = (torch.rand(7, 10, generator=torch.Generator().manual_seed(3)) < 0.5).float()
    dp = single(ours, torch.optim.SGD(ours.parameters(), lr=1.0), torch.Generator().manual_seed(2), sampling_rate=0.01,
                expected_batch_size=4, noise_multiplier=1e-9, clipping="fixed", clip_norm=0.3)
    dp.step(x)
    gsm = GradSampleModule(theirs, loss_reduction="mean")
    gen = torch.Generator().manual_seed(2)
    opt = DPOptimizer(torch.optim.SGD(gsm.parameters(), lr=1.0), noise_multiplier=0.0, max_grad_norm=0.3,
                      expected_batch_size=4, loss_reduction="mean", generator=gen)
    theirs.loss_per_record(x, gen).mean().backward()
    opt.step()
    torch.testing.assert_close(flat(ours) - start, flat(theirs) - start, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("clipping", ["fixed", "adaptive"])
def test_zero_gradient_model_drifts_with_the_predicted_noise_scale(clipping: str) -> None:
    q, n, sigma, lr, clip = 0.02, 1000, 2.0, 0.5, 1.5
    model = ZeroGradient()
    start = flat(model)
    dp = make_dpsgd(model, seed=7, lr=lr, sampling_rate=q, expected_batch_size=q * n, noise_multiplier=sigma,
                    clipping=clipping, clip_norm=clip, hist_noise_multiplier=1.0, hist_max=10.0, hist_bins=100)
    batch = torch.ones(20, 40)
    (result,) = dp.step(batch)
    # adaptive: all 20 norms are 0 -> first bin (0, 0.1] beats noise of std 1 -> C_s = 0.1
    c_s = clip if clipping == "fixed" else 0.1
    assert result.clip_norm == pytest.approx(c_s)
    drift = flat(model) - start
    predicted = sigma * c_s * lr / (q * n)
    assert abs(float(drift.std()) / predicted - 1) < 0.08  # 1025 coordinates: sampling error ~2%
    assert abs(float(drift.mean())) < 4 * predicted / math.sqrt(drift.numel())


def test_empty_batch_still_adds_noise_and_steps() -> None:
    model = ZeroGradient()
    start = flat(model)
    dp = make_dpsgd(model, seed=3, lr=1.0, expected_batch_size=5.0, noise_multiplier=1.0, clip_norm=2.0, clipping="adaptive",
                    hist_max=4.0, hist_bins=8)
    (result,) = dp.step(torch.zeros(0, 40))
    assert result.batch_size == 0 and math.isnan(result.loss)
    assert result.clip_norm in {0.5 * j for j in range(1, 9)}
    drift = flat(model) - start
    assert abs(float(drift.std()) / (result.clip_norm / 5.0) - 1) < 0.08


def test_events_of_one_step() -> None:
    model = ZeroGradient()
    fixed = make_dpsgd(model, sampling_rate=0.03, noise_multiplier=1.1)
    assert fixed.event() == SampledGaussianEvent(sampling_rate=0.03, noise_multiplier=1.1)
    adaptive = make_dpsgd(model, sampling_rate=0.03, noise_multiplier=1.1, clipping="adaptive", hist_noise_multiplier=4.0)
    assert adaptive.event() == SampledJointGaussianEvent(sampling_rate=0.03, noise_multipliers=(4.0, 1.1))


@pytest.mark.parametrize("bad", [{"expected_batch_size": 0.0}, {"noise_multiplier": 0.0}, {"sampling_rate": 1.5},
                                 {"clipping": "median"}, {"hist_bins": 0}, {"clip_norm": float("nan")}])
def test_bad_parameters_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        make_dpsgd(ZeroGradient(), **bad)


def test_rbm_step_is_noisy_positive_phase_over_expected_size_minus_negative_phase() -> None:
    gen = torch.Generator().manual_seed(4)
    model = RBM(6, n_hidden=5, chains=30, generator=gen).double()
    before = copy.deepcopy(model)
    x = (torch.rand(8, 6, generator=gen) < 0.5).double()
    lr, expected = 0.1, 12.0
    dp = make_dpsgd(model, seed=5, lr=lr, expected_batch_size=expected, noise_multiplier=1e-12, clip_norm=1e6)
    dp.step(x)
    chains = model.chains  # advanced by this step with the old parameters (post-processing)
    assert not torch.equal(chains, before.chains)
    p_data, p_model = before.hidden_probs(x).detach(), before.hidden_probs(chains).detach()
    grad_w = -(p_data.t() @ x) / expected + p_model.t() @ chains / len(chains)
    grad_c = -p_data.sum(0) / expected + p_model.mean(0)
    grad_b = -x.sum(0) / expected + chains.mean(0)
    torch.testing.assert_close(model.hidden.weight, before.hidden.weight - lr * grad_w)
    torch.testing.assert_close(model.hidden.bias, before.hidden.bias - lr * grad_c)
    torch.testing.assert_close(model.visible_bias.weight.squeeze(0), before.visible_bias.weight.squeeze(0) - lr * grad_b)


def _mean_loss(model: VAE, data: torch.Tensor) -> float:
    """The loss averaged over 10 reparameterisation draws of a fixed stream (one draw is too noisy)."""
    g = torch.Generator().manual_seed(123)
    return float(torch.stack([model.loss_per_record(data, g).mean() for _ in range(10)]).mean().detach())


def test_adaptive_training_reduces_vae_loss() -> None:
    """Over seeds 0..7 the ratio was 0.25-0.32 (lr 0.005); lr 0.02 with one draw ranged 0.4-1.0."""
    gen = torch.Generator().manual_seed(6)
    data = torch.zeros(400, 12)
    data[:200, :6] = 1.0
    data[200:, 6:] = 1.0
    model = VAE(12, hidden=[16], latent=2, generator=gen)
    dp = single(model, torch.optim.Adam(model.parameters(), lr=0.005), gen, sampling_rate=0.25,
                expected_batch_size=100.0, noise_multiplier=0.5, clipping="adaptive")
    first = _mean_loss(model, data)
    for _ in range(150):
        dp.step(data[poisson_sample(400, 0.25, gen)])
    assert _mean_loss(model, data) < 0.5 * first


def test_only_the_active_parts_step() -> None:
    """The alternate schedule steps one part: the others keep parameters and optimizer state."""
    models = [ZeroGradient(), ZeroGradient()]
    before = [flat(m) for m in models]
    opts = [torch.optim.Adam(m.parameters(), lr=0.1) for m in models]
    dp = DPSGD(models, Mechanism(sampling_rate=0.1, noise_multiplier=1.0, clipping="fixed"),
               expected_batch_sizes=[2.0, 3.0], optimizers=opts, generator=torch.Generator().manual_seed(0))
    (result,) = dp.step(torch.ones(4, 40), torch.ones(4, dtype=torch.long), active=[1])
    assert result.batch_size == 4
    assert torch.equal(flat(models[0]), before[0]) and opts[0].state_dict()["state"] == {}
    assert not torch.equal(flat(models[1]), before[1])
    with pytest.raises(ValueError, match="stepping part"):
        dp.step(torch.ones(1, 40), torch.zeros(1, dtype=torch.long), active=[1])


def test_a_model_outside_the_protocol_is_a_config_error() -> None:
    model = nn.Linear(3, 1)
    with pytest.raises(ConfigError, match="DPSGDModel"):
        DPSGD([model], Mechanism(sampling_rate=0.1, noise_multiplier=1.0), expected_batch_sizes=[1.0],
              optimizers=[torch.optim.SGD(model.parameters(), lr=0.1)], generator=None)


def test_draws_come_in_the_documented_order() -> None:
    """Step and histogram noise of every stepping part first (step noise only with records), then N(0, 1) per
    parameter of every part: part 1 (no record) gets C_s times the numbers a generator replaying that order draws."""
    gen = torch.Generator().manual_seed(8)
    models = [VAE(6, hidden=[4], latent=2, generator=gen) for _ in range(2)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.0) for m in models]
    dp = DPSGD(models, Mechanism(sampling_rate=0.1, noise_multiplier=1.0, hist_bins=7), expected_batch_sizes=[1.0, 1.0],
               optimizers=opts, generator=torch.Generator().manual_seed(3))
    grads, results = dp.privatised_gradients(torch.ones(3, 6), torch.zeros(3, dtype=torch.long))  # part 1: none
    ref = torch.Generator().manual_seed(3)
    models[0].step_noise(3, ref)
    for _ in models:
        torch.empty(7, dtype=torch.float64).normal_(generator=ref)
    drawn = [[torch.empty_like(p).normal_(generator=ref) for p in model.parameters()] for model in models]
    assert torch.equal(dp.generator.get_state(), ref.get_state())
    for g, z in zip(grads[1], drawn[1]):
        torch.testing.assert_close(g, results[1].clip_norm * z)


def test_noise_drawn_beside_the_pass_is_the_noise_drawn_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker thread's gradient noise is bit for bit what the main thread draws: the same models after
    adaptive steps of two stacked VAEs and an RBM, and the same generator state."""

    def run(inline: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
        if inline:
            monkeypatch.setattr(Background, "submit", lambda self, fn: run_now(fn))
        gen = torch.Generator().manual_seed(5)
        models = [VAE(8, hidden=[5], latent=2, generator=gen) for _ in range(2)]
        models.append(RBM(8, n_hidden=3, chains=4, generator=gen))
        dp = DPSGD(models, Mechanism(sampling_rate=0.1, noise_multiplier=1.0), expected_batch_sizes=[2.0, 2.0, 2.0],
                   optimizers=[torch.optim.Adam(m.parameters(), lr=0.01) for m in models],
                   generator=torch.Generator().manual_seed(6))
        data = (torch.rand(40, 8, generator=gen) < 0.4).float()
        for _ in range(3):
            rows = poisson_sample(40, 0.1, dp.generator)
            dp.step(data[rows], rows % 3)
        monkeypatch.undo()
        return [flat(m) for m in models], dp.generator.get_state()

    (worker, state), (inline, inline_state) = run(False), run(True)
    assert all(torch.equal(a, b) for a, b in zip(worker, inline)) and torch.equal(state, inline_state)


@pytest.mark.parametrize("factor", [0.0, 0.5])
def test_the_worker_draws_at_the_caller_s_noise_scale(factor: float) -> None:
    """The audit's weakened noise (a context variable) reaches the gradient noise drawn on the worker thread."""

    def empty_step_grads() -> torch.Tensor:
        model = VAE(6, hidden=[4], latent=2, generator=torch.Generator().manual_seed(0))
        dp = make_dpsgd(model, seed=4)
        (grads,), _ = dp.privatised_gradients(torch.zeros(0, 6))
        return torch.cat([g.reshape(-1) for g in grads])

    full = empty_step_grads()
    with scaled_noise(factor):
        weakened = empty_step_grads()
    assert full.abs().min() > 0
    torch.testing.assert_close(weakened, factor * full)


def test_rbm_draws_its_negative_phase_noise_last() -> None:
    """An RBM part (no record): histogram noise, N(0, 1) per parameter, then its Gibbs uniforms."""
    model = RBM(5, n_hidden=3, chains=4, gibbs_steps=2, generator=torch.Generator().manual_seed(1))
    dp = DPSGD([model], Mechanism(sampling_rate=0.1, noise_multiplier=1.0, hist_bins=7), expected_batch_sizes=[1.0],
               optimizers=[torch.optim.SGD(model.parameters(), lr=0.0)], generator=torch.Generator().manual_seed(3))
    dp.step(torch.zeros(0, 5))
    ref = torch.Generator().manual_seed(3)
    torch.empty(7, dtype=torch.float64).normal_(generator=ref)
    for p in model.parameters():
        torch.empty_like(p).normal_(generator=ref)
    torch.rand(2, 4, 3 + 5, generator=ref)
    assert torch.equal(dp.generator.get_state(), ref.get_state())


@pytest.mark.parametrize("share", [0.2, 0.8])
def test_decoder_clip_share_clips_each_part_of_a_record_to_its_own_threshold(share: float) -> None:
    """Per-group clipping: a record's decoder gradient has norm <= C sqrt(s), the rest <= C sqrt(1 - s) (equal
    when far above), so the whole stays <= C: the sensitivity of the one clip, and the same event."""
    gen = torch.Generator().manual_seed(4)
    model = VAE(16, hidden=[8], latent=2, generator=gen).double()
    dp = make_dpsgd(model, noise_multiplier=1e-12, clip_norm=0.7, expected_batch_size=1.0, decoder_clip_share=share)
    assert dp.event() == make_dpsgd(VAE(16, hidden=[8], latent=2), noise_multiplier=1e-12, clip_norm=0.7).event()
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    x = (torch.rand(10, 16, generator=gen) < 0.5).double()
    for scale in (1e-3, 50.0):
        for i in range(10):
            (grads,), _ = dp.privatised_gradients(x[i: i + 1] * scale)
            dec = math.sqrt(sum(float(g.pow(2).sum()) for n, g in zip(names, grads) if n.startswith("decoder")))
            rest = math.sqrt(sum(float(g.pow(2).sum()) for n, g in zip(names, grads) if not n.startswith("decoder")))
            assert dec <= 0.7 * math.sqrt(share) * (1 + 1e-9) and rest <= 0.7 * math.sqrt(1 - share) * (1 + 1e-9)
            if scale == 50.0:  # at the threshold, less the rounding margin
                kept = 0.7 * (1 - CLIP_MARGIN)
                assert dec == pytest.approx(kept * math.sqrt(share), rel=1e-8)
                assert rest == pytest.approx(kept * math.sqrt(1 - share), rel=1e-8)


@pytest.mark.parametrize("bad", [{"decoder_clip_share": 0.0}, {"decoder_clip_share": 1.0},
                                 {"decoder_clip_share": 0.5, "clipping": "adaptive"}])
def test_bad_decoder_clip_share_is_a_config_error(bad: dict) -> None:
    with pytest.raises(ConfigError, match="decoder_clip_share"):
        Mechanism(sampling_rate=0.1, noise_multiplier=1.0, **{"clipping": "fixed", **bad})


@pytest.mark.parametrize(("expected", "passes"), [(10.0, 1), (float(NOISE_CORE_BELOW), 2)])
def test_small_passes_leave_a_core_to_the_noise_worker(monkeypatch: pytest.MonkeyPatch, expected: float,
                                                       passes: int) -> None:
    """On two threads, the passes of a step below NOISE_CORE_BELOW expected records run on one (the worker draws the
    noise on the other core); the optimizer's step runs on both, and the thread count is restored after."""
    seen: dict[str, int] = {}
    ghost_pass, adam_step = ModelStack.ghost_pass, torch.optim.Adam.step

    def passes_seen(self: ModelStack, *args):
        seen["passes"] = torch.get_num_threads()
        return ghost_pass(self, *args)

    def step_seen(self: torch.optim.Adam, *args, **kwargs):
        seen["optimizer"] = torch.get_num_threads()
        return adam_step(self, *args, **kwargs)

    monkeypatch.setattr(ModelStack, "ghost_pass", passes_seen)
    monkeypatch.setattr(torch.optim.Adam, "step", step_seen)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = VAE(8, hidden=[5], latent=2, generator=torch.Generator().manual_seed(0))
        dp = single(model, torch.optim.Adam(model.parameters(), lr=0.01), torch.Generator().manual_seed(1),
                    expected_batch_size=expected, sampling_rate=0.1, noise_multiplier=1.0)
        dp.step((torch.rand(6, 8) < 0.5).float())
        assert seen == {"passes": passes, "optimizer": 2} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_torch_threads_restores_the_count_after_an_error() -> None:
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), torch_threads(before + 1) as n:
        assert n == torch.get_num_threads() == before + 1
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with torch_threads(0) as n:
        assert n == torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
