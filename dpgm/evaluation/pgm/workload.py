"""Marginals of binary records: cliques, the workload, the exact (non-private) counts.

Binary items are 2-valued attributes named "0".."m-1"; a clique is a sorted tuple of item
indices and its marginal a flat count vector in C order (first item = most significant bit),
as ``mbi``'s ``Factor.datavector`` lays it out.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError

Clique = tuple[int, ...]
#: Up to this many items the true marginals come from one histogram over all 2^m records.
MAX_HISTOGRAM_ITEMS = 20


def as_csc(records: np.ndarray | sp.spmatrix | BinaryDataset) -> sp.csc_matrix:
    if isinstance(records, BinaryDataset):
        records = records.records
    return (
        sp.csc_matrix(records, dtype=np.uint8)
        if sp.issparse(records)
        else sp.csc_matrix(np.asarray(records, dtype=np.uint8))
    )


class TrueMarginals:
    """Exact marginal counts of binary records (NOT private: only noisy copies are released).

    Up to ``MAX_HISTOGRAM_ITEMS`` items: one histogram over all 2^m records, marginals by
    summing axes; otherwise per clique, a bincount of the records' codes on the clique.
    """

    def __init__(self, records: np.ndarray | sp.spmatrix | BinaryDataset) -> None:
        self.x = as_csc(records)
        self.n_records, self.n_items = self.x.shape
        self._cache: dict[Clique, np.ndarray] = {}
        self._hist: np.ndarray | None = None
        if self.n_items <= MAX_HISTOGRAM_ITEMS:
            weights = (1 << np.arange(self.n_items)[::-1]).astype(np.int64)
            codes = np.asarray(self.x @ weights).ravel().astype(np.int64)
            self._hist = np.bincount(codes, minlength=1 << self.n_items).astype(np.float64)
            self._hist = self._hist.reshape((2,) * self.n_items)

    def __call__(self, clique: Clique) -> np.ndarray:
        clique = tuple(clique)
        if clique not in self._cache:
            if self._hist is not None:
                other = tuple(j for j in range(self.n_items) if j not in clique)
                out = self._hist.sum(axis=other).ravel()
            else:
                k = len(clique)
                weights = (1 << np.arange(k)[::-1]).astype(np.int64)
                codes = np.asarray(self.x[:, list(clique)] @ weights).ravel().astype(np.int64)
                out = np.bincount(codes, minlength=1 << k).astype(np.float64)
            self._cache[clique] = out
        return self._cache[clique]


def powerset(clique: Clique) -> list[Clique]:
    """The non-empty subsets of ``clique`` (by size, then lexicographic)."""
    return [c for r in range(1, len(clique) + 1) for c in itertools.combinations(clique, r)]


def workload_cliques(
    n_items: int, degree: int, max_workload: int | None, rng: np.random.Generator, what: str
) -> list[Clique]:
    """All ``degree``-way cliques (lexicographic), or ``max_workload`` of them drawn without
    replacement by ``rng`` (public randomness), in the same order."""
    if not 1 <= degree <= n_items:
        raise ConfigError(f"{what}: degree must be in 1..{n_items}, got {degree}")
    cliques = list(itertools.combinations(range(n_items), degree))
    if max_workload is not None and max_workload < len(cliques):
        keep = np.sort(rng.choice(len(cliques), size=max_workload, replace=False))
        cliques = [cliques[i] for i in keep]
    return cliques
