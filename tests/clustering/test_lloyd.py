"""DP Lloyd on raw records (SuLQ baseline): clipping bound, noise scale, sparse input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.lloyd import DPLloyd
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.mechanisms import SNAP_SHARE
from tests.clustering._fixtures import block_dataset
from tests.clustering.test_noisy_lloyd import RecordingSampler, assert_snapped_sensitivity


def test_default_bound_is_sqrt_m_and_sum_noise_scales_with_it(monkeypatch):
    data = block_dataset(n=60)
    acc = Accountant(delta=1e-5)
    sampler = RecordingSampler(acc, monkeypatch)
    model = DPLloyd(
        k=3, iterations=1, noise_multiplier=2.0, init="public", public=block_dataset(n=30, seed=3)
    )
    part = model.fit(data, acc, np.random.default_rng(0))
    bound = math.sqrt(data.n_items)
    assert part.info["norm_bound"] == pytest.approx(bound)
    # counts, sums, then the final parts' sizes (integers: no grid, no snapping)
    m = data.n_items
    assert [c[1] for c in sampler.calls] == [(3,), (3, m), (3,)]
    for std, expected in zip(sampler.stds(), [2.0, 2.0 * bound, 2.0], strict=True):
        assert expected <= std <= expected * (1 + SNAP_SHARE) * (1 + 1e-12)
    counts, sums, sizes = [e.event for e in acc.ledger.compacted().entries]
    assert all(e.stage == STAGE and e.count == 1 for e in acc.ledger.entries)
    for event, dim in [(counts, 3), (sums, 3 * m), (sizes, 3)]:
        assert isinstance(event, DiscreteGaussianEvent)
        assert event.noise_multiplier == 2.0 and event.dim == dim
    assert_snapped_sensitivity(counts, 1.0)
    assert_snapped_sensitivity(sums, bound)
    assert sizes.grid == 1.0 and sizes.sensitivity == pytest.approx(1.0, rel=1e-12)
    # three releases cost what three continuous Gaussians at multiplier 2 would
    continuous = Accountant(delta=1e-5).epsilon_if(GaussianEvent(noise_multiplier=2.0), count=3)
    assert acc.spent().epsilon == pytest.approx(continuous, rel=1e-12)


def test_rows_are_clipped_to_the_public_bound():
    data = block_dataset(n=60)
    model = DPLloyd(k=3, clip_norm=1.5)
    model._setup(data.n_items, np.random.default_rng(0))
    rows = model._rows(data.records)
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    assert norms.max() <= 1.5 + 1e-6
    assert norms.min() > 0


def test_recovers_clusters_and_sparse_input_gives_the_same_release():
    kw = {"k": 3, "iterations": 8, "noise_multiplier": 1.0, "init": "random"}
    dense = DPLloyd(**kw).fit(block_dataset(), Accountant(delta=1e-5), np.random.default_rng(0))
    sparse = DPLloyd(**kw).fit(
        block_dataset(sparse=True), Accountant(delta=1e-5), np.random.default_rng(0)
    )
    assert clustering_accuracy(block_dataset().labels, dense.assignments) > 0.95
    np.testing.assert_allclose(dense.centres, sparse.centres, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(dense.assignments, sparse.assignments)
