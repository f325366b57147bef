"""Clustering accuracy (Hungarian matching) and the k-means objective on hand-made examples."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.errors import DataError
from dpgm.evaluation.metrics import clustering_accuracy, contingency, kmeans_objective


def test_accuracy_hand_example():
    labels = np.array([0, 0, 0, 1, 1, 2])
    parts = np.array([1, 1, 0, 0, 0, 2])
    # best map: part 1 -> label 0 (2 hits), part 0 -> label 1 (2), part 2 -> label 2 (1)
    assert clustering_accuracy(labels, parts) == pytest.approx(5 / 6)
    np.testing.assert_array_equal(contingency(labels, parts), [[1, 2, 0], [2, 0, 0], [0, 0, 1]])


def test_accuracy_is_invariant_to_renaming_parts():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 200)
    parts = np.where(rng.random(200) < 0.8, labels, rng.integers(0, 4, 200))
    renamed = np.array([3, 0, 2, 1])[parts]
    assert clustering_accuracy(labels, renamed) == clustering_accuracy(labels, parts)
    assert clustering_accuracy(labels, labels) == 1.0


def test_accuracy_with_more_or_fewer_parts_than_labels():
    labels = np.array([0, 0, 1, 1, 2, 2])
    # two parts for three labels: at most two labels can be matched
    assert clustering_accuracy(labels, np.array([0, 0, 1, 1, 1, 1])) == pytest.approx(4 / 6)
    # four parts for two labels: one part per label is counted
    assert clustering_accuracy(
        np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 2, 3, 3, 3])
    ) == pytest.approx(4 / 6)


def test_accuracy_rejects_mismatched_or_negative_input():
    with pytest.raises(DataError):
        clustering_accuracy(np.array([0, 1]), np.array([0]))
    with pytest.raises(DataError):
        clustering_accuracy(np.array([0, -1]), np.array([0, 1]))


def test_kmeans_objective_hand_example():
    x = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0], [10.0, 12.0]])
    parts = np.array([0, 0, 1, 1])
    # part means (1, 0) and (10, 11): every row is at squared distance 1
    assert kmeans_objective(x, assignments=parts) == pytest.approx(4.0)
    centres = np.array([[0.0, 0.0], [10.0, 10.0]])
    # nearest of the given centres: 0 + 4 + 0 + 4
    assert kmeans_objective(x, centres=centres) == pytest.approx(8.0)
    # given assignment to given centres (swapped): ||x - c||^2 summed as assigned
    assert kmeans_objective(x, assignments=1 - parts, centres=centres) == pytest.approx(
        200 + 164 + 200 + 244
    )
    assert kmeans_objective(sp.csr_matrix(x), assignments=parts) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        kmeans_objective(x)
