"""By-label and single-part partitioners: one noisy count histogram, labels checked."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.by_label import ByColumn, ByLabel, SinglePart
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DataError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_gaussian
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.mechanisms import project_to_total
from tests.clustering._fixtures import block_dataset


def histogram_event(acc: Accountant, k: int, sigma: float) -> DiscreteGaussianEvent:
    """The ledger's one entry: an exact discrete Gaussian on the k integer counts (grid 1,
    sensitivity 1) at multiplier sigma, which costs what the continuous Gaussian would."""
    (entry,) = acc.ledger.entries
    event = entry.event
    assert (entry.stage, entry.count) == (STAGE, 1) and isinstance(event, DiscreteGaussianEvent)
    assert event.noise_multiplier == sigma and (event.dim, event.grid) == (k, 1.0)
    assert event.sensitivity == pytest.approx(1.0, rel=1e-12) and event.sensitivity >= 1.0
    continuous = Accountant(delta=acc.delta).epsilon_if(GaussianEvent(noise_multiplier=sigma))
    assert acc.spent().epsilon == pytest.approx(continuous, rel=1e-12)
    return event


def replayed_noise(event: DiscreteGaussianEvent, size: int, seed: int) -> np.ndarray:
    """The run's noise drawn again: N_Z(0, s^2) with the mechanism's scale s = multiplier x
    sensitivity (rounded up by a few ulps, as the mechanism does) from generator ``seed``."""
    scale = event.noise_multiplier * event.sensitivity * (1 + 2**-50)
    return discrete_gaussian(size, scale, np.random.default_rng(seed)) * event.grid


def test_parts_are_labels_and_sizes_are_one_noisy_histogram():
    data = block_dataset(n=600, k=3)
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=3, noise_multiplier=2.0).fit(data, acc, np.random.default_rng(0))
    np.testing.assert_array_equal(part.assignments, data.labels)
    event = histogram_event(acc, 3, 2.0)
    expected = 200 + replayed_noise(event, 3, seed=0)
    np.testing.assert_array_equal(part.info["released_counts"], expected)
    assert part.info["stage_epsilon"] == pytest.approx(acc.spent().epsilon)
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
    """Sizes are the label counts (empty labels: 0) plus N_Z(0, sigma^2) from the run's generator,
    projected onto the non-negative sizes with the same total; one Gaussian release on the ledger.
    The seed gives both empty labels a negative noisy count, so the projection is exercised."""
    data = block_dataset(n=30, k=3)
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=5, noise_multiplier=3.0).fit(data, acc, np.random.default_rng(0))
    counts = np.bincount(data.labels, minlength=5)
    assert counts[3] == counts[4] == 0
    noisy = counts + replayed_noise(histogram_event(acc, 5, 3.0), 5, seed=0)
    assert noisy[3] < 0 and noisy[4] < 0  # the case this test is about
    np.testing.assert_allclose(part.noisy_sizes, project_to_total(noisy, noisy.sum()), atol=1e-9)
    np.testing.assert_allclose(part.noisy_sizes[3:], 0.0, atol=1e-9)
    assert part.noisy_sizes.min() >= 0 and part.noisy_sizes.sum() == pytest.approx(noisy.sum())
    np.testing.assert_array_equal(part.assignments, data.labels)


def test_single_part_releases_a_noisy_count_only():
    data = block_dataset(n=90)
    acc = Accountant(delta=1e-5)
    part = SinglePart(noise_multiplier=4.0).fit(data, acc, np.random.default_rng(0))
    assert part.assignments.tolist() == [0] * 90
    assert part.noisy_sizes.shape == (1,)
    event = histogram_event(acc, 1, 4.0)
    released = 90 + replayed_noise(event, 1, seed=0)[0]
    assert part.info["released_counts"] == [released] and released != 90
    assert part.noisy_sizes[0] == pytest.approx(released)  # projected onto [0, inf): unchanged


def test_target_epsilon_calibrates_the_histogram():
    acc = Accountant(delta=1e-5)
    part = ByLabel(k=3, target_epsilon=0.5).fit(block_dataset(), acc, np.random.default_rng(0))
    assert 0.499 <= acc.spent().epsilon <= 0.5
    assert part.info["stage_epsilon"] == pytest.approx(acc.spent().epsilon)


def column_records(values: np.ndarray, k: int, first: int, n_items: int) -> np.ndarray:
    """Records holding item ``first + value`` of a k-valued column and a fixed other item (``n_items`` in all)."""
    x = np.zeros((values.size, n_items), dtype=np.uint8)
    x[np.arange(values.size), first + values] = 1
    x[:, 0] = 1
    return x


@pytest.mark.parametrize("sparse", [False, True])
def test_column_parts_are_the_value_each_record_holds_and_sizes_one_noisy_histogram(sparse):
    import scipy.sparse as sp

    values = np.random.default_rng(1).integers(0, 3, size=300)
    x = column_records(values, 3, first=2, n_items=6)
    data = BinaryDataset(records=sp.csr_matrix(x) if sparse else x, item_names=[str(j) for j in range(6)])
    acc = Accountant(delta=1e-5)
    part = ByColumn(k=3, first=2, noise_multiplier=2.0).fit(data, acc, np.random.default_rng(0))
    np.testing.assert_array_equal(part.assignments, values)
    event = histogram_event(acc, 3, 2.0)
    expected = np.bincount(values, minlength=3) + replayed_noise(event, 3, seed=0)
    np.testing.assert_array_equal(part.info["released_counts"], expected)
    assert part.info["method"] == "column" and part.centres is None
    np.testing.assert_array_equal(part.rule(data.records), values)  # streams: the rule of a chunk's records
    items, frequencies = part.fixed  # part j holds value j and no other, by definition
    np.testing.assert_array_equal(items, [2, 3, 4])
    np.testing.assert_array_equal(frequencies, np.eye(3))
    assert ByLabel(k=3).fit(block_dataset(n=30, k=3), acc, np.random.default_rng(0)).fixed is None


def test_column_partitioner_is_registered_with_its_first_item_and_refuses_a_column_beyond_the_items():
    from dpgm.clustering import make_partitioner
    from dpgm.config import PartitionConfig
    from dpgm.errors import ConfigError

    partitioner = make_partitioner(PartitionConfig(method="column", k=2, options={"first": 4}))
    assert isinstance(partitioner, ByColumn) and (partitioner.k, partitioner.first) == (2, 4)
    values = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(partitioner.assign(column_records(values, 2, 4, 6)), values)
    acc = Accountant(delta=1e-5)
    with pytest.raises(ConfigError, match="not all in the item universe of 5"):
        partitioner.fit(BinaryDataset(records=np.ones((4, 5), dtype=np.uint8), item_names=list("abcde")), acc, np.random.default_rng(0))
    assert acc.ledger.entries == []
    with pytest.raises(ConfigError, match="first: must be >= 0"):
        make_partitioner(PartitionConfig(method="column", k=2, options={"first": -1}))
    with pytest.raises(ConfigError, match="needs first"):
        make_partitioner(PartitionConfig(method="column", k=2))


@pytest.mark.parametrize("in_memory", [True, False])
def test_a_column_partition_survives_a_checkpoint_with_its_rule_and_fixed_items(in_memory):
    """A resumed run keeps what the parts' definition fixes and, for records in chunks, the column's rule (not the
    single part's)."""
    import dataclasses

    from dpgm.config import Config
    from dpgm.stages.partition import PartitionStage

    values = np.random.default_rng(2).integers(0, 3, size=50)
    x = column_records(values, 3, first=1, n_items=5)
    data = BinaryDataset(records=x, item_names=[str(j) for j in range(5)])
    part = ByColumn(k=3, first=1).fit(data, Accountant(delta=1e-5), np.random.default_rng(0))
    saved = PartitionStage(Config())
    saved.output = part if in_memory else dataclasses.replace(part, assignments=None)
    loaded = PartitionStage(Config())
    loaded.load_state_dict(saved.state_dict())
    np.testing.assert_array_equal(loaded.output.fixed[0], [1, 2, 3])
    np.testing.assert_array_equal(loaded.output.fixed[1], np.eye(3))
    np.testing.assert_array_equal(loaded.output.parts_of(data), values)
