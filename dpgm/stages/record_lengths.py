"""Noisy histogram of record lengths (one release): the release draws records to follow it.

A generative model gives every item a small probability, so its records' lengths (number of
items) drift from the data's: sparse data get empty records that no real record matches, and
queries over many items ("holds any of these items") undercount. The histogram of lengths
0..n_items is one Gaussian mechanism of L2 sensitivity 1 (adding or removing a record changes
one bin by one), charged before the noise is drawn; its noisy counts are projected onto
non-negative ones with the same total (no mass added) and normalised. The release then tilts a
surplus of drawn records towards the histogram's lengths while each part keeps its share, its items'
frequencies and its tree's pairs' (post-processing, dpgm/release.py and dpgm/models/tilt.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from dpgm.config import Config
from dpgm.data import Records, summed
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import gaussian_release, project_to_total
from dpgm.stages.base import ArrayStage, StageContext

#: Ledger stage of this release.
STAGE = "record_lengths"


def noisy_length_counts(data: Records, *, noise_multiplier: float, accountant: Accountant,
                        rng: np.random.Generator, stage: str = STAGE) -> np.ndarray:
    """The noisy counts [n_items + 1] of records of each length 0..n_items: one charged Gaussian release."""
    m = data.n_items
    counts = summed(data, lambda c: np.bincount(c.record_lengths(), minlength=m + 1)).astype(np.float64)
    return gaussian_release(counts, sensitivity=1.0, noise_multiplier=noise_multiplier,
                            accountant=accountant, stage=stage, rng=rng)


def length_shares(noisy: np.ndarray) -> tuple[np.ndarray, float]:
    """The shares of the noisy length counts projected onto non-negative ones with their total (no mass added),
    and that total (post-processing)."""
    total = max(float(noisy.sum()), 1.0)
    kept = project_to_total(noisy, total)
    return kept / kept.sum(), total


def noisy_length_shares(data: Records, *, noise_multiplier: float, accountant: Accountant,
                        rng: np.random.Generator, stage: str = STAGE,
                        with_total: bool = False) -> np.ndarray | tuple[np.ndarray, float]:
    """Shares [n_items + 1] of records of each length 0..n_items, from one charged Gaussian release
    (``with_total``: and the noisy number of records, the projected histogram's total)."""
    shares, total = length_shares(noisy_length_counts(data, noise_multiplier=noise_multiplier,
                                                      accountant=accountant, rng=rng, stage=stage))
    return (shares, total) if with_total else shares


class RecordLengthsStage(ArrayStage):
    """The noisy length histogram (``model.length_noise_multiplier``), or the length bound's
    (``model.lengths_from_bound``: nothing more released); output: the length shares."""

    name = STAGE
    streams = True
    line = "count the records of each length (noisy histogram)"
    payload_keys = ("length_shares",)

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return cfg.model.follows_lengths

    def run(self, ctx: StageContext) -> np.ndarray:
        if self.cfg.model.lengths_from_bound:  # the bound's stage ran first (it imports this module: no cycle here)
            from dpgm.stages.length_bound import STAGE as BOUND

            return ctx.stages[BOUND].shares
        return noisy_length_shares(ctx.data, noise_multiplier=self.cfg.model.length_noise_multiplier,
                                   accountant=ctx.accountant, rng=ctx.rng)

    def payload(self) -> dict[str, Any]:
        """The length shares the release draws records to follow."""
        return {"length_shares": torch.as_tensor(np.asarray(self.output, dtype=np.float64))}
