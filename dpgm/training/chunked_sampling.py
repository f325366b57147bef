"""Poisson batches from records read in chunks: one pass over the file draws a window of steps.

For records larger than memory (``dpgm.data.chunks``) a step cannot index the records at random.
Instead one pass draws the batches of ``window`` steps at once: in a chunk of c records, step t
takes M ~ Binomial(c, q) of them, chosen uniformly without replacement. That is exactly a Poisson
sample (every record joins every step independently with probability q), as the accountant
assumes, and only the window's sampled rows are held. Window w draws from a generator seeded by
(the run's stream seed, the rank, w): ranks sample their shards independently, and a run resumed
at any step draws the same batches again (bit-identical resume; the resumed window's pass is read
once more).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from dpgm.data.chunks import ChunkedRecords
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.binary_rows import BinaryRows
from dpgm.privacy import collective


class ChunkedPoissonBatches:
    """The Poisson batches (rows, part of each row) of every step, ``window`` steps per pass."""

    def __init__(self, data: ChunkedRecords, parts_of: Callable[[BinaryDataset], np.ndarray], q: float,
                 window: int, seed: int, device: str = "cpu") -> None:
        if window < 1 or not 0 < q <= 1:
            raise ConfigError(f"chunked sampling needs a window >= 1 and q in (0, 1], got {window}, {q}")
        self.data, self.parts_of, self.q, self.window, self.seed = data, parts_of, q, window, int(seed)
        self.device = torch.device(device)
        self._held: tuple[int, list[tuple[sp.csr_matrix, np.ndarray]]] | None = None

    def batch(self, step: int) -> tuple[BinaryRows, Tensor]:
        """Step ``step``'s sampled rows [B, m] (by their ones) and their parts [B]."""
        w = step // self.window
        if self._held is None or self._held[0] != w:
            self._held = (w, self._draw_window(w))
        rows, parts = self._held[1][step - w * self.window]
        return BinaryRows.from_csr(rows, self.device), torch.as_tensor(parts, dtype=torch.long)

    def _draw_window(self, w: int) -> list[tuple[sp.csr_matrix, np.ndarray]]:
        """One pass: the batches of steps w W .. (w + 1) W - 1."""
        rng = np.random.default_rng([self.seed, collective.rank(), w])  # each rank samples its own shard
        rows: list[list[sp.csr_matrix]] = [[] for _ in range(self.window)]
        parts: list[list[np.ndarray]] = [[] for _ in range(self.window)]
        for chunk in self.data.chunks():
            c = chunk.n_records
            if c == 0:
                continue
            picks = [np.sort(rng.choice(c, size=rng.binomial(c, self.q), replace=False)) for _ in range(self.window)]
            chosen = np.unique(np.concatenate(picks))
            if chosen.size == 0:
                continue
            part = np.full(c, -1, dtype=np.int64)
            part[chosen] = self.parts_of(chunk.subset(chosen))  # the rule on the sampled records only
            for t, idx in enumerate(picks):
                if idx.size:
                    rows[t].append(chunk.records[idx])
                    parts[t].append(part[idx])
        m = self.data.n_items
        return [(sp.vstack(r, format="csr") if r else sp.csr_matrix((0, m), dtype=np.uint8),
                 np.concatenate(p) if p else np.zeros(0, dtype=np.int64)) for r, p in zip(rows, parts)]
