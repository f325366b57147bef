"""Marginal utility metrics: average total variation distance (TVD) of 1-, 2- and 3-way marginals.

The standard utility measure of marginal-based synthesizers (AIM, MST: McKenna et al. report
the average L1/TVD error over the workload marginals). For binary items i, j, k the marginal
tables follow from the co-occurrence frequencies p_i, p_ij, p_ijk by inclusion-exclusion, so
everything is a few sparse matrix products (X^T X for all pairs; per first item i,
X_i^T X_i over the records holding i for triples), never a loop over records.
TVD(P, Q) = 1/2 sum_cells |P(cell) - Q(cell)|, in [0, 1]; also the TVD of the distribution of
record lengths (number of items per record, 0..m). Not private: evaluation only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import DataError

#: All triples when there are at most this many (17 items: 680), else a sample of this size.
DEFAULT_MAX_TRIPLES = 5000

#: Bits (items x records) of one chunk of triples' columns: bounds the memory of ``triple_frequencies``.
TRIPLE_BITS = 1 << 26

Records = np.ndarray | sp.spmatrix | BinaryDataset


def as_binary_csr(records: Records) -> sp.csr_matrix:
    """Records as a CSR matrix of int64 0/1 entries (exact counts in products)."""
    if isinstance(records, BinaryDataset):
        records = records.records
    x = sp.csr_matrix(records, dtype=np.int64)
    x.sum_duplicates()
    x.eliminate_zeros()
    if x.data.size and (x.data.min() < 0 or x.data.max() > 1):
        raise DataError("marginal TVD: records must be 0/1")
    return x


def tvd(p: np.ndarray, q: np.ndarray, axis: int = -1) -> np.ndarray:
    """1/2 sum |p - q| along ``axis``."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(axis=axis)


def _freq(x: sp.csr_matrix) -> tuple[float, np.ndarray]:
    n = x.shape[0]
    if n == 0:
        raise DataError("marginal TVD: no records")
    return float(n), np.asarray(x.sum(axis=0)).ravel() / n


def oneway_cells(p: np.ndarray) -> np.ndarray:
    """(m, 2) cells [x=0, x=1] of every 1-way marginal."""
    return np.stack([1.0 - p, p], axis=-1)


def twoway_cells(pi: np.ndarray, pj: np.ndarray, pij: np.ndarray) -> np.ndarray:
    """(..., 4) cells 00, 01, 10, 11 of pair marginals from p_i, p_j and p_ij."""
    return np.stack([1.0 - pi - pj + pij, pj - pij, pi - pij, pij], axis=-1)


def threeway_cells(
    pi: np.ndarray,
    pj: np.ndarray,
    pk: np.ndarray,
    pij: np.ndarray,
    pik: np.ndarray,
    pjk: np.ndarray,
    pijk: np.ndarray,
) -> np.ndarray:
    """(..., 8) cells 000 .. 111 (i most significant) by inclusion-exclusion."""
    return np.stack(
        [
            1.0 - pi - pj - pk + pij + pik + pjk - pijk,
            pk - pik - pjk + pijk,
            pj - pij - pjk + pijk,
            pjk - pijk,
            pi - pij - pik + pijk,
            pik - pijk,
            pij - pijk,
            pijk,
        ],
        axis=-1,
    )


def pair_frequencies(x: sp.csr_matrix) -> np.ndarray:
    """(m, m) fraction of records holding both i and j (diagonal: p_i)."""
    return np.asarray((x.T @ x).toarray(), dtype=np.float64) / x.shape[0]


def triple_frequencies(x: sp.csr_matrix, triples: np.ndarray) -> np.ndarray:
    """Fraction of records holding all three items of each row of ``triples`` (i < j < k): per chunk of triples,
    the columns they name as bit sets over the records, ANDed three at a time and counted (exact, and
    independent of how dense the records are: one Gram matrix per first item took minutes on dense pixels)."""
    xc, n = x.tocsc(), x.shape[0]
    out = np.zeros(len(triples))
    chunk = max(1, TRIPLE_BITS // (3 * max(n, 1)))
    for start in range(0, len(triples), chunk):
        part = triples[start : start + chunk]
        items, inverse = np.unique(part, return_inverse=True)
        bits = np.zeros((items.size, n), dtype=bool)
        for row, i in enumerate(items.tolist()):
            bits[row, xc.indices[xc.indptr[i] : xc.indptr[i + 1]]] = True
        packed = np.packbits(bits, axis=1)
        a, b, c = inverse.reshape(part.shape).T
        out[start : start + len(part)] = np.bitwise_count(packed[a] & packed[b] & packed[c]).sum(axis=1)
    return out / n


def choose_triples(
    n_items: int, max_triples: int, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
    """(k, 3) sorted triples and whether they are all of them (C(m, 3) <= max_triples) or a sample.

    The sample: ``max_triples`` distinct triples, uniform, drawn with ``rng`` (seed it: the
    same triples must score every method).
    """
    total = math.comb(n_items, 3)
    if total == 0:
        return np.zeros((0, 3), dtype=np.int64), True
    if total <= max_triples:
        from itertools import combinations

        return np.array(list(combinations(range(n_items), 3)), dtype=np.int64), True
    chosen: set[tuple[int, int, int]] = set()
    while len(chosen) < max_triples:
        draw = rng.integers(0, n_items, size=(2 * (max_triples - len(chosen)) + 8, 3))
        draw.sort(axis=1)
        ok = (draw[:, 0] < draw[:, 1]) & (draw[:, 1] < draw[:, 2])
        for row in map(tuple, draw[ok]):
            if len(chosen) == max_triples:
                break
            chosen.add(row)  # type: ignore[arg-type]
    return np.array(sorted(chosen), dtype=np.int64), False


def length_tvd(real: Records, synthetic: Records) -> float:
    """TVD of the distributions of record lengths (items per record)."""
    a, b = as_binary_csr(real), as_binary_csr(synthetic)
    m = max(a.shape[1], b.shape[1])
    la = np.bincount(np.diff(a.indptr), minlength=m + 1) / a.shape[0]
    lb = np.bincount(np.diff(b.indptr), minlength=m + 1) / b.shape[0]
    return float(tvd(la, lb))


@dataclass(frozen=True)
class MarginalTVD:
    """Average TVD over all 1-way, all 2-way and all (or ``n_triples`` sampled) 3-way marginals."""

    oneway: float
    twoway: float
    threeway: float
    length: float
    n_triples: int
    all_triples: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def marginal_tvd(
    real: Records,
    synthetic: Records,
    *,
    max_triples: int = DEFAULT_MAX_TRIPLES,
    rng: np.random.Generator | None = None,
) -> MarginalTVD:
    """Average marginal TVDs between ``real`` and ``synthetic`` (same items, same order).

    Triples: all when C(m, 3) <= ``max_triples``, else that many drawn by ``rng`` (default:
    a Generator seeded with 0, so repeated calls score the same triples).
    """
    a, b = as_binary_csr(real), as_binary_csr(synthetic)
    if a.shape[1] != b.shape[1]:
        raise DataError(f"marginal TVD: {a.shape[1]} real items, {b.shape[1]} synthetic items")
    m = a.shape[1]
    _, pa = _freq(a)
    _, pb = _freq(b)
    one = float(tvd(oneway_cells(pa), oneway_cells(pb)).mean())
    two = three = float("nan")
    triples = np.zeros((0, 3), dtype=np.int64)
    exact = True
    if m >= 2:
        ga, gb = pair_frequencies(a), pair_frequencies(b)
        i, j = np.triu_indices(m, k=1)
        two = float(
            tvd(twoway_cells(pa[i], pa[j], ga[i, j]), twoway_cells(pb[i], pb[j], gb[i, j])).mean()
        )
        if m >= 3:
            triples, exact = choose_triples(
                m, max_triples, rng if rng is not None else np.random.default_rng(0)
            )
            ti, tj, tk = triples.T

            def cells(p: np.ndarray, g: np.ndarray, x: sp.csr_matrix) -> np.ndarray:
                return threeway_cells(
                    p[ti],
                    p[tj],
                    p[tk],
                    g[ti, tj],
                    g[ti, tk],
                    g[tj, tk],
                    triple_frequencies(x, triples),
                )

            three = float(tvd(cells(pa, ga, a), cells(pb, gb, b)).mean())
    return MarginalTVD(
        oneway=one,
        twoway=two,
        threeway=three,
        length=length_tvd(a, b),
        n_triples=len(triples),
        all_triples=exact,
    )
