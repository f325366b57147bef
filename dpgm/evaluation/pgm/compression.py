"""MST's domain compression (McKenna, Miklau, Sheldon 2021; private-pgm ``mechanisms/mst.py``).

The values of an attribute whose noisy 1-way count is below 3 sigma (its noise standard deviation)
are merged into one value, the attribute's last, before the pairs are selected and measured: rare
values share one cell instead of each costing noise. Built from released counts only, so it is
post-processing. Sampling undoes it: a merged value becomes one of the values it holds, uniformly.
A single value below the threshold is left as it is (merging it alone would only relabel it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.evaluation.pgm.workload import CodedRecords, TrueMarginals

#: A value is kept when its noisy count is at least this many noise standard deviations (the authors' 3).
THRESHOLD_SIGMAS = 3.0


@dataclass(frozen=True)
class Compression:
    """Per attribute: the original values kept (compressed value i is ``kept[j][i]``) and those merged
    into the attribute's last compressed value (empty: nothing merged)."""

    kept: tuple[np.ndarray, ...]
    merged: tuple[np.ndarray, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each attribute's number of compressed values."""
        return tuple(len(k) + bool(len(m)) for k, m in zip(self.kept, self.merged))

    @property
    def original_sizes(self) -> tuple[int, ...]:
        return tuple(len(k) + len(m) for k, m in zip(self.kept, self.merged))

    def merges(self, j: int) -> bool:
        """Whether attribute ``j`` has merged values."""
        return len(self.merged[j]) > 0

    def mapping(self, j: int) -> np.ndarray:
        """Attribute ``j``'s compressed value of each original value."""
        out = np.empty(len(self.kept[j]) + len(self.merged[j]), dtype=np.int64)
        out[self.kept[j]] = np.arange(len(self.kept[j]))
        out[self.merged[j]] = len(self.kept[j])
        return out

    def truth(self, truth: TrueMarginals) -> TrueMarginals:
        """The exact marginals of the records on the compressed values (``truth`` itself when nothing
        merges; else the code matrix is read, densely)."""
        active = [j for j in range(len(self.kept)) if self.merges(j)]
        if not active:
            return truth
        codes = np.column_stack([self.mapping(j)[truth.column(j)] if self.merges(j) else truth.column(j)
                                 for j in range(truth.n_items)])
        return TrueMarginals(CodedRecords(codes, self.sizes))

    def restore(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Records on the compressed values back on the original ones (a merged value: one of those it
        holds, uniformly; attributes in order). Post-processing."""
        out = np.empty(codes.shape, dtype=np.uint8 if max(self.original_sizes) <= 256 else np.int64)
        for j, (kept, merged) in enumerate(zip(self.kept, self.merged)):
            column = codes[:, j].astype(np.int64)
            rare = column == len(kept)
            out[~rare, j] = kept[column[~rare]]
            if len(merged):
                out[rare, j] = rng.choice(merged, int(rare.sum()))
        return out


def compression(noisy: Sequence[np.ndarray], sigma: float) -> Compression:
    """The compression of each attribute from its noisy 1-way counts ``noisy[j]`` (noise std ``sigma``)."""
    kept, merged = [], []
    for y in noisy:
        below = np.asarray(y) < THRESHOLD_SIGMAS * sigma
        if below.sum() < 2:
            below[:] = False
        kept.append(np.flatnonzero(~below))
        merged.append(np.flatnonzero(below))
    return Compression(tuple(kept), tuple(merged))
