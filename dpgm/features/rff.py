"""Random Fourier features for the Gaussian RBF kernel exp(-gamma ||x - y||^2) (Rahimi & Recht).

Frequencies w ~ N(0, 2 gamma I) (variance 2 gamma; docs/paper.md, note 3 corrects the paper's
footnote 4). Two maps (docs/paper.md, note 2):

- "paired": z(x) = sqrt(1/D) [cos(W x), sin(W x)], 2D features, ||z(x)|| = 1 up to rounding;
- "cosine": z(x) = sqrt(2/D) cos(W x + b), b ~ U[0, 2 pi), D features; ||z(x)||^2 can reach 2.

Rows of either map are clipped to norm 1 (the bound the DP sums rely on) unless ``clip=False``,
with the rounding margin of ``dpgm.privacy.clipping``: float32 rounding leaves a paired row
at norm 1 + 6e-8 and a rescaled cosine row at 1 + 2e-7.

Frequencies are drawn from the generator passed in, independently of any data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp

from dpgm.errors import DataError
from dpgm.privacy.clipping import clip_rows

FeatureMap = Literal["paired", "cosine"]
FEATURE_MAPS: tuple[str, ...] = ("paired", "cosine")

#: Rows transformed per chunk: bounds the float32 copy of the input and the projection.
DEFAULT_BATCH_ROWS = 8192


def rbf_kernel(x: np.ndarray, y: np.ndarray, gamma: float) -> np.ndarray:
    """Exact Gaussian RBF kernel matrix exp(-gamma ||x_i - y_j||^2) (for tests and checks)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sq = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    return np.exp(-gamma * np.maximum(sq, 0.0))


@dataclass(frozen=True)
class RandomFourierFeatures:
    """A drawn feature map: ``frequencies`` (m x D, float32) and, for "cosine", ``phases`` (D,)."""

    frequencies: np.ndarray
    phases: np.ndarray | None
    kind: FeatureMap
    gamma: float

    @classmethod
    def draw(
        cls,
        n_inputs: int,
        n_frequencies: int,
        *,
        gamma: float,
        kind: FeatureMap,
        rng: np.random.Generator,
    ) -> RandomFourierFeatures:
        """Draw D frequencies w ~ N(0, 2 gamma I_m) (and phases for "cosine") from ``rng``."""
        if kind not in FEATURE_MAPS:
            raise ValueError(f"feature map must be one of {FEATURE_MAPS}, got {kind!r}")
        if not (n_inputs >= 1 and n_frequencies >= 1):
            raise ValueError(
                f"need n_inputs >= 1 and n_frequencies >= 1, got {n_inputs}, {n_frequencies}"
            )
        if not (math.isfinite(gamma) and gamma > 0):
            raise ValueError(f"gamma must be finite and > 0, got {gamma!r}")
        w = rng.normal(0.0, math.sqrt(2.0 * gamma), size=(n_inputs, n_frequencies)).astype(
            np.float32
        )
        b = (
            rng.uniform(0.0, 2.0 * math.pi, size=n_frequencies).astype(np.float32)
            if kind == "cosine"
            else None
        )
        return cls(frequencies=w, phases=b, kind=kind, gamma=float(gamma))

    n_inputs = property(lambda self: int(self.frequencies.shape[0]), doc="m: input dimension.")
    n_frequencies = property(lambda self: int(self.frequencies.shape[1]), doc="D: frequencies drawn.")

    @property
    def dim(self) -> int:
        """Output dimension: 2D for "paired", D for "cosine"."""
        return 2 * self.n_frequencies if self.kind == "paired" else self.n_frequencies

    #: L2 bound on every output row (enforced by clipping, with its rounding margin).
    norm_bound: ClassVar[float] = 1.0

    def _project(self, x: np.ndarray | sp.spmatrix) -> np.ndarray:
        """W^T x for a chunk of rows (sparse matmul for CSR input), float32."""
        if sp.issparse(x):
            return np.asarray((x.astype(np.float32) @ self.frequencies), dtype=np.float32)
        return np.asarray(x, dtype=np.float32) @ self.frequencies

    def _map_chunk(self, x: np.ndarray | sp.spmatrix, clip: bool) -> np.ndarray:
        proj = self._project(x)
        d = self.n_frequencies
        if self.kind == "paired":
            out = np.empty((proj.shape[0], 2 * d), dtype=np.float32)
            np.cos(proj, out=out[:, :d])
            np.sin(proj, out=out[:, d:])
            out *= np.float32(math.sqrt(1.0 / d))
        else:
            out = proj
            out += self.phases
            np.cos(out, out=out)
            out *= np.float32(math.sqrt(2.0 / d))
        return clip_rows(out, self.norm_bound) if clip else out

    def transform(
        self,
        x: np.ndarray | sp.spmatrix,
        *,
        clip: bool = True,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> np.ndarray:
        """z(x) for every row of ``x`` (dense array or CSR), computed in chunks; float32 (n x dim)."""
        if x.ndim != 2 or x.shape[1] != self.n_inputs:
            raise DataError(
                f"feature map expects rows of {self.n_inputs} values, got shape {x.shape}"
            )
        if sp.issparse(x):
            x = sp.csr_matrix(x)
        n = x.shape[0]
        out = np.empty((n, self.dim), dtype=np.float32)
        for start in range(0, n, batch_rows):
            stop = min(start + batch_rows, n)
            out[start:stop] = self._map_chunk(x[start:stop], clip)
        return out
