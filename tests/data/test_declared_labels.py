"""Records outside the declared label set are dropped, silently (an error would leak them)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset, drop_undeclared_labels


def labelled(labels: list[int]) -> BinaryDataset:
    records = sp.csr_matrix(np.eye(len(labels), 3, dtype=np.uint8))
    return BinaryDataset(records=records, item_names=["a", "b", "c"], name="t", labels=np.array(labels))


def test_only_declared_labels_are_kept() -> None:
    kept = drop_undeclared_labels(labelled([0, 3, 1, -1, 2]), k=3)
    assert kept.labels.tolist() == [0, 1, 2]
    assert kept.records.toarray().tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]


def test_nothing_to_drop_returns_the_same_dataset() -> None:
    data = labelled([0, 1, 2])
    assert drop_undeclared_labels(data, k=3) is data
