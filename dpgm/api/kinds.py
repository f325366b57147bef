"""What the API was given and gives back: the input's kind (array, sparse, DataFrame, dataset)
and its conversion to and from a BinaryDataset."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError as SklearnNotFittedError

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError, DpgmError

InputKindName = Literal["array", "sparse", "dataframe", "dataset"]


class NotFittedError(DpgmError, SklearnNotFittedError):
    """A Synthesizer was asked for samples, a report or a save before ``fit`` (a scikit-learn
    NotFittedError, so a ValueError and an AttributeError too)."""


def as_dataset(data: Any, name: str = "data") -> BinaryDataset:
    """A BinaryDataset from an array, a sparse matrix, a DataFrame of 0/1 columns or a BinaryDataset."""
    if isinstance(data, BinaryDataset):
        return data
    if _is_frame(data):
        try:
            return BinaryDataset(records=data.to_numpy(), item_names=[str(c) for c in data.columns], name=name)
        except (DataError, TypeError, ValueError):
            raise DataError("fit: the DataFrame's columns are not all 0/1; for a table of categories and numbers "
                            "declare a schema: Synthesizer(schema=...) (`dpgm schema data.csv` drafts one; "
                            "docs/guide/tables.md)") from None
    records = data.tocsr() if sp.issparse(data) else np.asarray(data)
    if records.ndim != 2:
        raise ConfigError(f"fit: data must be 2-d (records x items), got shape {records.shape}")
    return BinaryDataset(records=records, item_names=[str(j) for j in range(records.shape[1])], name=name)


def _is_frame(data: Any) -> bool:
    """A pandas DataFrame, recognised without importing pandas."""
    return hasattr(data, "columns") and hasattr(data, "to_numpy") and hasattr(data, "dtypes")


def _kept_dtype(dtype: Any) -> str:
    """The dtype synthetic records get for an input of ``dtype``: bool, integer and float dtypes
    are kept (0/1 fits each), anything else (object, pandas extension types) becomes uint8."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return "bool" if str(dtype).lower() == "boolean" else "uint8"
    return dt.name if dt.kind in "biuf" else "uint8"


def _json_label(label: Any) -> Any:
    """A column label as JSON keeps it: str, int, float and bool as they are, others as text."""
    if isinstance(label, (bool, np.bool_)):
        return bool(label)
    if isinstance(label, (int, np.integer)):
        return int(label)
    if isinstance(label, (float, np.floating)):
        return float(label)
    return label if isinstance(label, str) else str(label)


@dataclass(frozen=True)
class InputKind:
    """What ``fit`` was given, so that ``sample`` returns the same kind (saved with a release)."""

    kind: InputKindName
    dtype: str = "uint8"  # array, sparse: the records' dtype
    columns: list[Any] | None = None  # dataframe: the column labels
    dtypes: list[str] | None = None  # dataframe: each column's dtype
    sparse_array: bool = False  # sparse: a scipy sparse array (csr_array) rather than a matrix
    dense: bool = True  # dataset: records dense (else CSR)
    image_shape: tuple[int, int] | None = None  # dataset: the image shape, if any

    @classmethod
    def of(cls, data: Any) -> InputKind:
        if isinstance(data, BinaryDataset):
            return cls("dataset", dense=not sp.issparse(data.records), image_shape=data.image_shape)
        if _is_frame(data):
            return cls("dataframe", columns=[_json_label(c) for c in data.columns],
                       dtypes=[_kept_dtype(d) for d in data.dtypes])
        if sp.issparse(data):
            return cls("sparse", dtype=_kept_dtype(data.dtype), sparse_array=isinstance(data, sp.sparray))
        return cls("array", dtype=_kept_dtype(np.asarray(data).dtype))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> InputKind:
        shape = saved.get("image_shape")
        return cls(**{**saved, "image_shape": tuple(shape) if shape else None})

    def restore(self, records: np.ndarray | sp.csr_matrix, item_names: list[str],
                labels: np.ndarray | None = None) -> Any:
        """``records`` (dense 0/1 or CSR) as this kind of data."""
        if self.kind == "dataset":
            out = sp.csr_matrix(records) if not self.dense else as_dense(records)
            return BinaryDataset(records=out, item_names=list(item_names), labels=labels, name="synthetic",
                                 image_shape=self.image_shape)
        if self.kind == "sparse":
            matrix = sp.csr_array if self.sparse_array else sp.csr_matrix
            return matrix(records, dtype=np.dtype(self.dtype))
        if self.kind == "array":
            return as_dense(records).astype(self.dtype, copy=False)
        import pandas as pd  # a DataFrame went in, so pandas is there

        dense = as_dense(records)
        columns = self.columns if self.columns is not None and len(self.columns) == dense.shape[1] else item_names
        dtypes = self.dtypes if self.dtypes is not None and len(self.dtypes) == dense.shape[1] else ["uint8"]
        if len(set(dtypes)) == 1:
            frame = pd.DataFrame(dense.astype(dtypes[0], copy=False))
        else:
            frame = pd.DataFrame({j: dense[:, j].astype(dt) for j, dt in enumerate(dtypes)})
        frame.columns = list(columns)
        return frame


def as_dense(records: np.ndarray | sp.spmatrix) -> np.ndarray:
    return records.toarray().astype(np.uint8, copy=False) if sp.issparse(records) else np.asarray(records)
