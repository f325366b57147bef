"""Counting queries on set-valued records: the DPGM paper's protocol (section 6.3).

A query is an item set P; Q_P(D) is the number of records of D holding at least one item of
P. ``make_queries`` draws the paper's workload: groups i = 1..G of equal size whose lengths
are uniform integers in [1, floor(i * maxlen / G)] (at least 1, at most the number of items),
where maxlen is the largest record length of the REAL data (an evaluation-side parameter,
never released). The items of a query are drawn uniformly without replacement from the
whole universe. The relative error of a query is
``|Q(syn) * n_real / n_syn - Q(real)| / max(Q(real), s)`` with sanity bound s = 0.1% of n_real.

Answers are vectorised: records (CSR) times the item-by-query incidence matrix, in row
chunks; when there are at most 64 items, identical records are merged first (exactly, by
their bit pattern), so a million msnbc sessions cost as much as their few distinct sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.progress import share_bar

SANITY_FRACTION = 0.001  # s = 0.1% of the real dataset size (paper section 6.3, after Xiao et al.)
_MAX_CHUNK_CELLS = 1 << 23  # rows x queries per sparse product chunk (bounds memory)
_BITMASK_ITEMS = 64  # records over at most this many items are merged by their uint64 bit pattern

Records = np.ndarray | sp.spmatrix | BinaryDataset


@dataclass(frozen=True)
class QuerySet:
    """Counting queries: ``items[k]`` (sorted item ids) and ``group[k]`` (1..G) of query k."""

    items: list[np.ndarray]
    group: np.ndarray
    n_items: int
    maxlen: int
    groups: int

    def __len__(self) -> int:
        return len(self.items)

    def lengths(self) -> np.ndarray:
        return np.array([len(p) for p in self.items], dtype=np.int64)

    def group_max_length(self, i: int) -> int:
        """Largest length allowed in group ``i`` (1-based): floor(i * maxlen / G), in [1, m]."""
        return int(min(self.n_items, max(1, (i * self.maxlen) // self.groups)))

    def incidence(self) -> sp.csr_matrix:
        """The m x Q 0/1 matrix with entry (j, k) = 1 iff item j belongs to query k."""
        cols = np.repeat(np.arange(len(self.items)), self.lengths())
        rows = np.concatenate(self.items) if self.items else np.zeros(0, dtype=np.int64)
        data = np.ones(rows.size, dtype=np.int32)
        return sp.csr_matrix((data, (rows, cols)), shape=(self.n_items, len(self.items)))

    def bitmasks(self) -> np.ndarray:
        """Each query as a uint64 bit pattern (bit j = item j); only for at most 64 items."""
        if self.n_items > _BITMASK_ITEMS:
            raise ValueError(f"bit patterns need at most {_BITMASK_ITEMS} items, got {self.n_items}")
        return np.array(
            [np.bitwise_or.reduce(np.left_shift(np.uint64(1), p.astype(np.uint64))) for p in self.items],
            dtype=np.uint64,
        )

    def to_dict(self) -> dict:
        return {
            "n_items": self.n_items,
            "maxlen": self.maxlen,
            "groups": self.groups,
            "items": [p.tolist() for p in self.items],
            "group": self.group.tolist(),
        }


def make_queries(
    n_items: int, maxlen: int, n_queries: int, rng: np.random.Generator, groups: int = 5
) -> QuerySet:
    """The paper's random workload (section 6.3): G equal groups, group i with lengths in [1, i*maxlen/G].

    Group sizes differ by at most one (the first groups take the remainder). Lengths are
    uniform integers; items are uniform without replacement over all ``n_items`` items.
    """
    if n_items < 1:
        raise ConfigError(f"queries: need at least one item, got {n_items}")
    if maxlen < 1:
        raise ConfigError(f"queries: maxlen must be >= 1 (the largest record length), got {maxlen}")
    if groups < 1 or n_queries < groups:
        raise ConfigError(f"queries: need at least one query per group ({groups} groups), got {n_queries}")
    sizes = np.full(groups, n_queries // groups)
    sizes[: n_queries % groups] += 1
    group = np.repeat(np.arange(1, groups + 1), sizes)
    qs = QuerySet(items=[], group=group, n_items=int(n_items), maxlen=int(maxlen), groups=int(groups))
    for g in group:
        length = int(rng.integers(1, qs.group_max_length(int(g)) + 1))
        qs.items.append(np.sort(rng.choice(n_items, size=length, replace=False)).astype(np.int64))
    return qs


def as_csr(records: Records) -> sp.csr_matrix:
    """Records (dataset, dense 0/1 array or sparse matrix) as CSR without explicit zeros."""
    if isinstance(records, BinaryDataset):
        records = records.records
    out = sp.csr_matrix(records, dtype=np.int32, copy=True)
    out.eliminate_zeros()
    out.sum_duplicates()
    out.data[:] = 1
    return out


def row_bitmasks(records: Records) -> np.ndarray:
    """Each row's item set as a uint64 bit pattern (bit j = item j); at most 64 items."""
    records = as_csr(records)
    if records.shape[1] > _BITMASK_ITEMS:
        raise ValueError(f"bit patterns need at most {_BITMASK_ITEMS} items, got {records.shape[1]}")
    bits = np.left_shift(np.uint64(1), records.indices.astype(np.uint64))
    keys = np.zeros(records.shape[0], dtype=np.uint64)
    starts = records.indptr[:-1]
    nonempty = np.diff(records.indptr) > 0
    if bits.size:  # items are unique within a row, so summing distinct powers of two is OR
        keys[nonempty] = np.add.reduceat(bits, starts[nonempty])
    return keys


def records_from_bitmasks(keys: np.ndarray, n_items: int) -> sp.csr_matrix:
    """Inverse of ``row_bitmasks``: one CSR row per uint64 bit pattern."""
    shifts = np.arange(n_items, dtype=np.uint64)
    dense = (np.right_shift(keys.astype(np.uint64)[:, None], shifts) & np.uint64(1)).astype(np.int32)
    return sp.csr_matrix(dense)


def _compress(records: sp.csr_matrix, weights: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Merge identical rows (exactly, by bit pattern) when there are at most 64 items."""
    if records.shape[1] > _BITMASK_ITEMS:
        return records, weights
    keys, inverse = np.unique(row_bitmasks(records), return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=weights, minlength=keys.size)
    return records_from_bitmasks(keys, records.shape[1]), merged


def hit_chunks(records: sp.csr_matrix, incidence: sp.csr_matrix):
    """Yield (start row, CSR of rows x queries) whose stored entries mark record-hits-query."""
    n_queries = max(1, incidence.shape[1])
    step = max(1, _MAX_CHUNK_CELLS // n_queries)
    for start in range(0, records.shape[0], step):
        yield start, records[start : start + step] @ incidence


def answer(records: Records, queries: QuerySet, weights: np.ndarray | None = None) -> np.ndarray:
    """Q_P for every query: the (weighted) number of records with at least one item of P."""
    x = as_csr(records)
    if x.shape[1] != queries.n_items:
        raise DataError(f"records have {x.shape[1]} items, the queries are over {queries.n_items}")
    w = np.ones(x.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (x.shape[0],):
        raise ValueError(f"weights must have shape ({x.shape[0]},), got {w.shape}")
    x, w = _compress(x, w)
    inc = queries.incidence()
    counts = np.zeros(len(queries))
    with share_bar(f"answering {len(queries)} queries") as bar:  # a share: the number of records may be private
        for start, hits in hit_chunks(x, inc):
            row_w = np.repeat(w[start : start + hits.shape[0]], np.diff(hits.indptr))
            counts += np.bincount(hits.indices, weights=row_w, minlength=len(queries))
            bar.advance_share(start + hits.shape[0], x.shape[0])
    return counts


def sanity_bound(n_real: int) -> float:
    """s = 0.1% of the number of real records (paper section 6.3)."""
    return SANITY_FRACTION * n_real


def relative_errors_from_counts(
    real_counts: np.ndarray, synthetic_counts: np.ndarray, n_real: int, n_synthetic: float
) -> np.ndarray:
    """|Q(syn) * n_real / n_syn - Q(real)| / max(Q(real), s) per query (paper section 6.3)."""
    if n_real <= 0 or n_synthetic <= 0:
        raise DataError(f"relative error needs non-empty datasets (n_real={n_real}, n_syn={n_synthetic})")
    scaled = np.asarray(synthetic_counts, dtype=float) * (n_real / n_synthetic)
    real = np.asarray(real_counts, dtype=float)
    return np.abs(scaled - real) / np.maximum(real, sanity_bound(n_real))


def relative_errors(real: Records, synthetic: Records, queries: QuerySet) -> np.ndarray:
    """Relative error of every query answered on ``synthetic`` against ``real``."""
    n_real, n_syn = as_csr(real).shape[0], as_csr(synthetic).shape[0]
    return relative_errors_from_counts(answer(real, queries), answer(synthetic, queries), n_real, n_syn)


def group_means(errors: np.ndarray, queries: QuerySet) -> dict[int, float]:
    """Mean error per length group {1: ..., G: ...} (the rows of the paper's Fig. 5)."""
    errors = np.asarray(errors, dtype=float)
    if errors.shape != (len(queries),):
        raise ValueError(f"need one error per query ({len(queries)}), got shape {errors.shape}")
    return {g: float(errors[queries.group == g].mean()) for g in range(1, queries.groups + 1)}
