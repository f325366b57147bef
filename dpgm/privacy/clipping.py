"""Per-record L2 clipping with a rounding margin, shared by every sum released with noise.

A sum released with noise of scale sigma C assumes that one record moves it by at most C. The
computed sum is floating point: a record scaled to norm exactly C can land at C (1 + 2e-7) once
its entries are rounded to float32. So every contribution is scaled to norm <= C (1 -
CLIP_MARGIN), its norm and scale computed in float64: rounding the scaled row to float32
(relative 6e-8 per entry) and summing in float64 then keep each record's effect below C. The
noise stays calibrated to C.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

Rows = np.ndarray | sp.csr_matrix

#: Relative margin below the clip norm: far above float64 rounding (1e-16) and float32 storage of
#: a scaled row (6e-8), far below anything the utility notices.
CLIP_MARGIN = 1e-6


def clip_target(bound: float) -> float:
    """The norm a contribution bounded by ``bound`` is scaled to: ``bound`` (1 - CLIP_MARGIN)."""
    return float(bound) * (1.0 - CLIP_MARGIN)


def row_norms(rows: Rows) -> np.ndarray:
    """L2 norm of every row (dense or CSR), accumulated in float64."""
    if sp.issparse(rows):
        sq = sp.csr_matrix(rows, dtype=np.float64, copy=True)
        sq.sum_duplicates()  # a duplicate entry adds to the value, not to the squares
        sq.data **= 2
        return np.sqrt(np.asarray(sq.sum(axis=1)).ravel())
    dense = np.asarray(rows)
    return np.sqrt(np.einsum("ij,ij->i", dense, dense, dtype=np.float64))


def clip_rows(rows: Rows, bound: float, dtype: type = np.float32) -> Rows:
    """A copy of ``rows`` (dense or CSR, as ``dtype``) with every row of norm > clip_target(bound)
    scaled, in float64, to norm clip_target(bound): each row's norm is then <= ``bound``."""
    target = clip_target(bound)
    if sp.issparse(rows):
        out = sp.csr_matrix(rows, dtype=np.float64, copy=True)
        out.sum_duplicates()
        norms = row_norms(out)
        scale = np.where(norms > target, target / np.maximum(norms, 1e-300), 1.0)
        out.data *= np.repeat(scale, np.diff(out.indptr))
        return sp.csr_matrix(out, dtype=dtype)
    norms = row_norms(rows)
    over = np.flatnonzero(norms > target)
    out = np.array(rows, dtype=dtype, copy=True)
    if over.size:
        scaled = np.asarray(rows)[over].astype(np.float64) * (target / norms[over])[:, None]
        out[over] = scaled.astype(dtype)
    return out
