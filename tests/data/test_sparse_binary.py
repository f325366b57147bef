"""A sparse input is checked 0/1 before any cast, as a dense one is: 257 is not a 1, -255 not a 1."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.api import Synthesizer
from dpgm.data import BinaryDataset
from dpgm.errors import DataError

FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.lil_matrix, sp.dia_matrix]


def bad(value: float, dtype: str) -> np.ndarray:
    dense = np.zeros((30, 4), dtype=dtype)
    dense[::3, 1] = 1
    dense[5, 2] = value
    return dense


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("value", "dtype"), [(257, "int16"), (-255, "int16"), (2, "uint8"), (0.5, "float64"),
                                              (np.nan, "float32"), (256.0 + 1.0, "float64")])
def test_a_sparse_value_that_is_not_0_or_1_is_refused_as_a_dense_one(fmt, value, dtype) -> None:
    dense = bad(value, dtype)
    with pytest.raises(DataError, match="binary|NaN"):
        BinaryDataset(records=dense, item_names=list("abcd"))
    with pytest.raises(DataError, match="binary|NaN"):
        BinaryDataset(records=fmt(dense), item_names=list("abcd"))


def test_duplicate_entries_hold_their_sum() -> None:
    """An entry stored twice in a COO or CSR matrix is their sum (toarray's 2): not binary."""
    ones = np.array([1, 1], dtype=np.uint8)
    coo = sp.coo_matrix((ones, (np.array([0, 0]), np.array([1, 1]))), shape=(3, 2))
    csr = sp.csr_matrix((ones, np.array([1, 1]), np.array([0, 2, 2, 2])), shape=(3, 2))  # not canonical
    for matrix in (coo, csr):
        with pytest.raises(DataError, match="binary"):
            BinaryDataset(records=matrix, item_names=["a", "b"])
    assert csr.indices.tolist() == [1, 1]  # the caller's matrix left as it was


@pytest.mark.parametrize("fmt", [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array])
def test_binary_sparse_input_of_any_dtype_keeps_its_values(fmt) -> None:
    dense = bad(1, "int16")
    for dtype in ("bool", "int64", "float32"):
        data = BinaryDataset(records=fmt(dense.astype(dtype)), item_names=list("abcd"))
        assert data.records.dtype == np.uint8 and sp.isspmatrix_csr(data.records)
        np.testing.assert_array_equal(data.records.toarray(), dense)


@pytest.mark.parametrize("method", ["dpgm", "marginals"])
@pytest.mark.parametrize("value", [257, -255])
def test_synthesizer_fit_refuses_a_sparse_non_binary_value(method, value) -> None:
    x = sp.csr_matrix(bad(value, "int16"))
    with pytest.raises(DataError, match="binary"):
        Synthesizer(epsilon=1.0, method=method, seed=0).fit(x)
