"""By-label and single-part partitioners: one noisy count histogram, labels checked."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.by_label import ByLabel, SinglePart
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DataError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent
from dpgm.privacy.ledger import LedgerEntry
from dpgm.privacy.mechanisms import project_to_total
from tests.clustering._fixtures import block_dataset


def test_parts_are_labels_and_sizes_are_one_noisy_histogram():
    data = block_dataset(n=600, k=3)
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=3, noise_multiplier=2.0).fit(data, acc, np.random.default_rng(0))
    np.testing.assert_array_equal(part.assignments, data.labels)
    expected_noise = np.random.default_rng(0).normal(0.0, 2.0, size=3)
    np.testing.assert_allclose(part.info["released_counts"], 200 + expected_noise)
    assert acc.ledger.entries == [LedgerEntry(STAGE, GaussianEvent(noise_multiplier=2.0), 1)]
    assert part.centres is None and part.k == 3
    np.testing.assert_array_equal(ByLabel(k=3).assign(None, labels=data.labels), data.labels)


def test_labels_missing_or_out_of_range_are_data_errors():
    data = block_dataset(n=30, k=3)
    with pytest.raises(DataError, match="0..1"):
        ByLabel(k=2).fit(data, Accountant(delta=1e-5), np.random.default_rng(0))
    unlabelled = BinaryDataset(records=data.records, item_names=data.item_names)
    acc = Accountant(delta=1e-5)
    with pytest.raises(DataError, match="needs labels"):
        ByLabel(k=3).fit(unlabelled, acc, np.random.default_rng(0))
    assert acc.ledger.entries == []


def test_empty_label_gets_a_projected_noisy_size():
    """Sizes are the label counts (empty labels: 0) plus N(0, sigma^2) from the run's generator,
    projected onto the non-negative sizes with the same total; one Gaussian release on the ledger."""
    data = block_dataset(n=30, k=3)
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=5, noise_multiplier=3.0).fit(data, acc, np.random.default_rng(1))
    counts = np.bincount(data.labels, minlength=5)
    assert counts[3] == counts[4] == 0
    noisy = counts + np.random.default_rng(1).normal(0.0, 3.0, size=5)
    np.testing.assert_allclose(part.noisy_sizes, project_to_total(noisy, noisy.sum()))
    assert part.noisy_sizes.min() >= 0 and part.noisy_sizes.sum() == pytest.approx(noisy.sum())
    np.testing.assert_array_equal(part.assignments, data.labels)
    assert acc.ledger.entries == [LedgerEntry("partition", GaussianEvent(noise_multiplier=3.0), 1)]


def test_single_part_releases_a_noisy_count_only():
    data = block_dataset(n=90)
    acc = Accountant(delta=1e-5)
    part = SinglePart(noise_multiplier=4.0).fit(data, acc, np.random.default_rng(0))
    assert part.assignments.tolist() == [0] * 90
    assert part.noisy_sizes.shape == (1,)
    assert part.noisy_sizes[0] == pytest.approx(90 + np.random.default_rng(0).normal(0.0, 4.0))
    assert acc.ledger.count(STAGE) == 1


def test_target_epsilon_calibrates_the_histogram():
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=3, target_epsilon=0.5).fit(block_dataset(), acc, np.random.default_rng(0))
    assert 0.499 <= acc.spent().epsilon <= 0.5
    assert part.info["stage_epsilon"] == pytest.approx(acc.spent().epsilon)
