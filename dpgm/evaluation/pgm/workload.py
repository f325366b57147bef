"""Marginals of coded records: cliques, the workload, the exact (non-private) counts.

An attribute j takes the values 0..sizes[j]-1 (a binary item: sizes 2); a clique is a sorted
tuple of attribute indices and its marginal a flat count vector in C order (mixed radix, the
first attribute most significant), as ``mbi``'s ``Factor.datavector`` lays it out. Records are
either a coded table (``CodedRecords``: a code matrix [n, d] and the sizes) or binary items
(a BinaryDataset, a 0/1 array or sparse matrix: codes with every size 2, kept sparse).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError

Clique = tuple[int, ...]
#: Up to this many items (cells: 2 to this power) the true marginals come from one histogram of all cells.
MAX_HISTOGRAM_ITEMS = 20
MAX_HISTOGRAM_CELLS = 1 << MAX_HISTOGRAM_ITEMS
#: ... and over at most this many attributes (an array of more dimensions than NumPy allows cannot hold it: MST's
#: compression leaves many attributes of one value, few cells over very many).
MAX_HISTOGRAM_DIMS = 32


@dataclass(frozen=True)
class CodedRecords:
    """A coded table: record i's attribute j holds ``codes[i, j]`` in 0..sizes[j]-1 (e.g. each column's
    value index under a declared schema). ``names``: the attributes' names (default "0".."d-1")."""

    codes: np.ndarray
    sizes: tuple[int, ...]
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        sizes = tuple(int(s) for s in self.sizes)
        if codes.ndim != 2 or codes.shape[1] != len(sizes) or not sizes:
            raise DataError(f"coded records: a code matrix [n, {len(sizes)}] is needed (one column per size)")
        if codes.dtype.kind not in "iu" or min(sizes) < 1:
            raise DataError("coded records: codes must be integers and every size at least 1")
        if codes.size and (codes.min() < 0 or (codes.max(axis=0) >= np.asarray(sizes)).any()):
            raise DataError("coded records: a code outside its attribute's size")
        if self.names is not None and len(self.names) != len(sizes):
            raise DataError(f"coded records: {len(self.names)} names for {len(sizes)} attributes")
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "sizes", sizes)

    @property
    def n_records(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_items(self) -> int:
        """The number of attributes (named as a binary dataset's items, which are 2-valued attributes)."""
        return len(self.sizes)


Records = np.ndarray | sp.spmatrix | BinaryDataset | CodedRecords


def as_csc(records: np.ndarray | sp.spmatrix | BinaryDataset) -> sp.csc_matrix:
    if isinstance(records, BinaryDataset):
        records = records.records
    return (
        sp.csc_matrix(records, dtype=np.uint8)
        if sp.issparse(records)
        else sp.csc_matrix(np.asarray(records, dtype=np.uint8))
    )


def as_sizes(sizes: int | Sequence[int]) -> tuple[int, ...]:
    """Attribute sizes; an integer m stands for m binary items (every size 2)."""
    return (2,) * int(sizes) if isinstance(sizes, (int, np.integer)) else tuple(int(s) for s in sizes)


def strides(sizes: Sequence[int]) -> np.ndarray:
    """Mixed-radix place values of a C-order cell index (binary items: 2^(k-1), ..., 2, 1)."""
    return np.array([math.prod(sizes[i + 1:]) for i in range(len(sizes))], dtype=np.int64)


def n_attributes(records: Records) -> int:
    """The number of attributes (binary items) of ``records``, without reading them."""
    return records.n_items if isinstance(records, (BinaryDataset, CodedRecords)) else int(np.shape(records)[1])


class TrueMarginals:
    """Exact marginal counts of coded records (NOT private: only noisy copies are released).

    Up to ``MAX_HISTOGRAM_CELLS`` cells over at most ``MAX_HISTOGRAM_DIMS`` attributes: one histogram over every
    cell, marginals by summing axes; otherwise per clique, a bincount of the records' mixed-radix codes on the
    clique (binary items stay a sparse matrix: only the clique's columns are read).
    """

    def __init__(self, records: Records) -> None:
        if isinstance(records, CodedRecords):
            self.x: np.ndarray | sp.csc_matrix = records.codes.astype(np.int64, copy=False)
            self.sizes = records.sizes
        else:
            self.x = as_csc(records)
            self.sizes = (2,) * self.x.shape[1]
        self.n_records, self.n_items = self.x.shape
        self._cache: dict[Clique, np.ndarray] = {}
        self._hist: np.ndarray | None = None
        if math.prod(self.sizes) <= MAX_HISTOGRAM_CELLS and len(self.sizes) <= MAX_HISTOGRAM_DIMS:
            codes = np.asarray(self.x @ strides(self.sizes)).ravel().astype(np.int64)
            hist = np.bincount(codes, minlength=math.prod(self.sizes)).astype(np.float64)
            self._hist = hist.reshape(self.sizes)

    def cells(self, clique: Clique) -> int:
        """The number of cells of ``clique``'s marginal."""
        return math.prod(self.sizes[j] for j in clique)

    def column(self, j: int) -> np.ndarray:
        """Attribute ``j``'s codes, dense."""
        col = self.x[:, [j]]
        return np.asarray(col.toarray() if sp.issparse(col) else col).ravel().astype(np.int64)

    def __call__(self, clique: Clique) -> np.ndarray:
        clique = tuple(clique)
        if clique not in self._cache:
            if self._hist is not None:
                other = tuple(j for j in range(self.n_items) if j not in clique)
                out = self._hist.sum(axis=other).ravel()
            else:
                place = strides([self.sizes[j] for j in clique])
                codes = np.asarray(self.x[:, list(clique)] @ place).ravel().astype(np.int64)
                out = np.bincount(codes, minlength=self.cells(clique)).astype(np.float64)
            self._cache[clique] = out
        return self._cache[clique]


def powerset(clique: Clique) -> list[Clique]:
    """The non-empty subsets of ``clique`` (by size, then lexicographic)."""
    return [c for r in range(1, len(clique) + 1) for c in itertools.combinations(clique, r)]


def workload_cliques(
    n_items: int, degree: int, max_workload: int | None, rng: np.random.Generator, what: str,
    keep: Callable[[Clique], bool] | None = None,
) -> list[Clique]:
    """All ``degree``-way cliques (lexicographic) that ``keep`` (public: the sizes) keeps, or
    ``max_workload`` of them drawn without replacement by ``rng`` (public randomness), in the same order."""
    if not 1 <= degree <= n_items:
        raise ConfigError(f"{what}: degree must be in 1..{n_items}, got {degree}")
    cliques = [c for c in itertools.combinations(range(n_items), degree) if keep is None or keep(c)]
    if not cliques:
        raise ConfigError(f"{what}: no {degree}-way marginal is small enough for the workload")
    if max_workload is not None and max_workload < len(cliques):
        keep = np.sort(rng.choice(len(cliques), size=max_workload, replace=False))
        cliques = [cliques[i] for i in keep]
    return cliques
