"""Noisy mean record of each part (one release): start every model at it, calibrate to it at the end.

Starting a Bernoulli output layer at the logit of the data mean is standard practice (Hinton
2010, "A practical guide to training RBMs", section 8.1). Under DP-SGD it matters far more:
clipping shares each record's gradient norm among all parameters, so the output bias learns
slowly and, from a neutral start, the background of MNIST digits stays grey. Here the mean is
private: per part, the sum of the records (each scaled to L2 norm <= ``clip``) plus
N(0, (sigma clip)^2 I), divided by the part's released noisy size. The parts are disjoint, so the
k sums are ONE Gaussian mechanism with L2 sensitivity ``clip`` (add/remove a record): one
``GaussianEvent(sigma)``, charged before the noise is drawn.

Calibration (``model.calibrate``) uses the same release once more, as post-processing: after
training, each part's output bias is shifted so that the model's expected item frequencies equal
the part's noisy mean (``true``), or by one amount for all items so that its expected number of
items per record equals the noisy mean's sum (``total``: an epsilon-10 conv release of MNIST drew
65-70% of the real ink). DP-SGD noise makes a trained model's item frequencies drift far more than
the noise of the means does, while its correlations between items survive the shift. When the
release redraws records with fewer than ``data.min_items`` items, the frequencies matched are
those of the records it keeps (``accepted_frequencies``), so the redraw adds no bias.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from dpgm.clustering.noisy_lloyd import part_sums
from dpgm.config import Config
from dpgm.data.chunks import ChunkedRecords, summed
from dpgm.models.calibration import CALIBRATION_TOLERANCE, FLOOR, total_shift
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import clip_rows
from dpgm.privacy.mechanisms import floor_counts, gaussian_release, project_to_total
from dpgm.progress import timed
from dpgm.stages.base import ArrayStage, StageContext
from dpgm.stages.dependence import mean_noise
from dpgm.stages.item_totals import consistent_sums
from dpgm.stages.length_bound import mass_kept, mean_bound
from dpgm.stages.model_choice import STAGE as CHOICE
from dpgm.stages.model_choice import untrained_choice, untrained_choice_entry

#: Ledger stage of this release.
STAGE = "part_means"
#: Calibration: samples per round (one seeded stream) and rounds at most (each round's shift: the model's
#: ``frequency_shift``, dpgm.models.calibration).
CALIBRATION_SAMPLES = 20_000
CALIBRATION_ROUNDS = 10
#: Each part's item means are read against their noise (``shrunk_to_items``): a part keeps
#: tau^2 / (tau^2 + PART_SHRINK s^2) of its mean's departure from the parts' weighted centre (0: kept whole).
PART_SHRINK = 1.0


def noisy_part_means(
    records: Any,
    assignments: np.ndarray | Callable[[Any], np.ndarray],
    noisy_sizes: np.ndarray,
    *,
    clip: float | None,
    noise_multiplier: float,
    accountant: Accountant,
    rng: np.random.Generator,
    totals: np.ndarray | None = None,
    totals_noise_multiplier: float | None = None,
    kept: float = 1.0,
    keep_total: bool = False,
    least: float = 0.0,
) -> np.ndarray:
    """[k, n_items] noisy per-part item frequencies in [FLOOR, 1 - FLOOR] (charged to ``accountant``); with
    ``keep_total`` each part's adding up to its noisy total, at least ``least`` (the fewest items a released record
    holds: ``part_total_kept``), else each clipped alone.

    ``totals`` (with its multiplier): the noisy item totals of the same clipped records, which
    the part sums are made consistent with (``item_totals.consistent_sums``).
    ``records`` may be ``ChunkedRecords`` (one pass), with ``assignments`` the partition's rule for a
    chunk's records (``Partition.rule``) in place of the array.
    ``kept``: the sums are divided by it, the share of item mass the clip keeps (``length_bound.mass_kept``).
    ``clip`` None means sqrt(n_items): no binary record is scaled down (one holding every item, by
    the 1e-6 rounding margin of ``clip_rows``), so the means are unbiased, at the price of more
    noise than a tighter public bound would need.
    """
    chunked, k = isinstance(records, ChunkedRecords), len(noisy_sizes)
    n_items = records.n_items if chunked else records.shape[1]
    bound = math.sqrt(n_items) if clip is None else float(clip)
    if chunked:
        sums = summed(records, lambda c: part_sums(clip_rows(c.records, bound), assignments(c.records), k)[1])
    else:
        sums = part_sums(clip_rows(records, bound), np.asarray(assignments), k)[1]
    sums = gaussian_release(sums, sensitivity=bound, noise_multiplier=noise_multiplier,
                            accountant=accountant, stage=STAGE, rng=rng)
    if totals is not None:  # agree with the global item totals (post-processing, item_totals.py)
        sums = consistent_sums(sums, totals, part_sigma=noise_multiplier, total_sigma=totals_noise_multiplier)
    sums = sums / kept
    sizes = floor_counts(noisy_sizes)
    if keep_total:  # each part's means read against the others' (a declared table's: per attribute, later)
        sums = shrunk_to_items(sums, sizes, noise_multiplier * bound / kept)
    # per item, across parts: no part below 0 or above its size, the item's total kept
    means = project_to_total(sums, sums.sum(axis=0), caps=sizes) / sizes[:, None]
    if keep_total:
        means = part_total_kept(means, np.maximum(sums.sum(axis=1) / sizes, least))
    return np.clip(means, FLOOR, 1.0 - FLOOR)


def shrunk_to_items(sums: np.ndarray, sizes: np.ndarray, std: float) -> np.ndarray:
    """[k, m] part sums whose means are pulled toward each item's mean over the parts by how far the parts' means of
    that item spread beyond their noise (``std``: a sum's noise std, so a part mean's is std / size). Per item, the
    spread tau^2 is Paule and Mandel's (``between_parts``), and a part of noise variance s^2 keeps
    tau^2 / (tau^2 + PART_SHRINK s^2) of its departure from the mean at weights 1 / (tau^2 + s^2): the random-effects
    estimate of each part's mean. An item rare in every part reads as rare in each, where a small part's noise alone
    made it frequent; an item the parts tell apart keeps each part's mean. Post-processing (docs/privacy.md, "Each
    part's means read against the others")."""
    if sums.shape[0] < 2 or PART_SHRINK <= 0 or std <= 0:  # one part, or no noise to read against
        return sums
    means, noise = sums / sizes[:, None], (std / sizes) ** 2  # noise: [k] each part mean's noise variance
    tau2, centre = between_parts(means, noise)
    keep = tau2[None, :] / (tau2[None, :] + PART_SHRINK * noise[:, None])
    return (centre + keep * (means - centre)) * sizes[:, None]


def between_parts(means: np.ndarray, noise: np.ndarray, rounds: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Per item of [k, m] ``means`` with noise variances ``noise`` [k]: the spread tau^2 of the true means about
    their centre, and that centre, weighted by 1 / (tau^2 + s^2). tau^2 solves sum_j (mean_j - centre)^2 /
    (tau^2 + s_j^2) = k - 1 (Paule and Mandel 1982; 0 where the noise alone explains the spread), by bisection:
    the sum falls as tau^2 grows. A part of a few noisy records weighs little, where an unweighted spread would
    be its noise."""
    def weighted(tau2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        weights = 1.0 / (tau2[None, :] + noise[:, None])
        centre = (weights * means).sum(axis=0) / weights.sum(axis=0)
        return (weights * (means - centre) ** 2).sum(axis=0), centre

    target = means.shape[0] - 1.0
    lo, hi = np.zeros(means.shape[1]), 2.0 * means.shape[0] * np.ptp(means, axis=0) ** 2 + 1e-12  # the sum <= 1 there
    for _ in range(rounds):
        mid = (lo + hi) / 2
        above = weighted(mid)[0] > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    tau2 = np.where(weighted(np.zeros_like(lo))[0] > target, (lo + hi) / 2, 0.0)
    return tau2, weighted(tau2)[1]


def part_total_kept(means: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """[k, m] means whose items are shifted together, per part, to add up to the part's noisy total (``totals``
    [k], the unclipped noisy means' sum), each within [0, 1] (``project_to_total`` along the items: the Norm-Sub of
    Wang et al. 2020). Clipping each noisy mean at 0 alone adds its noise's positive half to every rare item, which
    at a small budget doubles a record's length; the total is unbiased. Post-processing."""
    return project_to_total(means.T, totals, caps=np.ones(means.shape[1])).T


def release_min_items(cfg: Config) -> int:
    """Fewest items of a released record: ``data.min_items``, at least 1 when the empty records are a part."""
    split = cfg.partition.empty_part_noise_multiplier is not None
    return max(cfg.data.min_items, 1) if split else cfg.data.min_items


def table_parts(sizes: np.ndarray, means: np.ndarray, attributes: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(sizes [k], means [k, m]) of a declared table (``data.attributes``: every record holds one item per
    attribute) read off the part's noisy item sums: they add up to ``attributes`` x its size, so their
    total over ``attributes`` estimates the size with far less noise than the partition's own noisy count,
    which every mean shares (on chess at epsilon 1: about 8 records against about 29). The means then sum
    to ``attributes``. Post-processing; anything else passes through."""
    if attributes is None:
        return sizes, means
    scale = attributes / np.maximum(means.sum(axis=1), FLOOR)  # means = sums / size: size / scale = sum / attributes
    return sizes / scale, np.clip(means * scale[:, None], FLOOR, 1.0 - FLOOR)


@torch.no_grad()
def start_at_means(model: nn.Module, probs: Any) -> None:
    """Set the model's output bias to its ``bias_at(probs)`` [n_items]: logit(``probs``) for Bernoulli items (Hinton
    2010, section 8.1), log p for one softmax per attribute (dpgm.models.table_vae)."""
    bias = model.output_bias()
    bias.copy_(model.bias_at(torch.as_tensor(probs, dtype=bias.dtype)))


@torch.no_grad()
@timed("calibration")
def calibrate_to_means(model: nn.Module, probs: Any, *, min_items: int = 0, seed: int = 0,
                       total: bool = False) -> float:
    """Shift the output bias until the model's expected item frequencies equal ``probs``; post-processing.

    With ``total`` (``model.calibrate: total``), ONE shift for every item, until the expected number
    of items per record equals sum(``probs``): the model's overall density is matched and the noise
    of each item's mean is not copied (images: a zero-mean pixel's noisy mean). A VAE's logits move by
    exactly the shift, so the second round finds nothing left to do; an RBM's Gibbs chains respond to
    the shift, so rounds repeat until it is below the tolerance. Every round draws from the same seeded
    stream, so the rounds solve one fixed problem. With ``min_items`` > 0 the frequencies matched are
    those of the records the release keeps (per item only). Returns the last round's largest shift, in logits.
    """
    bias = model.output_bias()
    target = torch.as_tensor(probs, dtype=bias.dtype, device=bias.device)
    generator = torch.Generator()  # the CPU run's draws on any device (dpgm.streams)
    largest = math.inf
    for _ in range(CALIBRATION_ROUNDS):
        generator.manual_seed(seed)
        logits = model.sample_logits(CALIBRATION_SAMPLES, generator)
        if total:
            shift = torch.full_like(bias, total_shift(logits, float(target.sum())))
        else:  # Bernoulli items (bias_shift), or the model's own outputs (dpgm.models.table_vae: one softmax each)
            shift = model.frequency_shift(logits, target, min_items=min_items)
        bias += shift
        largest = float(shift.abs().max())
        if largest < CALIBRATION_TOLERANCE:
            break
    return largest


class PartMeansStage(ArrayStage):
    """Each part's noisy mean record (``model.output_bias: noisy_mean``); output: [k, n_items] means."""

    name = STAGE
    streams = True
    line = "measure each group's noisy mean record"
    switch = ("model.output_bias", "noisy_mean")

    def run(self, ctx: StageContext) -> np.ndarray:
        partition = ctx.output("partition")
        data = ctx.data
        if untrained_choice(self.cfg):  # a tree or independent items: the choice first, the means' noise follows it
            ctx.accountant.spend(CHOICE, untrained_choice_entry(self.cfg, data.n_items, ctx.output("dependence")))
        chunked = isinstance(data, ChunkedRecords)
        records, assignments = (data, partition.rule) if chunked else (data.records, partition.assignments)
        means = noisy_part_means(records, assignments, partition.noisy_sizes,
                                 clip=mean_bound(self.cfg, ctx), noise_multiplier=mean_noise(self.cfg, ctx),
                                 accountant=ctx.accountant, rng=ctx.rng, totals=ctx.output("item_totals"),
                                 totals_noise_multiplier=self.cfg.model.totals_noise_multiplier,
                                 kept=mass_kept(self.cfg, ctx), least=release_min_items(self.cfg),
                                 keep_total=self.cfg.data.attributes is None)  # a table's: per attribute, later
        if partition.fixed is not None:  # what the parts' definition fixes, in place of its noisy estimate
            items, frequencies = partition.fixed
            means[:, items] = np.clip(frequencies, FLOOR, 1.0 - FLOOR)
        return means
