"""Balanced picks: a weighted resample's feature sums brought to what its weights ask."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpgm.models.balance import balance
from dpgm.models.tilt import features, systematic_picks


def _pool(n: int, m: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return features((rng.random((n, m)) < rng.uniform(0.02, 0.4, m)).astype(np.uint8), np.array([[0, 1], [2, 3]]))


def test_balanced_picks_hold_the_weighted_means_where_the_plain_resample_is_off_by_sampling_error() -> None:
    f = _pool(20_000, 30, 0)
    weights = np.random.default_rng(1).gamma(4.0, size=f.shape[0])
    weights /= weights.sum()
    goal = f.T @ weights
    count = 5_000
    plain = systematic_picks(weights, count, 0.3)
    picks = balance(f, plain, goal)
    gap = np.abs(f.T @ np.bincount(picks, minlength=f.shape[0]) - count * goal)
    before = np.abs(f.T @ np.bincount(plain, minlength=f.shape[0]) - count * goal)
    assert len(picks) == count and picks.min() >= 0 and picks.max() < f.shape[0]
    assert gap.max() <= 2.0  # counts off by at most two records
    assert before.max() > 10.0  # against tens


def test_picks_that_already_meet_their_goal_stay_as_they_are() -> None:
    f = _pool(2_000, 10, 2)
    picks = np.random.default_rng(3).integers(0, 2_000, 500)
    goal = f.T @ np.bincount(picks, minlength=2_000) / len(picks)
    assert balance(f, picks, goal).tolist() == np.sort(picks).tolist()


def test_a_pool_of_one_row_or_no_picks_is_returned_sorted() -> None:
    f = _pool(1, 5, 4)
    assert balance(f, np.zeros(3, dtype=np.int64), np.ones(f.shape[1])).tolist() == [0, 0, 0]
    assert balance(_pool(10, 5, 5), np.zeros(0, dtype=np.int64), np.ones(7)).tolist() == []
