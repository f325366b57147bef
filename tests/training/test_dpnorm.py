"""DPNorm (Alg. 3): histogram bins, the noisy mode, and the noise actually being there."""

from __future__ import annotations

import torch

from dpgm.training.dpnorm import dpnorm, mode_thresholds, norm_histogram, norm_histograms


def test_histogram_bins_are_upper_closed_with_overflow_in_last_bin() -> None:
    norms = torch.tensor([0.0, 0.05, 0.1, 0.1000001, 0.95, 1.0, 1.5, 1e9], dtype=torch.float64)
    counts = norm_histogram(norms, hist_max=1.0, bins=10)
    expected = torch.zeros(10, dtype=torch.float64)
    expected[0] = 3  # 0, 0.05 and the edge 0.1 are in (0, 0.1] (0 joins the first bin)
    expected[1] = 1  # 0.1000001
    expected[9] = 4  # 0.95, the edge 1.0, and the overflow 1.5 and 1e9
    torch.testing.assert_close(counts, expected)


def test_each_record_adds_exactly_one_count() -> None:
    norms = torch.rand(1000, generator=torch.Generator().manual_seed(0)) * 30
    assert norm_histogram(norms, hist_max=10.0, bins=7).sum() == 1000


def test_picks_the_mode_when_counts_dwarf_the_noise() -> None:
    gen = torch.Generator().manual_seed(1)
    norms = torch.cat([torch.full((5000,), 3.71), torch.rand(2000, generator=gen) * 10])
    for _ in range(20):
        result = dpnorm(norms, hist_max=10.0, bins=100, noise_multiplier=4.0, generator=gen)
        assert abs(result.threshold - 3.8) < 1e-12  # 3.71 lies in (3.7, 3.8]


def test_counts_are_noised_with_the_right_scale() -> None:
    gen = torch.Generator().manual_seed(2)
    norms = torch.full((50,), 0.35)
    counts = norm_histogram(norms, hist_max=1.0, bins=10)
    diffs = torch.stack([dpnorm(norms, hist_max=1.0, bins=10, noise_multiplier=3.0, generator=gen).noisy_counts - counts for _ in range(400)])
    assert abs(float(diffs.std()) - 3.0) < 0.15
    assert abs(float(diffs.mean())) < 0.15


def test_empty_batch_gives_a_random_bin() -> None:
    gen = torch.Generator().manual_seed(3)
    picks = {dpnorm(torch.zeros(0), hist_max=1.0, bins=10, noise_multiplier=1.0, generator=gen).threshold for _ in range(200)}
    assert len(picks) >= 8  # the arg-max of pure noise is spread over the bins


def test_per_part_histograms_and_thresholds_match_one_histogram_per_part() -> None:
    gen = torch.Generator().manual_seed(4)
    norms = torch.rand(300, generator=gen) * 12
    part = torch.randint(0, 4, (300,), generator=gen)
    part[part == 2] = 3  # part 2 is empty: a row of zeros
    counts = norm_histograms(norms, part, 4, hist_max=10.0, bins=20)
    for j in range(4):
        torch.testing.assert_close(counts[j], norm_histogram(norms[part == j], hist_max=10.0, bins=20))
    assert counts[2].sum() == 0
    noisy = torch.zeros(3, 20, dtype=torch.float64)
    noisy[0, 0], noisy[1, 7], noisy[2, 19] = 1.0, 1.0, 1.0
    assert mode_thresholds(noisy, hist_max=10.0).tolist() == [0.5, 4.0, 10.0]
