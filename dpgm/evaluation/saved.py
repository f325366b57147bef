"""Saved baseline models: each model class says how it is saved (``state``) and loaded (``from_state``)
and registers under the kind its saved metadata names (``saved_as``), so a release saves and loads any
baseline by that kind without a chain of type checks. A state is JSON-ready metadata and named arrays:
a saved baseline loads without unpickling anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np
import scipy.sparse as sp

from dpgm.errors import ConfigError

Arrays = dict[str, np.ndarray]


class Saved(Protocol):
    """A baseline model that can be saved: its state, and the class method that rebuilds it."""

    saved_kind: str

    def state(self) -> tuple[dict[str, Any], Arrays]: ...

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: Arrays) -> Saved: ...


#: saved kind -> the model class that loads it.
SAVED: dict[str, type] = {}
C = TypeVar("C", bound=type)


def saved_as(kind: str) -> Callable[[C], C]:
    """Class decorator: ``kind`` names the class's saved state (``model_state`` / ``model_from_state``)."""

    def register(cls: C) -> C:
        if kind in SAVED:
            raise ConfigError(f"saved baseline kind {kind!r} is already registered")
        cls.saved_kind = kind  # type: ignore[attr-defined]
        SAVED[kind] = cls
        return cls

    return register


def model_state(model: Any) -> tuple[dict[str, Any], Arrays]:
    """A fitted baseline model as (JSON-ready metadata, named arrays): what a release saves."""
    if not isinstance(model, tuple(SAVED.values())):
        raise ConfigError(f"cannot save a baseline model of type {type(model).__name__}")
    meta, arrays = model.state()
    return {"kind": model.saved_kind, **meta}, arrays


def model_from_state(meta: dict[str, Any], arrays: Arrays) -> Any:
    """The model ``model_state`` saved: it samples exactly as the fitted one did."""
    cls = SAVED.get(str(meta.get("kind")))
    if cls is None:
        raise ConfigError(f"unknown saved baseline model kind {meta.get('kind')!r}")
    return cls.from_state(meta, arrays)  # type: ignore[attr-defined]


def csr_arrays(prefix: str, matrix: sp.spmatrix) -> Arrays:
    """A sparse matrix as named arrays (``csr_from`` reads them back)."""
    m = sp.csr_matrix(matrix)
    return {f"{prefix}_data": m.data, f"{prefix}_indices": m.indices, f"{prefix}_indptr": m.indptr,
            f"{prefix}_shape": np.asarray(m.shape, dtype=np.int64)}


def csr_from(prefix: str, arrays: Arrays) -> sp.csr_matrix:
    shape = tuple(int(s) for s in arrays[f"{prefix}_shape"])
    return sp.csr_matrix((arrays[f"{prefix}_data"], arrays[f"{prefix}_indices"], arrays[f"{prefix}_indptr"]),
                         shape=shape)
