"""Global item totals (``model.totals_noise_multiplier``): one Gaussian release the part means agree with.

Each part's noisy mean carries its own noise, so an item's frequency in the whole release
carries the noise of k releases where independent marginals carry one. This stage measures the
item totals once over all records (each record scaled to L2 norm at most the bound of the part sums,
the bound of the part sums, so one record moves the vector by at most that much: one Gaussian
mechanism, charged before the noise is drawn). The part sums are then made consistent with it
by generalised least squares (``consistent_sums``): the k part sums and the total are two
measurements of the same quantities, and the best linear unbiased estimate moves the part
sums so that they add up to the weighted combination of both. Post-processing only; with
``model.calibrate`` the release's item frequencies then follow these consistent means.
"""

from __future__ import annotations

import numpy as np

from dpgm.config import Config
from dpgm.data.chunks import summed
from dpgm.privacy.clipping import clip_rows
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages.base import ArrayStage, StageContext
from dpgm.stages.length_bound import mean_bound

#: Ledger stage of this release.
STAGE = "item_totals"


def consistent_sums(part_sums: np.ndarray, totals: np.ndarray, *, part_sigma: float, total_sigma: float) -> np.ndarray:
    """[k, m] part sums moved to agree with the measured totals [m] (GLS, Hay et al. 2010, section 4).

    Model: part_sums[j] = s_j + N(0, part_sigma^2), totals = sum_j s_j + N(0, total_sigma^2). The
    BLUE of s_j adds to each part the share part_sigma^2 / (k part_sigma^2 + total_sigma^2) of the
    disagreement totals - sum_j part_sums[j]; the corrected sums add up to the inverse-variance
    combination of the two estimates of the total.
    """
    k = part_sums.shape[0]
    gap = np.asarray(totals, dtype=np.float64) - part_sums.sum(axis=0)
    return part_sums + gap[None, :] * part_sigma**2 / (k * part_sigma**2 + total_sigma**2)


class ItemTotalsStage(ArrayStage):
    """The noisy item totals over all records; output: the [m] noisy sums of the clipped records."""

    name = STAGE
    streams = True
    line = "measure every item's noisy total over all records (the groups' means are made to agree with it)"

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return cfg.model.totals_noise_multiplier is not None and cfg.model.output_bias == "noisy_mean"

    def run(self, ctx: StageContext) -> np.ndarray:
        bound = mean_bound(self.cfg, ctx)
        sums = summed(ctx.data, lambda chunk: np.asarray(clip_rows(chunk.records, bound, dtype=np.float64)
                                                         .sum(axis=0)).ravel())
        return gaussian_release(sums, sensitivity=bound, noise_multiplier=self.cfg.model.totals_noise_multiplier,
                                accountant=ctx.accountant, stage=STAGE, rng=ctx.rng)
