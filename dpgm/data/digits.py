"""scikit-learn's 8x8 digits (1,797 images shipped inside scikit-learn): the offline dataset."""

from __future__ import annotations

import numpy as np

from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import check_limit, check_threshold

DIGITS_MAX = 16.0  # intensities in sklearn's digits are integers 0..16


def load_digits(*, threshold: float = 0.5, limit: int | None = None) -> BinaryDataset:
    """The digits as 64 binary pixels: value / 16 >= threshold gives 1; labels 0..9."""
    from sklearn.datasets import load_digits as sklearn_digits

    check_threshold(threshold)
    check_limit(limit)
    bunch = sklearn_digits()
    values, labels = bunch.data[:limit], bunch.target[:limit]
    return BinaryDataset(
        records=(values / DIGITS_MAX >= threshold).astype(np.uint8),
        item_names=[f"px{j}" for j in range(values.shape[1])],
        labels=labels.astype(np.int64),
        name="digits",
        image_shape=(8, 8),
        source="sklearn.datasets.load_digits",
        meta={"threshold": float(threshold)},
    )
