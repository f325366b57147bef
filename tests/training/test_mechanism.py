"""The mechanism of one DP-SGD step: Poisson sampling, clip factors, thresholds, settings."""

from __future__ import annotations

import pytest
import torch

from dpgm.config import TrainingConfig
from dpgm.errors import ConfigError
from dpgm.privacy.clipping import CLIP_MARGIN
from dpgm.privacy.events import SampledJointGaussianEvent
from dpgm.training.mechanism import Mechanism, clip_factors, poisson_sample


def test_poisson_sample_rate_and_indices() -> None:
    gen = torch.Generator().manual_seed(0)
    sizes = [len(poisson_sample(1000, 0.05, gen)) for _ in range(400)]
    assert abs(sum(sizes) / 400 - 50) < 1.5
    idx = poisson_sample(1000, 0.5, gen)
    assert idx.dtype == torch.long and bool((idx[1:] > idx[:-1]).all()) and 0 <= int(idx.min()) and int(idx.max()) < 1000
    with pytest.raises(ConfigError):
        poisson_sample(10, 0.0, gen)


def test_clip_factors_scale_only_norms_above_the_threshold() -> None:
    norms = torch.tensor([0.0, 0.5, 2.0, 8.0], dtype=torch.float64)
    kept = 1.0 - CLIP_MARGIN  # a norm at the threshold is scaled by the rounding margin too
    expected = torch.tensor([1.0, 1.0, kept, 0.25 * kept], dtype=torch.float64)
    torch.testing.assert_close(clip_factors(norms, 2.0), expected)
    per_row = torch.tensor([1.0, 0.25, 1.0, 4.0], dtype=torch.float64)
    expected = torch.tensor([1.0, 0.5 * kept, 0.5 * kept, 0.5 * kept], dtype=torch.float64)
    torch.testing.assert_close(clip_factors(norms, per_row), expected)


def test_thresholds_per_part_are_the_noisy_modes_of_their_own_histograms() -> None:
    mech = Mechanism(sampling_rate=0.1, noise_multiplier=1.0, hist_max=4.0, hist_bins=4)
    norms = torch.tensor([0.5, 0.6, 3.5, 3.2, 3.9], dtype=torch.float64)
    local = torch.tensor([0, 0, 1, 1, 1])
    assert mech.thresholds(norms, local, torch.zeros(2, 4, dtype=torch.float64)).tolist() == [1.0, 4.0]
    noise = torch.zeros(2, 4, dtype=torch.float64)
    noise[0, 2] = 5.0  # noise, not data, decides part 0's mode
    assert mech.thresholds(norms, local, noise).tolist() == [3.0, 4.0]
    fixed = Mechanism(sampling_rate=0.1, noise_multiplier=1.0, clipping="fixed", clip_norm=0.7)
    assert fixed.thresholds(norms, local, torch.zeros(2, 1, dtype=torch.float64)).tolist() == [0.7, 0.7]


def test_mechanism_from_config() -> None:
    cfg = TrainingConfig(sampling_rate=0.02, noise_multiplier=1.5, clipping="adaptive", hist_noise_multiplier=3.0)
    mech = Mechanism.from_config(cfg)
    assert (mech.sampling_rate, mech.noise_multiplier, mech.hist_bins) == (0.02, 1.5, cfg.hist_bins)
    assert mech.event() == SampledJointGaussianEvent(sampling_rate=0.02, noise_multipliers=(3.0, 1.5))
    with pytest.raises(ConfigError):
        Mechanism(sampling_rate=0.0, noise_multiplier=1.0)
