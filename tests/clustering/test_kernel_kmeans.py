"""DP kernel k-means (paper Alg. 2): ledger, calibration, accuracy, determinism, assign."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.kernel_kmeans import DPKernelKMeans
from dpgm.errors import ConfigError, PrivacyBudgetError
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.mechanisms import grid_sensitivity, snap_grid
from tests.clustering._fixtures import block_dataset


def fit(model: DPKernelKMeans, seed: int = 0, data=None, accountant=None):
    data = data if data is not None else block_dataset()
    accountant = accountant or Accountant(delta=1e-5)
    return model.fit(data, accountant, np.random.default_rng(seed)), accountant, data


@pytest.mark.parametrize("init", ["public", "random"])
@pytest.mark.parametrize("feature_map", ["paired", "cosine"])
def test_recovers_clear_clusters_at_low_noise(init, feature_map):
    model = DPKernelKMeans(
        k=3,
        iterations=10,
        noise_multiplier=1.0,
        init=init,
        public=block_dataset(n=90, seed=1),
        features=64,
        feature_map=feature_map,
        gamma=0.05,
    )
    part, _, data = fit(model)
    assert clustering_accuracy(data.labels, part.assignments) > 0.95
    assert part.centres.shape == (3, 128 if feature_map == "paired" else 64)
    assert np.isfinite(part.centres).all() and (part.noisy_sizes >= 0).all()
    assert part.noisy_sizes.sum() == pytest.approx(600, abs=15)
    np.testing.assert_array_equal(part.noisy_sizes, np.maximum(part.info["released_counts"], 0.0))
    np.testing.assert_array_equal(model.assign(data.records), part.assignments)


def test_ledger_holds_two_gaussian_releases_per_iteration_and_the_final_sizes():
    model = DPKernelKMeans(k=3, iterations=7, noise_multiplier=12.5, features=16, gamma=0.05)
    part, acc, _ = fit(model)
    # per iteration the counts (3 parts, sensitivity 1) and the sums (3 parts x 32 features,
    # sensitivity the feature bound 1), snapped to their grids; then the final sizes (integers,
    # grid 1). The two events of an iteration alternate, so none merge.
    entries = acc.ledger.compacted().entries
    expected = [(3, snap_grid(1.0, 3)), (96, snap_grid(1.0, 96))] * 7 + [(3, 1.0)]
    assert [(e.event.dim, e.event.grid) for e in entries] == expected
    for entry in entries:
        event = entry.event
        assert (entry.stage, entry.count) == (STAGE, 1)
        assert isinstance(event, DiscreteGaussianEvent) and event.noise_multiplier == 12.5
        units = 1.0 if event.grid == 1.0 else grid_sensitivity(1.0, event.dim, event.grid)
        assert event.sensitivity == pytest.approx(units, rel=1e-12)
    # 15 releases cost what 15 continuous Gaussians at multiplier 12.5 would
    continuous = Accountant(delta=1e-5).epsilon_if(GaussianEvent(noise_multiplier=12.5), count=15)
    assert acc.spent().epsilon == pytest.approx(continuous, rel=1e-12)
    assert part.info["stage_epsilon"] == pytest.approx(acc.spent().epsilon)
    assert part.info["noise_multiplier"] == 12.5 and part.info["feature_dim"] == 32
    assert part.info["noise_floor"] == pytest.approx(12.5 * 32**0.5)  # the count a part keeps its centre at or below


@pytest.mark.parametrize("target", [0.3, 1.0, 5.0])
def test_target_epsilon_calibration_spends_at_most_the_target(target):
    model = DPKernelKMeans(k=3, iterations=20, target_epsilon=target, features=16, gamma=0.05)
    part, acc, _ = fit(model)
    assert acc.spent().epsilon <= target
    assert acc.spent().epsilon >= 0.999 * target  # and not needlessly less
    assert acc.ledger.count(STAGE) == 2 * 20 + 1
    assert part.info["target_epsilon"] == target


def test_budget_refusal_leaves_ledger_empty():
    model = DPKernelKMeans(k=3, iterations=20, noise_multiplier=2.0, features=16, gamma=0.05)
    acc = Accountant(delta=1e-5, budget_epsilon=1.0)
    with pytest.raises(PrivacyBudgetError):
        fit(model, accountant=acc)
    assert acc.ledger.entries == []


def test_same_seed_same_release_and_frequencies_do_not_depend_on_data():
    kw = {"k": 3, "iterations": 3, "noise_multiplier": 5.0, "features": 8, "gamma": 0.05}
    a, b = DPKernelKMeans(**kw), DPKernelKMeans(**kw)
    part_a, _, _ = fit(a, seed=4)
    part_b, _, _ = fit(b, seed=4)
    np.testing.assert_array_equal(part_a.centres, part_b.centres)
    c = DPKernelKMeans(**kw)
    fit(c, seed=4, data=block_dataset(seed=9))
    np.testing.assert_array_equal(a.feature_map_.frequencies, c.feature_map_.frequencies)


def test_public_init_needs_a_public_sample():
    with pytest.raises(ConfigError, match="public"):
        DPKernelKMeans(init="public", public=None)
    with pytest.raises(ConfigError, match="feature_map"):
        DPKernelKMeans(feature_map="sine")
