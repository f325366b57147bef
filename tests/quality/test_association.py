"""Cramér's V: against hand-computed tables, its edge cases, and the matrix of a declared table's columns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.quality.association import Associations, association_matrix, cramers_v


def test_a_two_by_two_table_gives_the_absolute_phi_coefficient() -> None:
    # phi = (ad - bc) / sqrt(row1 row2 col1 col2) = (10*40 - 20*30) / sqrt(30*70*40*60) = -200 / 2244.99...
    assert cramers_v(np.array([[10, 20], [30, 40]])) == pytest.approx(200 / math.sqrt(30 * 70 * 40 * 60))
    assert cramers_v(np.array([[10, 20], [30, 40]])) == pytest.approx(0.0890871, abs=1e-7)


def test_a_two_by_three_table_by_hand() -> None:
    # n = 20, rows 10 and 10, columns 8, 6, 6: expected 4, 3, 3 in each row;
    # chi2 = 2 (2^2/4 + 0^2/3 + 2^2/3) = 14/3, V = sqrt(chi2 / (20 (2 - 1))) = sqrt(7/30)
    assert cramers_v(np.array([[6, 3, 1], [2, 3, 5]])) == pytest.approx(math.sqrt(7 / 30))
    # a column that fixes the row: V = 1; independent rows: V = 0
    assert cramers_v(np.array([[10, 0, 10], [0, 20, 0]])) == pytest.approx(1.0)
    assert cramers_v(np.array([[1, 2, 3], [2, 4, 6]])) == pytest.approx(0.0)


def test_empty_values_are_left_out_and_a_single_value_is_not_measured() -> None:
    counts = np.array([[6, 3, 1], [2, 3, 5]])
    padded = np.zeros((3, 4), dtype=int)
    padded[:2, :3] = counts
    assert cramers_v(padded) == pytest.approx(cramers_v(counts))
    assert math.isnan(cramers_v(np.array([[5, 7, 0]])))
    assert math.isnan(cramers_v(np.array([[5, 0], [7, 0]])))


def test_it_matches_scipy_on_a_random_table() -> None:
    from scipy.stats.contingency import association

    counts = np.random.default_rng(0).integers(1, 50, size=(4, 6))
    assert cramers_v(counts) == pytest.approx(association(counts, method="cramer"))


def test_the_matrix_of_a_declared_table(table_files) -> None:
    from dpgm.evaluation import read_table
    from dpgm.tables import table_schema

    real = read_table(table_files["real"], table_schema(table_files["schema"]))
    v = association_matrix(real)
    assert v.shape == (4, 4) and np.allclose(v, v.T) and np.allclose(np.diag(v), 1.0)
    names = real.schema.names
    age, y, city = names.index("age"), names.index("y"), names.index("city")
    assert v[age, y] > 0.8  # y is yes exactly for those older than 50
    assert v[y, city] < v[age, y]


def test_the_mean_difference_is_over_the_measured_pairs_only() -> None:
    real = np.array([[1.0, 0.2, 0.4], [0.2, 1.0, np.nan], [0.4, np.nan, 1.0]])
    synthetic = np.array([[1.0, 0.5, 0.3], [0.5, 1.0, 0.1], [0.3, 0.1, 1.0]])
    assert Associations(["a", "b", "c"], real, synthetic).mean_difference() == pytest.approx((0.3 + 0.1) / 2)
    assert Associations(["a"], np.ones((1, 1)), np.ones((1, 1))).mean_difference() is None
