"""DPNorm (DPGM paper, Alg. 3): a private clipping threshold from a noisy histogram of norms.

The norms of one Poisson batch are counted in w equal bins over (0, C_max]; bin j covers
(j C_max / w, (j + 1) C_max / w]. A norm above C_max is counted in the last bin and a norm of
exactly 0 in the first, so every record adds exactly 1 to exactly one count: the histogram
has L2 sensitivity 1 under add/remove (docs/privacy.md; the paper's sqrt(2) is replace-one).
Each count gets N(0, sigma_C^2) noise; the threshold is the upper edge of the noisy arg-max bin.
The caller accounts the release (with the gradient of the same batch, docs/paper.md, note 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from dpgm.privacy.mechanisms import gaussian_noise


@dataclass(frozen=True)
class DPNormResult:
    """The released threshold C_s and the noisy histogram it came from (both private to release)."""

    threshold: float
    noisy_counts: Tensor


def norm_histograms(norms: Tensor, part: Tensor, k: int, *, hist_max: float, bins: int) -> Tensor:
    """Counts [k, bins]: row j is the histogram of the norms of part j (``part`` [B] in 0..k-1)."""
    width = hist_max / bins  # in numpy: the same float64 arithmetic as torch's, without a dispatch per operation
    index = np.ceil(norms.detach().cpu().double().numpy() / width).astype(np.int64) - 1
    index = np.clip(index, 0, bins - 1) + part.detach().cpu().long().numpy() * bins
    return torch.from_numpy(np.bincount(index, minlength=k * bins).astype(np.float64).reshape(k, bins))


def norm_histogram(norms: Tensor, *, hist_max: float, bins: int) -> Tensor:
    """Counts [bins] of ``norms`` in (j C_max/w, (j+1) C_max/w]; overflow -> last bin, 0 -> first."""
    part = torch.zeros(norms.shape[0], dtype=torch.long)
    return norm_histograms(norms, part, 1, hist_max=hist_max, bins=bins)[0]


def mode_thresholds(noisy_counts: Tensor, *, hist_max: float) -> Tensor:
    """Upper edge of the arg-max bin along the last dimension (float64): Alg. 3's C_s per histogram."""
    bins = noisy_counts.shape[-1]
    return (torch.argmax(noisy_counts, dim=-1) + 1).double() * hist_max / bins


def histogram_noise(bins: int, noise_multiplier: float, generator: torch.Generator | None) -> Tensor:
    """N(0, sigma_C^2) noise for the ``bins`` counts of one histogram (float64)."""
    return gaussian_noise((bins,), noise_multiplier, generator)


def dpnorm(
    norms: Tensor,
    *,
    hist_max: float,
    bins: int,
    noise_multiplier: float,
    generator: torch.Generator | None,
) -> DPNormResult:
    """Alg. 3: noisy mode of the norm histogram; returns C_s = its bin's upper edge."""
    counts = norm_histogram(norms, hist_max=hist_max, bins=bins)
    noisy = counts + histogram_noise(bins, noise_multiplier, generator)
    return DPNormResult(threshold=float(mode_thresholds(noisy, hist_max=hist_max)), noisy_counts=noisy)
