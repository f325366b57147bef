"""Global item pairs the release is made consistent with (``model.pairs_noise_multiplier``).

Each part's model learns correlations from its part alone, under DP-SGD's noise, so a pair of
items the whole data couples can come out weaker or stronger in the release. This stage measures,
over all records, a spanning tree of item pairs as MST does (McKenna, Miklau, Sheldon 2021):
n_items - 1 rounds of an exponential mechanism pick the edges (``item_pairs.grow_trees`` with one
part, scored against independence at the noisy item frequencies), then the chosen pairs'
co-occurrence counts are released with Gaussian noise. The release then draws records whose item
and pair frequencies equal these (``dpgm.models.tilt``: a maximum-entropy reweighting of the
models' draws, post-processing).

The clip (``model.pairs_clip``): ``means`` scales each record to the bound of the part sums (the
sensitivity argument of ``item_pairs``), and the item frequencies are those of the noisy part
means weighted by the noisy part sizes. ``balanced`` clips at the length that balances the clip's
bias against this one release's noise (``length_bound.balanced_bound``: measured once, the counts
afford a longer clip than the k part means), and releases every item's clipped total in the same
vector as the item frequencies: a record holds |x| items and at most |x| - 1 tree edges, so,
scaled to the bound B, it moves either half by at most B; with the items weighted by a
(``model.pairs_item_weight``), the vector by less than sqrt(a^2 + 1) B.

Output: {"edges": [e, 2] item pairs, "targets": [m + e] item then pair frequencies over the records
this stage sees (counts over the noisy number of records), projected onto what the items allow}.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from dpgm.config import Config
from dpgm.data.chunks import summed
from dpgm.data.dataset import BinaryDataset
from dpgm.models.tilt import tilt_targets
from dpgm.privacy.mechanisms import floor_counts, gaussian_release
from dpgm.stages.base import DictStage, StageContext
from dpgm.stages.item_pairs import PairCounts, grow_trees, plain_counts, weighted_pair_counts
from dpgm.stages.length_bound import balanced_bound, mass_kept, mean_bound

#: Ledger stage of the selections and the pair counts.
STAGE = "release_pairs"


def all_pair_counts(chunk: BinaryDataset, bound: float) -> PairCounts:
    """``PairCounts`` of every record in ``chunk`` as one part."""
    return PairCounts(weighted_pair_counts(chunk.records, bound)[None], plain_counts(chunk.records)[None])


def global_means(means: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """[m] item frequencies over all parts: the part means [k, m] weighted by the (non-negative) part sizes."""
    weights = np.maximum(np.asarray(sizes, dtype=np.float64), 0.0)
    total = weights.sum()
    return means.mean(axis=0) if total <= 0 else weights @ means / total


class ReleasePairsStage(DictStage):
    """The global tree of item pairs the release follows; output: {"edges", "targets"} (module docstring)."""

    name = STAGE
    streams = True
    line = ("grow one tree of item pairs over all records, each edge chosen privately, and measure its noisy "
            "pair counts (the release's item and pair frequencies follow them)")
    payload_keys = ("pairs",)

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return cfg.model.pairs_noise_multiplier is not None

    def payload(self) -> dict[str, Any]:
        """The edges and targets the release follows, and its pool of draws per record (``model.pairs_pool``)."""
        return {"pairs": {"edges": torch.as_tensor(np.asarray(self.output["edges"], dtype=np.int64)),
                          "targets": torch.as_tensor(np.asarray(self.output["targets"], dtype=np.float64)),
                          "pool": int(self.cfg.model.pairs_pool)}}

    def run(self, ctx: StageContext) -> dict[str, np.ndarray]:
        partition, means = ctx.output("partition"), ctx.output("part_means")
        sizes = floor_counts(partition.noisy_sizes)
        items = global_means(np.asarray(means, dtype=np.float64), sizes)
        if items.size < 2:  # one item: no pair to measure
            return {"edges": np.zeros((0, 2), dtype=np.int64), "targets": tilt_targets(items, np.zeros(0), [])}
        own = self.cfg.model.pairs_clip == "balanced"  # the items measured here too, at this clip
        sigma, weight = self.cfg.model.pairs_noise_multiplier, self.cfg.model.pairs_item_weight if own else 0.0
        spread = math.sqrt(weight * weight + 1.0)  # the release's sensitivity over the clip
        bound = (balanced_bound(self.cfg, ctx, noise_multiplier=sigma * spread / weight) if own  # the items' noise
                 else mean_bound(self.cfg, ctx))
        total = float(max(sizes.sum(), 1.0))
        counts = summed(ctx.data, lambda chunk: all_pair_counts(chunk, bound))  # this rank's
        (edges,) = grow_trees(counts.over_ranks().plain, np.array([total]), items[None],
                              epsilon=self.cfg.model.pairs_select_epsilon, accountant=ctx.accountant, rng=ctx.rng,
                              stage=STAGE)
        pairs = np.array(edges, dtype=np.int64)
        chosen = counts.weighted[0][pairs[:, 0], pairs[:, 1]]
        if own:  # the items' clipped sums (the diagonal) weighted beside the pairs: < sqrt(w^2 + 1) bound
            chosen = np.concatenate([weight * np.diag(counts.weighted[0]), chosen])
        noisy = gaussian_release(chosen, sensitivity=bound * spread, noise_multiplier=sigma,
                                 accountant=ctx.accountant, stage=STAGE, rng=ctx.rng)
        if own:
            items, noisy = np.clip(noisy[:items.size] / (weight * total), 0.0, 1.0), noisy[items.size:]
            return {"edges": pairs, "targets": tilt_targets(items, np.asarray(noisy) / total, pairs)}
        joints = np.asarray(noisy) / (total * mass_kept(self.cfg, ctx))  # the part means' debias, if any
        return {"edges": pairs, "targets": tilt_targets(items, joints, pairs)}
