"""The sketch operator: S(X) = sum_i f(Omega^T x_i + xi) (.) b_i (Schellekens et al., SPARS 2019, eq. 2-3).

Public frequencies Omega (d x m), public dithers xi, the signature f (``signature.py``) and a
uniform random mask b_i with r of the m entries per record. ``SketchOperator.sum`` gives the
EXACT sum and the record count (a ``SketchSum``): private, never released as it is; sums of
disjoint shards add. ``private.py`` turns a sum into a release. S is a plain sum (no division by
the private n): n is released separately with noise, so nothing assumes a public n.

Every record's contribution is added in float64. With f_e the sum is then scaled by 1 -
CLIP_MARGIN (``dpgm.privacy.clipping``), as if each record's were: float32 cos and sin of a
phase can put |f_e| at 1 + 1e-7, above the bound the sensitivity assumes. f_q is exactly +-1.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgm.clustering.sketch.frequencies import FrequencyLaw, draw_frequencies
from dpgm.clustering.sketch.signature import C_F, GAIN, Signature, signature_parts, signature_sums
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.clipping import clip_target
from dpgm.progress import progress_scope, share_bar
from dpgm.threads import serial_blas

#: Entries of the (chunk x m) phase block computed at once (cache-sized): memory O(m + chunk).
CHUNK_ENTRIES = 128_000

Records = np.ndarray | sp.spmatrix | Iterable[np.ndarray | sp.spmatrix]


class OperatorMismatch(DataError, ValueError):
    """Sketches made by different operators (frequencies, dithers, signature or r) were combined."""


def _chunks(records: Records, rows: int) -> Iterator[np.ndarray | sp.spmatrix]:
    """Blocks of at most ``rows`` records from an array, a sparse matrix, or an iterable of blocks."""
    if isinstance(records, np.ndarray) or sp.issparse(records):
        if records.ndim != 2:
            raise DataError(f"records must be a 2-d array, got shape {records.shape}")
        for start in range(0, records.shape[0], rows):
            yield records[start : start + rows]
        return
    for block in records:
        if not sp.issparse(block):
            block = np.asarray(block)
            if block.ndim != 2:
                raise DataError(f"each block of records must be 2-d, got shape {block.shape}")
        for start in range(0, block.shape[0], rows):
            yield block[start : start + rows]


def random_subsets(rows: int, m: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(rows x size) indices, each row a uniform random size-subset of 0..m-1 (size <= m/2 is fastest).

    Draws with replacement, then redraws the repeats until none is left; every step treats the
    m labels alike, so each row is uniform over subsets and holds entry j with probability size/m.
    """
    idx = rng.integers(0, m, size=(rows, size))
    while size > 1:
        idx.sort(axis=1)
        repeat = np.zeros_like(idx, dtype=bool)
        repeat[:, 1:] = idx[:, 1:] == idx[:, :-1]
        count = int(repeat.sum())
        if count == 0:
            break
        idx[repeat] = rng.integers(0, m, size=count)
    return idx


@dataclass(frozen=True)
class SketchSum:
    """The EXACT (private) sketch sum sum_i f(Omega^T x_i + xi) (.) b_i and record count n.

    Sums of disjoint shards add (``+``). Never release this: ``release_sketch`` adds noise.
    """

    re: np.ndarray
    im: np.ndarray
    n: int
    fingerprint: str

    def __add__(self, other: SketchSum) -> SketchSum:
        check_same_operator(self.fingerprint, other.fingerprint)
        return SketchSum(self.re + other.re, self.im + other.im, self.n + other.n, self.fingerprint)


def check_same_operator(a: str, b: str) -> None:
    """Raise ``OperatorMismatch`` unless the two operator fingerprints are equal."""
    if a != b:
        raise OperatorMismatch(
            f"sketches come from different sketch operators (frequencies/signature/r differ: "
            f"fingerprint {a} vs {b})"
        )


@dataclass(frozen=True, eq=False)
class SketchOperator:
    """Public frequencies ``omega`` (d x m), dithers ``dither`` (m), signature and r per record."""

    omega: np.ndarray
    dither: np.ndarray
    signature: Signature = "exp"
    measurements: int | None = None

    def __post_init__(self) -> None:
        if self.signature not in C_F:
            raise ConfigError(f"partition.options.signature: unknown signature {self.signature!r}")
        if self.omega.ndim != 2 or self.dither.shape != (self.omega.shape[1],):
            raise ValueError(
                f"omega must be d x m and dither of length m, got {self.omega.shape}, {self.dither.shape}"
            )
        r = self.m if self.measurements is None else int(self.measurements)
        if not 1 <= r <= self.m:
            raise ConfigError(f"partition.options.measurements: r must be in 1..m={self.m}, got {r}")
        object.__setattr__(self, "measurements", r)

    @classmethod
    def draw(
        cls,
        dim: int,
        m: int,
        *,
        sigma2: float,
        rng: np.random.Generator,
        signature: Signature = "exp",
        measurements: int | None = None,
        law: FrequencyLaw = "adapted_radius",
    ) -> SketchOperator:
        """A fresh data-independent operator: frequencies from ``law`` at scale sigma2, uniform dithers."""
        omega = draw_frequencies(dim, m, sigma2=sigma2, rng=rng, law=law)
        return cls(omega, rng.uniform(0.0, 2.0 * math.pi, size=m), signature, measurements)

    @property
    def m(self) -> int:
        """Sketch size: the number of frequencies."""
        return int(self.omega.shape[1])

    @property
    def dim(self) -> int:
        """Input dimension of the records the operator sketches."""
        return int(self.omega.shape[0])

    @property
    def r(self) -> int:
        return int(self.measurements)  # type: ignore[arg-type]

    @property
    def alpha(self) -> float:
        """The subsampling parameter alpha_r = r / m of eq. (3)."""
        return self.r / self.m

    @property
    def gain(self) -> float:
        return GAIN[self.signature]

    def fingerprint(self) -> str:
        """Identifies the operator (frequencies, dithers, signature, r): sketches merge only if equal."""
        h = hashlib.sha256()
        for arr in (self.omega, self.dither):
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        h.update(f"{self.signature}/{self.r}".encode())
        return h.hexdigest()[:16]

    @staticmethod
    def _phases(
        block: np.ndarray | sp.spmatrix, omega: np.ndarray, dither: np.ndarray, out: np.ndarray
    ) -> np.ndarray:
        """Omega^T x + xi for a block of records, written into ``out[:rows]`` (dtype of omega)."""
        theta = out[: block.shape[0]]
        if sp.issparse(block):
            theta[...] = sp.csr_matrix(block, dtype=omega.dtype) @ omega
        else:
            np.matmul(np.asarray(block, dtype=omega.dtype), omega, out=theta)
        theta += dither
        return theta

    def sum(
        self,
        records: Records,
        rng: np.random.Generator,
        *,
        chunk_rows: int | None = None,
        dtype: type = np.float32,
    ) -> SketchSum:
        """Exact sketch sum of eq. (3) in one streaming pass, O(m + chunk) memory.

        ``records``: array, sparse matrix or an iterable of blocks; the masks come from ``rng``.
        """
        rows = chunk_rows or max(1, CHUNK_ENTRIES // self.m)
        re, im = np.zeros(self.m), np.zeros(self.m)
        n = 0
        omega, dither = self.omega.astype(dtype), self.dither.astype(dtype)
        # Scratch reused by every block: fresh large temporaries per block cost page faults.
        scratch = np.empty((2, rows, self.m), dtype=dtype), np.empty((rows, self.m), dtype=np.int32)
        total = records.shape[0] if isinstance(records, np.ndarray) or sp.issparse(records) else 0
        with serial_blas(), progress_scope(enabled=total > 0), \
                share_bar("partition: sketch sum") as bar:  # small blocks: BLAS threads only add overhead
            for block in _chunks(records, rows):
                if block.shape[1] != self.dim:
                    raise DataError(
                        f"records have {block.shape[1]} columns, the sketch operator expects {self.dim}"
                    )
                theta = self._phases(block, omega, dither, scratch[0][0])
                n += theta.shape[0]
                fr, fi = self._block_sums(theta, rng, scratch[0][1], scratch[1])
                re += fr
                im += fi
                bar.advance_share(n, total)  # a share: n is private (a bar only when the total is known)
        shrink = clip_target(1.0) if self.signature == "exp" else 1.0  # see the module docstring
        return SketchSum(re * shrink, im * shrink, n, self.fingerprint())

    def _block_sums(
        self, theta: np.ndarray, rng: np.random.Generator, work: np.ndarray, iwork: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Masked column sums of f(theta): all m entries (r = m), the r kept (r <= m/2), or all
        entries minus the m - r dropped ones (r > m/2)."""
        keep = 2 * self.r <= self.m
        re, im = (0.0, 0.0) if keep else signature_sums(theta, self.signature, work, iwork)
        if self.r == self.m:
            return re, im
        sign = 1.0 if keep else -1.0
        idx = random_subsets(theta.shape[0], self.m, self.r if keep else self.m - self.r, rng)
        fr, fi = signature_parts(np.take_along_axis(theta, idx, axis=1), self.signature)
        flat = idx.ravel()
        re = re + sign * np.bincount(flat, weights=fr.ravel(), minlength=self.m)
        im = im + sign * np.bincount(flat, weights=fi.ravel(), minlength=self.m)
        return re, im
