"""The one dataset type of dpgm: n binary records over m items, dense or sparse."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dpgm.errors import DataError


def _is_binary(values: np.ndarray) -> bool:
    """All entries are 0 or 1 (a fast min() and max() for integers, isin otherwise)."""
    if values.dtype.kind in "biu":
        return bool(values.min() >= 0 and values.max() <= 1)
    return bool(np.isin(values, (0, 1)).all())


def _check_binary(values: np.ndarray, where: str) -> None:
    """Refuse NaN, infinity or any value but 0 and 1 (a one-line error that shows no value)."""
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise DataError(f"{where}: records contain NaN or infinity")
    if values.size and not _is_binary(values):
        raise DataError(f"{where}: records must be binary (0/1)")


#: Sparse formats whose ``data`` holds exactly the stored entries (a DIA matrix's may hold padding).
_ENTRY_FORMATS = ("csr", "csc", "coo", "bsr")


def binary_csr(records: sp.spmatrix | sp.sparray, where: str) -> sp.csr_matrix:
    """Sparse records as uint8 CSR, checked 0/1 before any cast: each stored entry, then each cell
    once entries stored twice are summed (a cell holds their sum, as ``toarray`` gives it)."""
    stored = records if records.format in _ENTRY_FORMATS else records.tocsr()
    _check_binary(np.asarray(stored.data), where)
    summed = sp.csr_matrix(stored)  # the input's dtype (a COO's duplicates summed)
    if not summed.has_canonical_format:  # a CSR's or CSC's: summed in a copy, the caller's left alone
        summed = summed.copy()
        summed.sum_duplicates()
    _check_binary(summed.data, where)
    return sp.csr_matrix(summed, dtype=np.uint8)


@dataclass
class BinaryDataset:
    """n records x m items with 0/1 values.

    ``records`` is a dense uint8 array or a scipy CSR matrix (for large sparse item
    universes such as retail baskets). ``labels`` (optional, int64, one per record) are part
    of the private record when a partitioner uses them. ``image_shape`` is set for image
    data (e.g. (28, 28)) so that releases can be drawn as grids.
    """

    records: np.ndarray | sp.csr_matrix
    item_names: list[str]
    labels: np.ndarray | None = None
    name: str = "dataset"
    image_shape: tuple[int, int] | None = None
    source: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if sp.issparse(self.records):
            self.records = binary_csr(self.records, self.where)
        else:
            arr = np.asarray(self.records)
            if arr.ndim != 2:
                raise DataError(f"{self.where}: records must be a 2-d array, got {arr.ndim}-d")
            _check_binary(arr, self.where)
            self.records = arr.astype(np.uint8, copy=False)
        if self.records.shape[1] == 0:
            raise DataError(f"{self.where}: empty dataset (no item columns)")
        if len(self.item_names) != self.n_items:
            raise DataError(f"{self.where}: {len(self.item_names)} item names for {self.n_items} items")
        if self.labels is not None:
            try:  # numpy's own message would quote the offending (private) label
                self.labels = np.asarray(self.labels, dtype=np.int64)
            except (TypeError, ValueError, OverflowError):
                raise DataError(f"{self.where}: labels must be integers") from None
            if self.labels.shape != (self.n_records,):  # counts are private: not shown
                raise DataError(f"{self.where}: labels must hold one integer per record")

    @property
    def where(self) -> str:
        """Where the records came from, for messages (the file, else the dataset's name)."""
        return self.source or self.name

    n_records = property(lambda self: int(self.records.shape[0]),
                         doc="Number of records: private, never released as is.")
    n_items = property(lambda self: int(self.records.shape[1]), doc="Number of items: the declared, public universe.")

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.records)

    def dense(self, dtype: type = np.float32) -> np.ndarray:
        """The records as a dense array (beware: n x m)."""
        if self.is_sparse:
            return self.records.toarray().astype(dtype, copy=False)
        return self.records.astype(dtype, copy=False)

    def subset(self, index: Sequence[int] | np.ndarray) -> BinaryDataset:
        """The records at ``index`` (labels and metadata follow)."""
        idx = np.asarray(index)
        return BinaryDataset(
            records=self.records[idx],
            item_names=self.item_names,
            labels=None if self.labels is None else self.labels[idx],
            name=self.name,
            image_shape=self.image_shape,
            source=self.source,
            meta=dict(self.meta),
        )

    def record_lengths(self) -> np.ndarray:
        """Number of items in each record."""
        return np.asarray(self.records.sum(axis=1)).ravel().astype(np.int64)


def drop_short_records(dataset: BinaryDataset, min_items: int) -> BinaryDataset:
    """The records holding at least ``min_items`` items (``data.min_items``, a declared public fact).

    A rule applied to each record on its own, whatever the others hold: adding or removing one
    record adds or removes at most that record afterwards, so whatever is DP under add/remove
    neighbours on the result is DP on the input. How many records were dropped is private: it
    is neither returned nor shown.
    """
    if min_items <= 0:
        return dataset
    keep = np.flatnonzero(dataset.record_lengths() >= min_items)
    if keep.size == dataset.n_records:
        return dataset
    return dataset.subset(keep)


def drop_undeclared_labels(dataset: BinaryDataset, k: int) -> BinaryDataset:
    """The records whose label lies in the declared set 0..k-1 (``partition.k`` labels).

    Like ``drop_short_records``, a rule applied to each record alone (DP under add/remove is
    kept), and the number dropped is never shown: an error naming an undeclared label would
    tell whoever reads it something about the private records.
    """
    if dataset.labels is None:
        return dataset
    labels = np.asarray(dataset.labels)
    keep = np.flatnonzero((labels >= 0) & (labels < k))
    return dataset if keep.size == dataset.n_records else dataset.subset(keep)
