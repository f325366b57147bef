"""Counting queries: semantics, relative error (hand-computed), workload groups, vectorised answers."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.evaluation.queries import (
    QuerySet,
    answer,
    group_means,
    make_queries,
    records_from_bitmasks,
    relative_errors,
    relative_errors_from_counts,
    row_bitmasks,
)


def dataset(rows: list[set[int]], m: int) -> BinaryDataset:
    dense = np.zeros((len(rows), m), dtype=np.uint8)
    for i, row in enumerate(rows):
        dense[i, list(row)] = 1
    return BinaryDataset(records=sp.csr_matrix(dense), item_names=[str(j) for j in range(m)])


def query_set(items: list[list[int]], m: int) -> QuerySet:
    return QuerySet(items=[np.array(p) for p in items], group=np.ones(len(items), dtype=int),
                    n_items=m, maxlen=m, groups=1)


REAL = dataset([{0, 1}, {2}, set(), {1, 3}], 4)
SYN = dataset([{1}, {0, 3}], 4)
QUERIES = query_set([[0], [1, 2], [3], [0, 1, 2, 3]], 4)


def test_query_counts_records_with_at_least_one_item() -> None:
    # {0}: record 0; {1,2}: records 0, 1, 3; {3}: record 3; all items: every non-empty record.
    assert answer(REAL, QUERIES).tolist() == [1, 3, 1, 3]
    assert answer(SYN, QUERIES).tolist() == [1, 1, 1, 2]


def test_relative_error_hand_computed() -> None:
    # Synthetic counts are scaled by n_real / n_syn = 4 / 2; s = 0.004 < every real count.
    # {0}: |2 - 1| / 1; {1,2}: |2 - 3| / 3; {3}: |2 - 1| / 1; all: |4 - 3| / 3.
    np.testing.assert_allclose(relative_errors(REAL, SYN, QUERIES), [1.0, 1 / 3, 1.0, 1 / 3])


def test_sanity_bound_replaces_small_real_counts() -> None:
    # n_real = 2000 -> s = 2; scaled synthetic counts (x2) = [2, 8] against real [0, 10].
    errors = relative_errors_from_counts(np.array([0, 10]), np.array([1, 4]), 2000, 1000)
    np.testing.assert_allclose(errors, [2 / 2, 2 / 10])


def test_relative_error_rejects_empty_synthetic() -> None:
    with pytest.raises(DataError):
        relative_errors_from_counts(np.array([1]), np.array([0]), 10, 0)


@pytest.mark.parametrize("m", [10, 70])  # bit-pattern merging (m <= 64) and the plain product
def test_answer_matches_brute_force(m: int) -> None:
    rng = np.random.default_rng(1)
    dense = (rng.random((300, m)) < 0.1).astype(np.uint8)
    dense[:50] = dense[50:100]  # duplicated rows must be merged without changing counts
    queries = make_queries(m, 8, 40, rng)
    weights = rng.random(300)
    expected = [sum(w for row, w in zip(dense, weights) if row[p].any()) for p in queries.items]
    np.testing.assert_allclose(answer(dense, queries, weights=weights), expected)
    np.testing.assert_allclose(answer(sp.csr_matrix(dense), queries),
                               [sum(row[p].any() for row in dense) for p in queries.items])


def test_answer_rejects_item_count_mismatch() -> None:
    with pytest.raises(DataError, match="items"):
        answer(np.zeros((3, 5), dtype=np.uint8), QUERIES)


def test_bitmask_round_trip() -> None:
    rng = np.random.default_rng(2)
    x = sp.csr_matrix((rng.random((50, 64)) < 0.3).astype(np.int32))
    x = sp.csr_matrix(x.multiply(np.arange(50)[:, None] != 3))  # record 3 empty
    keys = row_bitmasks(x)
    assert keys[3] == 0
    assert (records_from_bitmasks(keys, 64) != x).nnz == 0
    explicit_zero = sp.csr_matrix((np.array([1, 0]), np.array([0, 5]), np.array([0, 2])), shape=(1, 64))
    assert row_bitmasks(explicit_zero).tolist() == [1]  # a stored 0 is not an item


def test_workload_groups_and_length_ranges() -> None:
    rng = np.random.default_rng(3)
    queries = make_queries(n_items=40, maxlen=17, n_queries=1000, rng=rng)
    assert np.bincount(queries.group).tolist() == [0, 200, 200, 200, 200, 200]
    lengths = queries.lengths()
    for g, top in zip(range(1, 6), [3, 6, 10, 13, 17]):  # floor(g * 17 / 5)
        assert queries.group_max_length(g) == top
        in_group = lengths[queries.group == g]
        assert in_group.min() == 1 and in_group.max() == top  # uniform over the whole range
    for p in queries.items:  # distinct items (without replacement), in range, sorted
        assert len(np.unique(p)) == len(p) and p.min() >= 0 and p.max() < 40
        assert np.all(np.diff(p) > 0)
    # items uniform over the universe: every item appears, none dominates
    counts = np.bincount(np.concatenate(queries.items), minlength=40)
    assert counts.min() > 0.5 * counts.mean() and counts.max() < 1.5 * counts.mean()


def test_workload_caps_and_uneven_groups() -> None:
    rng = np.random.default_rng(4)
    capped = make_queries(n_items=3, maxlen=17, n_queries=50, rng=rng)
    assert capped.lengths().max() <= 3
    short = make_queries(n_items=10, maxlen=2, n_queries=7, rng=rng)
    assert np.bincount(short.group).tolist() == [0, 2, 2, 1, 1, 1]
    assert short.group_max_length(1) == 1  # floor(2/5) = 0 is raised to 1
    assert np.all(short.lengths()[short.group == 1] == 1)


@pytest.mark.parametrize("kwargs", [{"n_queries": 4}, {"maxlen": 0}, {"n_items": 0}])
def test_workload_rejects_bad_parameters(kwargs: dict) -> None:
    args = {"n_items": 5, "maxlen": 3, "n_queries": 10} | kwargs
    with pytest.raises(ConfigError):
        make_queries(rng=np.random.default_rng(0), **args)


def test_group_means() -> None:
    queries = make_queries(5, 5, 10, np.random.default_rng(5))
    errors = np.arange(10, dtype=float)  # groups of two: (0,1), (2,3), ...
    assert group_means(errors, queries) == {1: 0.5, 2: 2.5, 3: 4.5, 4: 6.5, 5: 8.5}


@pytest.mark.realdata
def test_msnbc_thousand_queries_in_seconds(shared_data_dir) -> None:
    from dpgm.data.transactions import load_transactions

    path = shared_data_dir / "msnbc" / "msnbc.txt.gz"
    if not path.is_file():
        pytest.skip("msnbc not in DPGM_DATA_DIR")
    data = load_transactions(path)
    queries = make_queries(data.n_items, int(data.record_lengths().max()), 1000, np.random.default_rng(6))
    start = time.perf_counter()
    counts = answer(data, queries)
    assert time.perf_counter() - start < 10.0
    head = data.records[:2000].toarray()
    sub = answer(head, queries)
    np.testing.assert_array_equal(sub[:50], [head[:, p].any(axis=1).sum() for p in queries.items[:50]])
    assert np.all(counts >= sub) and counts.max() <= data.n_records
