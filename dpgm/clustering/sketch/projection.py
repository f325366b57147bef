"""Public projection of 0/1 records to the space where CL-OMPR decodes centroids.

Folded into the frequencies (Omega' = basis Omega, xi' = xi - mean basis Omega), so the sketch
is still one pass over the raw records; the decoder's box bounds every projected record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from dpgm.clustering.sketch.operator import SketchOperator
from dpgm.threads import serial_blas


@dataclass(frozen=True)
class Projection:
    """Public map of 0/1 records to the space where centroids are decoded: y = (x - mean) basis.

    ``basis`` (items x dims) is None for the identity. ``lower``/``upper`` bound every y (the
    decoder's box); all of it comes from public data or data-independent randomness.
    """

    kind: str
    basis: np.ndarray | None
    mean: np.ndarray | None
    lower: np.ndarray
    upper: np.ndarray

    @property
    def n_items(self) -> int:
        """Items of the raw records."""
        return len(self.lower) if self.basis is None else int(self.basis.shape[0])

    def sketch_operator(self, op: SketchOperator) -> SketchOperator:
        """The operator that sketches raw records as ``op`` sketches projected ones (Omega folded in)."""
        if self.basis is None:
            return op
        omega = self.basis @ op.omega
        return SketchOperator(omega, op.dither - self.mean @ omega, op.signature, op.r)

    def apply(self, records: Any) -> np.ndarray | sp.csr_matrix:
        """Projected records (dense), or the records themselves for the identity."""
        if self.basis is None:
            return records
        return np.asarray(records @ self.basis) - (self.mean @ self.basis)

    def lift(self, centres: np.ndarray) -> np.ndarray:
        """Centroids back in item space, clipped to [0, 1] (for reports and display only)."""
        if self.basis is None:
            return centres
        return np.clip(self.mean + centres @ self.basis.T, 0.0, 1.0)


def make_projection(
    n_items: int, dims: int | None, public: np.ndarray | None, rng: np.random.Generator
) -> Projection:
    """Identity (dims None or >= n_items); top principal directions of the public sample, box
    from its range; else a random orthonormal basis, box = the exact image of [0, 1]^items."""
    if dims is None or n_items <= dims:
        return Projection("none", None, None, np.zeros(n_items), np.ones(n_items))
    if public is not None:
        mean = public.mean(axis=0)
        centred = public - mean
        top = (n_items - dims, n_items - 1)  # the principal axes: top eigenvectors of the scatter
        with serial_blas():  # threads lose on a shared, busy machine
            basis = linalg.eigh(centred.T @ centred, subset_by_index=top)[1][:, ::-1]
        y = (public - mean) @ basis
        pad = 0.1 * (y.max(axis=0) - y.min(axis=0))
        return Projection("public_pca", basis, mean, y.min(axis=0) - pad, y.max(axis=0) + pad)
    basis = np.linalg.qr(rng.normal(size=(n_items, dims)))[0]
    lower, upper = np.minimum(basis, 0.0).sum(axis=0), np.maximum(basis, 0.0).sum(axis=0)
    return Projection("random", basis, np.zeros(n_items), lower, upper)
