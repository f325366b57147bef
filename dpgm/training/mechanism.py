"""The DP-SGD mechanism of one step, shared by every part (DPGM paper, Alg. 4 and Alg. 3).

Poisson sampling at rate q, the per-record clip factor min(1, C_s / ||g_i||), the threshold
C_s (fixed, or DPNorm's noisy histogram mode per part) and the step's privacy event. The
engine that applies them to k models is dpsgd.DPSGD.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

import torch
from torch import Tensor

from dpgm.config import TrainingConfig
from dpgm.errors import ConfigError
from dpgm.privacy import collective
from dpgm.privacy.clipping import CLIP_MARGIN
from dpgm.privacy.events import DpEvent, SampledGaussianEvent, SampledJointGaussianEvent
from dpgm.training.dpnorm import mode_thresholds, norm_histograms


def poisson_sample(n: int, q: float, generator: torch.Generator | None) -> Tensor:
    """Indices (LongTensor) of a Poisson sample of range(n): each joins independently with prob. q.

    Uniforms in float64: float32 has 2^-24 resolution, which rounds q (q = 1e-8 would include
    each record with probability 6e-8), and the accountant analyses exactly q.
    """
    if n < 0 or not 0 < q <= 1:
        raise ConfigError(f"Poisson sampling needs n >= 0 and q in (0, 1], got n={n}, q={q}")
    return torch.nonzero(torch.rand(n, generator=generator, dtype=torch.float64) < q).squeeze(1)


def clip_factors(norms: Tensor, clip_norm: float | Tensor) -> Tensor:
    """min(1, C (1 - CLIP_MARGIN) / ||g_i||) per record (1 for a zero gradient); C is one number or
    one per record. The margin keeps float32 rounding of the norm and of g_i c_i below C."""
    clip = torch.as_tensor(clip_norm, dtype=norms.dtype, device=norms.device) * (1.0 - CLIP_MARGIN)
    return torch.where(norms > clip, clip / norms.clamp_min(1e-30), torch.ones_like(norms))


def step_event(
    *, sampling_rate: float, noise_multiplier: float, clipping: str, hist_noise_multiplier: float
) -> DpEvent:
    """One DP-SGD step's privacy event: sampled Gaussian (fixed clipping) or, with DPNorm, the
    histogram and the gradient released from the same Poisson batch (docs/paper.md, note 6)."""
    if clipping == "fixed":
        return SampledGaussianEvent(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    return SampledJointGaussianEvent(
        sampling_rate=sampling_rate, noise_multipliers=(hist_noise_multiplier, noise_multiplier)
    )


def positive(name: str, value: float) -> float:
    """``value`` as a float, or ConfigError unless it is a finite number > 0."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"DP-SGD: {name} must be a finite number > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Mechanism:
    """The privacy settings of a step, shared by every part (validated on construction)."""

    sampling_rate: float
    noise_multiplier: float
    clipping: Literal["adaptive", "fixed"] = "adaptive"
    clip_norm: float = 1.0
    hist_noise_multiplier: float = 4.0
    hist_max: float = 10.0
    hist_bins: int = 100
    decoder_clip_share: float | None = None

    def __post_init__(self) -> None:
        q, bins, clipping = self.sampling_rate, self.hist_bins, self.clipping
        if not (isinstance(q, (int, float)) and 0 < q <= 1):
            raise ConfigError(f"DP-SGD: sampling_rate must be in (0, 1], got {q!r}")
        if clipping not in ("adaptive", "fixed"):
            raise ConfigError(f"DP-SGD: clipping must be 'adaptive' or 'fixed', got {clipping!r}")
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise ConfigError(f"DP-SGD: hist_bins must be an integer >= 1, got {bins!r}")
        for name in ("noise_multiplier", "clip_norm", "hist_noise_multiplier", "hist_max"):
            positive(name, getattr(self, name))
        share = self.decoder_clip_share
        if share is not None and not (isinstance(share, (int, float)) and 0 < share < 1 and clipping == "fixed"):
            raise ConfigError(f"DP-SGD: decoder_clip_share must be in (0, 1), with fixed clipping; got {share!r}")

    @property
    def clip_groups(self) -> tuple[str, ...]:
        """The named submodules clipped on their own (the rest is one more group): ("decoder",) or ()."""
        return () if self.decoder_clip_share is None else ("decoder",)

    def group_clip_factors(self, group_norms: Tensor, clip_norm: Tensor) -> Tensor:
        """Per-group clipping [G, B]: the rest's gradient clipped to C sqrt(1 - s), the decoder's to C sqrt(s)
        (``clip_norm`` C per record [B]), so each record's whole gradient still has norm <= C: the same
        sensitivity, noise and event as one clip over the whole gradient."""
        s = float(self.decoder_clip_share)  # type: ignore[arg-type]
        return torch.stack([clip_factors(norms, clip_norm * math.sqrt(share))
                            for norms, share in zip(group_norms, (1.0 - s, s))])

    @classmethod
    def from_config(cls, cfg: TrainingConfig) -> Mechanism:
        """The mechanism of a run's training section (fields of the same names)."""
        return cls(**{f.name: getattr(cfg, f.name) for f in fields(cls)})

    def event(self) -> DpEvent:
        """The privacy event of one step."""
        return step_event(
            sampling_rate=self.sampling_rate,
            noise_multiplier=self.noise_multiplier,
            clipping=self.clipping,
            hist_noise_multiplier=self.hist_noise_multiplier,
        )

    def thresholds(self, norms: Tensor, local: Tensor, hist_noise: Tensor) -> Tensor:
        """C_s per part [g] (float64, CPU): clip_norm, or the noisy mode of each part's histogram
        (Alg. 3; ``local`` [B] gives each norm's row of ``hist_noise`` [g, bins])."""
        if self.clipping == "fixed":
            return torch.full((hist_noise.shape[0],), self.clip_norm, dtype=torch.float64)
        counts = norm_histograms(
            norms, local, hist_noise.shape[0], hist_max=self.hist_max, bins=self.hist_bins
        )  # several ranks: every rank's counts, and rank 0's noise
        noise = collective.tensor_from_rank0_(hist_noise)
        return mode_thresholds(collective.sum_tensor_over_ranks_(counts) + noise, hist_max=self.hist_max)
