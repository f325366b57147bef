"""DP Lloyd on raw records (SuLQ baseline): clipping bound, noise scale, sparse input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.lloyd import DPLloyd
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent
from dpgm.privacy.ledger import LedgerEntry
from tests.clustering._fixtures import block_dataset
from tests.clustering.test_noisy_lloyd import RecordingRng


def test_default_bound_is_sqrt_m_and_sum_noise_scales_with_it():
    data = block_dataset(n=60)
    acc = Accountant(delta=1e-5)
    rng = RecordingRng(acc)
    model = DPLloyd(
        k=3, iterations=1, noise_multiplier=2.0, init="public", public=block_dataset(n=30, seed=3)
    )
    rng.integers = np.random.default_rng(0).integers  # k-means++ seeding draws from the generator
    rng.choice = np.random.default_rng(0).choice
    part = model.fit(data, acc, rng)
    bound = math.sqrt(data.n_items)
    assert part.info["norm_bound"] == pytest.approx(bound)
    # counts, sums, then the final parts' sizes
    assert [(c[1], c[2]) for c in rng.calls] == [(2.0, (3,)), (2.0 * bound, (3, data.n_items)), (2.0, (3,))]
    assert acc.ledger.compacted().entries == [LedgerEntry(STAGE, GaussianEvent(noise_multiplier=2.0), 3)]


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
