"""scikit-learn digits loader."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits as sklearn_digits

from dpgm.data.digits import load_digits
from dpgm.errors import ConfigError


def test_digits_shape_labels_and_threshold() -> None:
    ds = load_digits()
    raw = sklearn_digits()
    assert ds.records.shape == (1797, 64) and ds.image_shape == (8, 8)
    np.testing.assert_array_equal(ds.records, (raw.data >= 8).astype(np.uint8))  # 8 / 16 == 0.5
    np.testing.assert_array_equal(ds.labels, raw.target)
    assert ds.labels.dtype == np.int64 and ds.item_names[63] == "px63"


def test_digits_threshold_and_limit() -> None:
    low, high = load_digits(threshold=0.1, limit=10), load_digits(threshold=0.9, limit=10)
    assert low.n_records == high.n_records == 10
    assert low.records.sum() > high.records.sum()
    assert np.all(low.records >= high.records)


def test_digits_bad_threshold() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        load_digits(threshold=0.0)
