"""A private bound on record lengths (``model.mean_clip_quantile``): the clip of the part sums.

The noisy part means and item totals scale every record to L2 norm at most a bound C; a binary
record of L items has norm sqrt(L), so a bound below the typical length shrinks most records
and biases every mean down (a table written as attribute=value items holds one item per
attribute in every record), while a bound far above it buys noise for nothing. Here the bound
follows the data through one Gaussian release: the histogram of record lengths (sensitivity 1,
``record_lengths.noisy_length_shares``), and C = sqrt(L) for the smallest L whose noisy share of
records with at most L items reaches the quantile q (lengths whose noisy count is within about the largest noise
of that many lengths read as empty, ``tail_cut``; where no single length passes, lengths summed in wider bins,
``coarse_shares``), raised (``model.mean_clip_balance``) to the
length that balances what the clip takes from the means against the noise it saves
(``balanced_length``) when that is longer: with little noise, a clip at the quantile would cost
more in bias than it saves. Post-processing of the released histogram; ``model.mean_clip``, when
stated, is not used. With ``model.mean_debias`` the part means are then divided by the share of item
mass (or of records) the clip keeps, read off the same histogram (``kept_share``): at large n the clip's bias, not
the noise, is what the means' error is made of.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from dpgm.config import Config
from dpgm.stages.base import Stage, StageContext
from dpgm.stages.dependence import mean_noise, parts
from dpgm.stages.empty_records import STAGE as EMPTY
from dpgm.stages.empty_records import EmptyRecordsStage, none_empty
from dpgm.stages.record_lengths import length_shares, noisy_length_counts

#: Ledger stage of this release.
STAGE = "length_bound"
#: The quantile and the balanced length read a length's noisy count as zero below this many noise stds.
TAIL_NOISE = 2.0
#: That cut grows with the number K of lengths to the largest noise of about TAIL_BY_LENGTHS x K draws,
#: sqrt(2 ln(TAIL_BY_LENGTHS K)) stds (785 pixel counts: 3.65; at 2 stds a dozen empty lengths pass, the quantile
#: lands on one and the clip of hundreds of items puts its noise on every rare pixel), and the quantile reads lengths
#: summed in wider bins where no single length passes (``coarse_shares``).
TAIL_BY_LENGTHS = 1.0


def tail_noise(lengths: int) -> float:
    """The noise stds below which a length's noisy count reads as zero, among ``lengths`` lengths."""
    return max(TAIL_NOISE, math.sqrt(2.0 * math.log(max(TAIL_BY_LENGTHS * lengths, 1.0))))


def coarse_shares(counts: np.ndarray, shares: np.ndarray, *, count_noise: float) -> np.ndarray | None:
    """The raw noisy length ``counts`` summed over bins of w = 1, 2, 4, ... lengths, at the smallest w where some
    bin's sum passes ``tail_noise`` of the bins x its noise (count_noise sqrt(w)): each such bin's sum spread over its
    lengths as the projected ``shares`` within it (evenly where they hold none), renormalised; None where no w has
    one (post-processing). A broad histogram (pixels: a hundred lengths of a few records each) is read in bins its
    noise does not swamp, a sharp one (baskets of one or two items) where its largest shares are."""
    width = coarse_width(counts, count_noise=count_noise)
    return None if width is None else binned_shares(counts, shares, width, count_noise=count_noise)


def binned_shares(counts: np.ndarray, shares: np.ndarray, width: int, *, count_noise: float) -> np.ndarray:
    """``coarse_shares`` at a given bin ``width`` (``coarse_width``'s): each passing bin's sum spread as the
    projected ``shares`` within it, renormalised."""
    starts = np.arange(0, counts.size, width)
    binned = np.add.reduceat(counts, starts)
    kept = binned >= tail_noise(binned.size) * count_noise * math.sqrt(width)
    within = np.add.reduceat(shares, starts)
    bin_of = np.arange(counts.size) // width
    inner = np.where(within[bin_of] > 0, shares / np.where(within[bin_of] > 0, within[bin_of], 1.0),
                     1.0 / np.diff(np.append(starts, counts.size))[bin_of])
    spread = np.where(kept[bin_of], binned[bin_of] * inner, 0.0)
    return spread / spread.sum()


def coarse_width(counts: np.ndarray, *, count_noise: float) -> int | None:
    """The smallest bin width w = 1, 2, 4, ... at which some bin's sum of the noisy length ``counts`` passes
    ``tail_noise`` of the bins x its noise (count_noise sqrt(w)); None where none does (``coarse_shares``)."""
    width = 1
    while width < counts.size:
        binned = np.add.reduceat(counts, np.arange(0, counts.size, width))
        if (binned >= tail_noise(binned.size) * count_noise * math.sqrt(width)).any():
            return width
        width *= 2
    return None


def reads_dense(read: np.ndarray, width: int | None) -> bool:
    """Whether the read length shares, in bins of ``width`` (``coarse_width``), hold no record in the first two bins
    past length 0 while some bin passes its cut: no short record to be seen beside long ones (dense records; the
    empty records' count is then read with dpgm.rules.EMPTY_DENSE_CUT)."""
    return width is not None and read.size > 1 and float(read[1:2 * width].sum()) <= 0.0


def quantile_length(shares: np.ndarray, q: float) -> int:
    """The smallest length L >= 1 with shares[0..L] adding up to at least ``q``."""
    reached = np.flatnonzero(np.cumsum(shares) >= q - 1e-12)
    return max(1, int(reached[0]) if len(reached) else len(shares) - 1)


def mean_bound(cfg: Config, ctx: StageContext) -> float:
    """The L2 bound of the part sums and item totals: sqrt of the private length bound when this stage
    ran, else ``model.mean_clip``, else sqrt(number of items) (never clips)."""
    length = ctx.output(STAGE)
    if length is not None:
        return math.sqrt(length)
    return math.sqrt(ctx.data.n_items) if cfg.model.mean_clip is None else float(cfg.model.mean_clip)


def tail_cut(shares: np.ndarray, *, records: float, count_noise: float) -> np.ndarray:
    """The noisy length shares with every length whose noisy count is below ``tail_noise`` x ``count_noise``
    (the histogram's noise std) read as empty."""
    return np.where(shares * records >= tail_noise(shares.size) * count_noise, shares, 0.0)


def cut_shares(shares: np.ndarray, *, records: float, count_noise: float) -> np.ndarray:
    """The noisy length shares after ``tail_cut``, renormalised (post-processing): the quantile then reads the
    lengths the records hold, not the noise that the projection leaves on a small histogram's empty lengths
    (docs/results-rules.md, "The length bound's quantile after the tail cut"). Where no length survives the cut
    (a few hundred records under a small budget), the largest share alone: the length most likely held, where the
    raw shares would put the quantile among the noise of the empty lengths (a clip of 90 items for baskets of 1)."""
    h = tail_cut(shares, records=records, count_noise=count_noise)
    if h.sum() > 0:
        return h / h.sum()
    return (np.arange(shares.size) == np.argmax(shares)).astype(np.float64)


def clip_scale(clip_length: np.ndarray | int, lengths: np.ndarray) -> np.ndarray:
    """min(1, sqrt(L / l)): the scale the clip sqrt(L) puts on a record of l items (broadcast)."""
    return np.minimum(1.0, np.sqrt(np.asarray(clip_length, dtype=np.float64) / np.maximum(lengths, 1.0)))


def kept_share(shares: np.ndarray, length: int, *, records: float, count_noise: float, by: str = "mass") -> float:
    """The share the clip sqrt(L) keeps, from the noisy length shares h (``tail_cut``): of item mass,
    sum_l h_l l min(1, sqrt(L / l)) / sum_l h_l l (``by`` mass), or of non-empty records, the same
    without the factor l (``by`` records). The part means divided by it are unbiased on average over
    items when an item's presence grows with the length as the length does (mass) or not at all (records)."""
    lengths = np.arange(shares.size, dtype=np.float64)
    h = tail_cut(shares, records=records, count_noise=count_noise)
    weight = h * (lengths if by == "mass" else lengths > 0)
    if weight.sum() <= 0:
        return 1.0
    return float(weight @ clip_scale(length, lengths) / weight.sum())


def balanced_length(shares: np.ndarray, *, records: float, noise_multiplier: float, parts: int, n_items: int,
                    count_noise: float = 0.0, weight: float = 1.0) -> int:
    """The L minimising lost(L)^2 + weight noise(L)^2, both relative to the item mass T = n sum_l h_l l:
    lost(L) = sum_l h_l l (1 - sqrt(L / l))^+ / sum_l h_l l, the share of item mass the clip sqrt(L)
    removes, and noise(L) = sigma sqrt(k L) m / T, the noise of an average item's total summed over
    the k parts' means (sigma the means' multiplier). Lengths whose noisy count is below
    TAIL_NOISE x ``count_noise`` (the histogram's noise std) count as empty: at a few thousand
    records the noise alone would put mass in the long tail and call for a clip no record needs.
    All from released shares h and public numbers."""
    lengths = np.arange(shares.size, dtype=np.float64)
    h = tail_cut(shares, records=records, count_noise=count_noise)
    mass = float(h @ lengths)
    if mass <= 0:
        return 1
    candidates = np.arange(1, shares.size)
    kept = clip_scale(candidates[:, None], lengths[None, :])
    lost = ((1.0 - kept) * h * lengths).sum(axis=1) / mass
    noise = noise_multiplier * np.sqrt(parts * candidates) * n_items / (max(records, 1.0) * mass)
    return int(candidates[np.argmin(lost**2 + weight * noise**2)])


class LengthBoundStage(Stage):
    """The q-quantile of record lengths (raised to the balanced length) from a noisy histogram; output: L (an int)."""

    name = STAGE
    streams = True
    line = "bound the records' lengths from a noisy length histogram (the clip of the groups' means)"
    switch = "model.mean_clip_quantile"

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        # the released histogram (its shares and noisy total), which ``mass_kept`` and ``balanced_bound`` read
        self.shares: np.ndarray | None = None
        self.records = 0.0

    def run(self, ctx: StageContext) -> int:
        noise = self.cfg.model.length_bound_noise_multiplier
        counts = noisy_length_counts(ctx.data, noise_multiplier=noise, accountant=ctx.accountant, rng=ctx.rng,
                                     stage=STAGE)
        shares, records = length_shares(counts)
        width = coarse_width(counts, count_noise=noise)
        coarse = None if width is None else binned_shares(counts, shares, width, count_noise=noise)
        read = cut_shares(shares, records=records, count_noise=noise) if coarse is None else coarse
        length = quantile_length(read, self.cfg.model.mean_clip_quantile)
        empty = ctx.stages.get(EMPTY)
        if isinstance(empty, EmptyRecordsStage):
            if reads_dense(read, width):
                empty.read_as_dense()
            if none_empty(read, records=records, cut=tail_noise(read.size) * noise):
                empty.read_as_none()
        if self.cfg.model.mean_clip_balance is not None:
            length = max(length, balanced_length(shares, records=records,
                                                 noise_multiplier=mean_noise(self.cfg, ctx),
                                                 parts=parts(self.cfg, ctx), n_items=ctx.data.n_items,
                                                 count_noise=noise, weight=self.cfg.model.mean_clip_balance))
        self.shares, self.records = shares, records
        return length

    def state_dict(self) -> dict[str, Any]:
        """The shares as a tensor: a checkpoint is read back with ``weights_only``, which refuses numpy arrays."""
        shares = None if self.shares is None else torch.as_tensor(self.shares)
        return {"output": self.output, "shares": shares, "records": float(self.records)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        shares = state.get("shares")
        self.output, self.records = state["output"], state.get("records", 0.0)
        self.shares = None if shares is None else shares.numpy()


def mass_kept(cfg: Config, ctx: StageContext) -> float:
    """What the part means are divided by: the share the private length bound's clip keeps, as
    ``model.mean_debias`` reads it, when that is not off and the bound was measured; else 1."""
    stage = ctx.stages.get(STAGE)
    if cfg.model.mean_debias == "off" or not isinstance(stage, LengthBoundStage) or stage.shares is None:
        return 1.0
    return kept_share(stage.shares, stage.output, records=stage.records,
                      count_noise=cfg.model.length_bound_noise_multiplier, by=cfg.model.mean_debias)


def balanced_bound(cfg: Config, ctx: StageContext, *, noise_multiplier: float) -> float:
    """sqrt of the length that balances what the clip takes against the noise of ONE release over all records
    of multiplier ``noise_multiplier`` (``balanced_length`` with one part and ``model.mean_clip_balance``), at
    least the means' bound: a statistic measured once can afford a longer clip than the k part means. The
    means' bound when the length bound was not measured or not balanced. Post-processing of the histogram."""
    stage, weight = ctx.stages.get(STAGE), cfg.model.mean_clip_balance
    if not isinstance(stage, LengthBoundStage) or stage.shares is None or weight is None:
        return mean_bound(cfg, ctx)
    records = stage.records
    length = balanced_length(stage.shares, records=records, noise_multiplier=noise_multiplier, parts=1,
                             n_items=ctx.data.n_items, count_noise=cfg.model.length_bound_noise_multiplier,
                             weight=weight)
    return math.sqrt(max(length, ctx.output(STAGE)))
