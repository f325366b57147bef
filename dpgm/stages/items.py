"""The noisy choice of the m most frequent items (``data.top_items``): one Gaussian release.

Each record adds x / ||x||_2 to the count vector, so adding or removing one record moves it by
L2 norm at most 1; noise N(0, sigma^2) per item is one Gaussian mechanism, charged before the
noise is drawn. The item universe must be public (an items file or a declared ``data.n_items``).
Records left with fewer than ``data.min_items`` chosen items are dropped, the same per-record
rule as at load, so the models and the release agree.
"""

from __future__ import annotations

import numpy as np

from dpgm.data import Records, drop_short_records, restrict_items, summed, top_item_ids
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import clip_rows
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages.base import ArrayStage, StageContext

#: Ledger stage of this release.
STAGE = "items"


def noisy_top_item_ids(dataset: Records, m: int, *, noise_multiplier: float, accountant: Accountant,
                       rng: np.random.Generator, stage: str = STAGE) -> np.ndarray:
    """Ids of the m items with the largest noisy normalised counts (charged to ``accountant``)."""
    if m < 1:
        raise ConfigError(f"top items: m must be >= 1, got {m}")
    weighted = summed(dataset, lambda c: np.asarray(  # x / ||x||, less the rounding margin; float64
        clip_rows(c.records, 1.0, dtype=np.float64).sum(axis=0)).ravel())
    noisy = gaussian_release(weighted, sensitivity=1.0, noise_multiplier=noise_multiplier,
                             accountant=accountant, stage=stage, rng=rng)
    return top_item_ids(noisy, m)


class ItemsStage(ArrayStage):
    """Keep the ``data.top_items`` items with the largest noisy counts; output: their ids."""

    name = STAGE
    streams = True
    line = "choose the most frequent items from noisy item counts"
    switch = "data.top_items"

    def run(self, ctx: StageContext) -> np.ndarray:
        m, n_items = self.cfg.data.top_items, ctx.data.n_items
        if m >= n_items:  # nothing to choose: no release
            return np.arange(n_items)
        return noisy_top_item_ids(ctx.data, m, noise_multiplier=self.cfg.data.top_items_noise_multiplier,
                                  accountant=ctx.accountant, rng=ctx.rng)

    def narrow(self, data: BinaryDataset) -> BinaryDataset:
        if len(self.output) >= data.n_items:
            return data
        return drop_short_records(restrict_items(data, np.asarray(self.output)), self.cfg.data.min_items)
