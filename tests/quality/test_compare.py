"""The report's numbers: zero for a copy, phi equals the Pearson correlation, the shown items, labels, images."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.data.dataset import BinaryDataset
from dpgm.quality.compare import N_SAMPLES, compare, pair_stats


def test_a_copy_of_the_real_data_has_no_error(tiny_dataset: BinaryDataset) -> None:
    cmp = compare(tiny_dataset, tiny_dataset, n_queries=20)
    assert np.all(cmp.freq_error() == 0) and cmp.length_tvd() == 0
    assert cmp.pair_errors() == (0.0, 0.0)
    assert set(cmp.query_errors) == {1, 2, 3, 4, 5} and all(v == 0 for v in cmp.query_errors.values())
    assert cmp.lengths_real.sum() == pytest.approx(1.0)


def test_phi_is_the_pearson_correlation_of_the_items(tiny_dataset: BinaryDataset) -> None:
    items = np.array([0, 4, 5, 9])
    stats = pair_stats(tiny_dataset, items)
    expected = np.corrcoef(tiny_dataset.dense(np.float64)[:, items], rowvar=False)
    off = ~np.eye(len(items), dtype=bool)
    np.testing.assert_allclose(stats.corr[off], expected[off], atol=1e-12)
    assert np.isnan(np.diag(stats.corr)).all()
    np.testing.assert_allclose(np.diag(stats.cooc), tiny_dataset.dense(np.float64)[:, items].mean(axis=0))


def test_matrices_show_the_most_frequent_items(tiny_dataset: BinaryDataset) -> None:
    cmp = compare(tiny_dataset, tiny_dataset, max_shown=3, n_queries=10)
    freq = tiny_dataset.dense().mean(axis=0)
    assert len(cmp.shown) == 3 and cmp.pairs_real.cooc.shape == (3, 3)
    assert freq[cmp.shown].min() >= np.sort(freq)[-3]


def test_constant_items_correlate_with_nothing() -> None:
    records = np.array([[1, 0, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=np.uint8)
    stats = pair_stats(BinaryDataset(records=records, item_names=["a", "b", "c"]), np.arange(3))
    assert stats.corr[0, 1] == 0 and stats.corr[1, 0] == 0 and np.isfinite(stats.corr[1, 2])


def test_labels_only_when_both_sides_have_them(tiny_dataset: BinaryDataset) -> None:
    other = tiny_dataset.subset(np.arange(0, 40, 2))
    cmp = compare(tiny_dataset, other, n_queries=10)
    assert cmp.has_labels and list(cmp.label_values) == [0, 1, 2]
    np.testing.assert_allclose(cmp.label_share_real, [14 / 40, 13 / 40, 13 / 40])
    assert cmp.label_share_synthetic.sum() == pytest.approx(1.0)
    unlabelled = BinaryDataset(records=other.records, item_names=other.item_names)
    one_sided = compare(tiny_dataset, unlabelled, n_queries=10)
    assert not one_sided.has_labels and one_sided.labelled == (True, False)


def test_image_samples_are_drawn_with_the_shape() -> None:
    rng = np.random.default_rng(1)
    real = BinaryDataset(records=rng.integers(0, 2, (50, 16)), item_names=[f"px{j}" for j in range(16)],
                         image_shape=(4, 4))
    syn = BinaryDataset(records=rng.integers(0, 2, (10, 16)), item_names=real.item_names)
    cmp = compare(real, syn, n_queries=10, seed=3)
    assert cmp.samples_real.shape == (N_SAMPLES, 4, 4) and cmp.samples_synthetic.shape == (10, 4, 4)
    again = compare(real, syn, n_queries=10, seed=3)
    np.testing.assert_array_equal(cmp.samples_real, again.samples_real)
    assert compare(real.subset(np.arange(50)), syn, n_queries=10).image_shape == (4, 4)
