"""Subspace distances on hand-computed examples (paper Eq. 1-3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.clustering.subspace.distance import (
    kmeans_cost,
    principal_angles,
    residuals,
    subspace_distance,
    wasserstein_distance,
    wasserstein_matrix,
)


def line(theta: float) -> np.ndarray:
    return np.array([[math.cos(theta)], [math.sin(theta)]])


def test_identical_subspaces_are_at_distance_zero_whatever_the_basis():
    u = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    rotated = u @ np.array([[0.6, -0.8], [0.8, 0.6]])
    assert subspace_distance(u, rotated) == pytest.approx(0.0, abs=1e-12)
    assert principal_angles(u, rotated) == pytest.approx([0.0, 0.0], abs=1e-6)


def test_orthogonal_lines_and_a_known_principal_angle():
    assert subspace_distance(line(0.0), line(math.pi / 2)) == pytest.approx(math.sqrt(2.0))
    # ||P - P'||_F = sqrt(2) sin(theta) for two lines at angle theta
    assert subspace_distance(line(0.0), line(math.pi / 6)) == pytest.approx(math.sqrt(2.0) * 0.5)
    assert principal_angles(line(0.3), line(1.0)) == pytest.approx([0.7])
    # planes in R^3 sharing the x axis, tilted by 40 degrees about it: angles (0, 40 deg)
    t = math.radians(40)
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b = np.array([[1.0, 0.0], [0.0, math.cos(t)], [0.0, math.sin(t)]])
    assert principal_angles(a, b) == pytest.approx([0.0, t], abs=1e-6)
    assert subspace_distance(a, b) == pytest.approx(math.sqrt(2.0) * math.sin(t))


def test_wasserstein_takes_the_best_label_permutation():
    c = np.stack([line(0.0), line(math.pi / 2)])
    swapped = c[::-1]
    assert wasserstein_distance(c, swapped) == pytest.approx(0.0, abs=1e-12)
    moved = np.stack([line(math.pi / 2 + math.pi / 6), line(0.0)])  # one line moved by 30 degrees
    assert wasserstein_distance(c, moved) == pytest.approx(math.sqrt(2.0) * 0.5)
    assert wasserstein_matrix(np.stack([c, swapped, moved])) == pytest.approx(
        np.array([[0, 0, 0.5 * math.sqrt(2)], [0, 0, 0.5 * math.sqrt(2)], [0.5 * math.sqrt(2)] * 2 + [0]]), abs=1e-6)


def test_residuals_and_the_kmeans_subspace_cost():
    rows = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    bases = np.stack([line(0.0), line(math.pi / 2)])
    assert residuals(rows, bases) == pytest.approx(np.array([[0.0, 1.0], [4.0, 0.0], [16.0, 9.0]]))
    assert kmeans_cost(rows, bases) == pytest.approx(9.0 / 3)
