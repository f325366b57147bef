"""Global item totals: one charged release, and part means made consistent with it (post-processing)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.artifact import load_release
from dpgm.clustering.base import size_shares
from dpgm.pipeline.run import train
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import sample_dataset
from dpgm.stages.item_totals import STAGE, consistent_sums
from dpgm.stages.part_means import FLOOR, noisy_part_means
from tests.training.test_run import tiny_config


def _blue(part_sums: np.ndarray, totals: np.ndarray, part_sigma: float, total_sigma: float) -> np.ndarray:
    """The weighted least-squares estimate solved directly, item by item (an independent check)."""
    k, m = part_sums.shape
    design = np.vstack([np.eye(k), np.ones((1, k))])
    weights = np.sqrt(np.r_[np.full(k, 1 / part_sigma**2), 1 / total_sigma**2])
    out = np.empty_like(part_sums)
    for i in range(m):
        y = np.r_[part_sums[:, i], totals[i]]
        out[:, i] = np.linalg.lstsq(design * weights[:, None], y * weights, rcond=None)[0]
    return out


@pytest.mark.parametrize("part_sigma, total_sigma", [(1.0, 1.0), (3.0, 0.5), (0.5, 4.0)])
def test_consistent_sums_are_the_weighted_least_squares_estimate(part_sigma, total_sigma):
    rng = np.random.default_rng(0)
    part_sums, totals = rng.normal(50, 10, (4, 6)), rng.normal(200, 10, 6)
    got = consistent_sums(part_sums, totals, part_sigma=part_sigma, total_sigma=total_sigma)
    assert np.allclose(got, _blue(part_sums, totals, part_sigma, total_sigma))
    # their sum is the inverse-variance combination of the two estimates of the total
    w_parts, w_total = 1 / (4 * part_sigma**2), 1 / total_sigma**2
    combined = (w_parts * part_sums.sum(0) + w_total * totals) / (w_parts + w_total)
    assert np.allclose(got.sum(0), combined)


def test_consistency_lowers_the_error_of_the_item_totals():
    """Over many draws: the consistent part sums' total is closer to the truth than the k parts' sum."""
    rng = np.random.default_rng(1)
    truth = rng.uniform(10, 100, (10, 30))
    k_sigma, t_sigma = 5.0, 5.0
    raw, fixed = [], []
    for _ in range(200):
        parts = truth + rng.normal(0, k_sigma, truth.shape)
        totals = truth.sum(0) + rng.normal(0, t_sigma, truth.shape[1])
        raw.append(parts.sum(0) - truth.sum(0))
        fixed.append(consistent_sums(parts, totals, part_sigma=k_sigma, total_sigma=t_sigma).sum(0) - truth.sum(0))
    ratio = np.var(fixed) / np.var(raw)
    assert ratio == pytest.approx(1 / 11, rel=0.15)  # 1 / (1 + k part_sigma^2 / total_sigma^2)


def test_part_means_follow_the_totals_and_add_no_mass():
    rng = np.random.default_rng(2)
    records = (rng.random((600, 5)) < 0.3).astype(np.uint8)
    assignments = rng.integers(0, 3, 600)
    sizes = np.bincount(assignments).astype(float)
    exact = np.asarray(records.sum(0), dtype=float)
    acc = Accountant(delta=1e-5)
    means = noisy_part_means(records, assignments, sizes, clip=None, noise_multiplier=200.0, accountant=acc,
                             rng=rng, totals=exact, totals_noise_multiplier=1e-6)
    # a near-exact total: the released mixture's item totals are the totals, whatever the part noise
    floor = FLOOR * sizes.sum()  # the means' floor is the only mass added
    assert np.abs((means * sizes[:, None]).sum(0) - exact).max() <= floor
    assert [e.stage for e in acc.ledger.entries] == ["part_means"]  # the consistency charged nothing


def test_a_run_charges_the_totals_once_and_releases_what_they_measured(tmp_path):
    over = {"model.kind": "independent", "model.totals_noise_multiplier": 2.0, "partition.method": "label",
            "partition.k": 10, "model.mean_noise_multiplier": 50.0}
    run_dir, report = train(tiny_config(tmp_path, **over), progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    [entry] = [e for e in ledger.entries if e.stage == STAGE]
    assert isinstance(entry.event, DiscreteGaussianEvent) and entry.event.noise_multiplier == 2.0
    assert sorted({e.stage for e in ledger.entries}) == ["item_totals", "part_means", "partition"]
    assert "item_totals" in report["stage_epsilons"] and "item_totals" in report["stage_lines"]
    # the release's item frequencies are the consistent noisy means', within sampling error
    mixture = load_release(run_dir)
    weights = size_shares(mixture.noisy_sizes)
    expected = sum(w * torch.sigmoid(m.output_bias()).detach().numpy() for w, m in zip(weights, mixture.models))
    n = 40_000
    drawn = np.asarray(sample_dataset(run_dir, n, seed=0).records.mean(axis=0)).ravel()
    assert np.abs(drawn - expected).max() < 5 * np.sqrt(0.25 / n)
