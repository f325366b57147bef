"""DP-SGD step with fixed or DPNorm-adaptive clipping (DPGM paper, Alg. 4 and Alg. 3).

One ``DPSGD.step`` takes an already Poisson-sampled batch (possibly empty), computes every
record's gradient norm without materialising per-record gradients (per_sample.GhostClipper),
picks the threshold C_s (fixed, or DPNorm on the same batch), clips each record's
contribution by min(1, C_s / ||g_i||), sums, adds N(0, (sigma_G C_s)^2) per coordinate and
divides by the caller's expected batch size (q times a released part size, never the
realised batch size). Any data-independent loss term of the model (RBM negative phase,
DESIGN.md 3.7) is added after privatisation; then the wrapped torch optimizer steps
(post-processing). The CALLER charges ``event()`` to the accountant before each step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from dpgm.errors import ConfigError
from dpgm.privacy.events import DpEvent, SampledGaussianEvent, SampledJointGaussianEvent
from dpgm.privacy.mechanisms import gaussian_noise
from dpgm.training.dpnorm import dpnorm
from dpgm.training.per_sample import GhostClipper


@dataclass(frozen=True)
class StepResult:
    """One step's diagnostics. ``clip_norm`` (C_s) is a released value; ``loss`` (mean data term
    over the realised batch: VAE negative ELBO, RBM free energy; NaN when empty) and
    ``batch_size`` (realised) are NOT private: show them to the operator, never release them."""

    loss: float
    clip_norm: float
    batch_size: int


def poisson_sample(n: int, q: float, generator: torch.Generator | None) -> Tensor:
    """Indices (LongTensor) of a Poisson sample of range(n): each joins independently with prob. q.

    Uniforms in float64: float32 has 2^-24 resolution, which rounds q (q = 1e-8 would include
    each record with probability 6e-8), and the accountant analyses exactly q.
    """
    if n < 0 or not 0 < q <= 1:
        raise ConfigError(f"Poisson sampling needs n >= 0 and q in (0, 1], got n={n}, q={q}")
    return torch.nonzero(torch.rand(n, generator=generator, dtype=torch.float64) < q).squeeze(1)


def clip_factors(norms: Tensor, clip_norm: float | Tensor) -> Tensor:
    """min(1, C / ||g_i||) per record (1 for a zero gradient); ``clip_norm`` a number or one C per record."""
    clip = torch.as_tensor(clip_norm, dtype=norms.dtype, device=norms.device)
    return torch.where(norms > clip, clip / norms.clamp_min(1e-30), torch.ones_like(norms))


def step_event(*, sampling_rate: float, noise_multiplier: float, clipping: str, hist_noise_multiplier: float) -> DpEvent:
    """One DP-SGD step's privacy event: sampled Gaussian (fixed clipping) or, with DPNorm, the
    histogram and the gradient released from the same Poisson batch (DESIGN.md 3.6)."""
    if clipping == "fixed":
        return SampledGaussianEvent(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    return SampledJointGaussianEvent(sampling_rate=sampling_rate, noise_multipliers=(hist_noise_multiplier, noise_multiplier))


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"DP-SGD: {name} must be a finite number > 0, got {value!r}")
    return float(value)


class DPSGD:
    """Private steps for one model (a GenerativeModel whose parameters all live in nn.Linear layers)."""

    def __init__(
        self,
        model: nn.Module,
        *,
        sampling_rate: float,
        expected_batch_size: float,
        noise_multiplier: float,
        clipping: Literal["adaptive", "fixed"] = "adaptive",
        clip_norm: float = 1.0,
        hist_noise_multiplier: float = 4.0,
        hist_max: float = 10.0,
        hist_bins: int = 100,
        optimizer: torch.optim.Optimizer,
        generator: torch.Generator | None,
    ) -> None:
        if not (isinstance(sampling_rate, (int, float)) and 0 < sampling_rate <= 1):
            raise ConfigError(f"DP-SGD: sampling_rate must be in (0, 1], got {sampling_rate!r}")
        if clipping not in ("adaptive", "fixed"):
            raise ConfigError(f"DP-SGD: clipping must be 'adaptive' or 'fixed', got {clipping!r}")
        if isinstance(hist_bins, bool) or not isinstance(hist_bins, int) or hist_bins < 1:
            raise ConfigError(f"DP-SGD: hist_bins must be an integer >= 1, got {hist_bins!r}")
        self.model = model
        self.sampling_rate = float(sampling_rate)
        self.expected_batch_size = _positive("expected_batch_size", expected_batch_size)
        self.noise_multiplier = _positive("noise_multiplier", noise_multiplier)
        self.clipping = clipping
        self.clip_norm = _positive("clip_norm", clip_norm)
        self.hist_noise_multiplier = _positive("hist_noise_multiplier", hist_noise_multiplier)
        self.hist_max = _positive("hist_max", hist_max)
        self.hist_bins = hist_bins
        self.optimizer = optimizer
        self.generator = generator
        self.clipper = GhostClipper(model)
        self.params = self.clipper.params

    def event(self) -> DpEvent:
        """The privacy event of one step of this optimiser."""
        return step_event(sampling_rate=self.sampling_rate, noise_multiplier=self.noise_multiplier,
                          clipping=self.clipping, hist_noise_multiplier=self.hist_noise_multiplier)

    def threshold(self, norms: Tensor) -> float:
        """C_s for this batch: clip_norm, or DPNorm's noisy histogram mode (Alg. 3)."""
        if self.clipping == "fixed":
            return self.clip_norm
        return dpnorm(
            norms,
            hist_max=self.hist_max,
            bins=self.hist_bins,
            noise_multiplier=self.hist_noise_multiplier,
            generator=self.generator,
        ).threshold

    def privatised_gradients(self, batch: Tensor) -> tuple[list[Tensor], StepResult]:
        """(sum_i min(1, C_s/||g_i||) g_i + N(0, (sigma_G C_s)^2 I)) / expected_batch_size, per parameter."""
        n = int(batch.shape[0])
        if n > 0:
            ghost = self.clipper.compute(lambda: self.model.loss_per_record(batch, self.generator))
            norms, loss = ghost.norms, float(ghost.losses.mean())
        else:
            ghost, norms, loss = None, torch.zeros(0), math.nan
        c_s = self.threshold(norms)
        if ghost is not None:
            sums = ghost.clipped_sum(clip_factors(norms, c_s))
        else:
            sums = [torch.zeros_like(p) for p in self.params]
        std = self.noise_multiplier * c_s
        grads = []
        for p, s in zip(self.params, sums):
            # Same draws as Opacus's _generate_noise (torch.normal per parameter, in order).
            noise = gaussian_noise(p.shape, std, self.generator, device=p.device, dtype=p.dtype)
            grads.append(noise.add_(s).div_(self.expected_batch_size))
        return grads, StepResult(loss=loss, clip_norm=c_s, batch_size=n)

    def step(self, batch: Tensor) -> StepResult:
        """One private step on an already Poisson-sampled ``batch`` [B, m] (B may be 0: still noises)."""
        grads, result = self.privatised_gradients(batch)
        extra_loss = self.model.post_processing_loss(self.generator) if hasattr(self.model, "post_processing_loss") else None
        if extra_loss is not None:
            extra = torch.autograd.grad(extra_loss, self.params, allow_unused=True)
            grads = [g if e is None else g + e for g, e in zip(grads, extra)]
        for p, g in zip(self.params, grads):
            p.grad = g
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return result
