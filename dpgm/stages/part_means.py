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
from torch import Tensor, nn

from dpgm.clustering.noisy_lloyd import part_sums
from dpgm.config import Config
from dpgm.data.chunks import ChunkedRecords, summed
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
#: Means are kept in [FLOOR, 1 - FLOOR] so that their logits are finite (small: a floor adds
#: mass to rare items, FLOOR per part).
FLOOR = 1e-5
#: Calibration: samples per round (one seeded stream), rounds at most, and the largest shift that ends it.
CALIBRATION_SAMPLES = 20_000
CALIBRATION_ROUNDS = 10
CALIBRATION_TOLERANCE = 1e-3
#: Calibration with data.min_items: logit steps at most (``_accepted_shift``).
ACCEPTED_STEPS = 50
#: Calibration's shifts (``monotone_root``): Newton or bisection steps at most, and the step (in logits) that ends them.
NEWTON_STEPS = 100
SHIFT_TOLERANCE = 1e-5
#: Calibration's moments: rows summed per block (``_moments``; [128, 2,000] float buffers fit in cache).
MOMENT_ROWS = 128


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
    # per item, across parts: no part below 0 or above its size, the item's noisy total kept
    means = project_to_total(sums, sums.sum(axis=0), caps=sizes) / sizes[:, None]
    if keep_total:
        means = part_total_kept(means, np.maximum(sums.sum(axis=1) / sizes, least))
    return np.clip(means, FLOOR, 1.0 - FLOOR)


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
    """Set the model's output bias to logit(``probs``) [n_items] (Hinton 2010, section 8.1), or to the model's own
    ``bias_at(probs)`` where its outputs are not Bernoulli (dpgm.models.table_vae: log p)."""
    bias = model.output_bias()
    probs = torch.as_tensor(probs, dtype=bias.dtype)
    bias.copy_(model.bias_at(probs) if hasattr(model, "bias_at") else torch.logit(probs))


def bias_shift(logits: Tensor, target: Tensor, *, min_items: int = 0) -> Tensor:
    """Per item, the shift d with mean over rows of sigmoid(logits + d) = target (``monotone_root``).

    The mean is increasing in d and runs from 0 to 1; the bracket puts every logit below -20 (mean
    < 3e-9) and above 20 (mean > 1 - 3e-9), around any target in [FLOOR, 1 - FLOOR]: one bracket for
    every item, from the smallest and largest logit of all (a reduction per item costs 40 times more).
    With ``min_items`` > 0 the frequencies are those among rows' records of at least that many
    items (``accepted_frequencies``): from the plain solution, logit steps until they match.
    """
    low, high = (value.double() for value in torch.aminmax(logits))
    goal = target.double()
    shift = monotone_root(_moments(logits, per_item=True), goal, (-high - 20.0).expand_as(goal),
                          (-low + 20.0).expand_as(goal), top=1.0).to(logits.dtype)
    if min_items > 0:
        shift = _accepted_shift(logits, target, shift, min_items)
    return shift


def total_shift(logits: Tensor, target: float) -> float:
    """The one shift d, added to every item's logit, with mean over rows of sum_i sigmoid(logits + d) = ``target``.

    The expected number of items per record is increasing in d, from 0 to n_items; at the bracket's
    ends every logit is below -40 or above 40, around any target in (0, n_items) (``monotone_root``).
    """
    low, high = (value.double() for value in torch.aminmax(logits))
    shift = monotone_root(_moments(logits, per_item=False), torch.tensor(float(target), dtype=torch.float64),
                          -high - 40.0, -low + 40.0, top=float(logits.shape[-1]))
    return float(shift)


def _moments(logits: Tensor, *, per_item: bool) -> Callable[[Tensor], tuple[Tensor, Tensor, Tensor]]:
    """At a shift d: the means over rows of p = sigmoid(logits + d), of 1 - p (as sigmoid(-logits - d): exact near
    1) and of the derivative p (1 - p), per item or summed over items (in double). The rows are taken MOMENT_ROWS at a
    time in two reused buffers that stay in cache, each block's sums added in double: whole passes over ``logits``
    cost three times as much (memory traffic, not arithmetic), and a fresh buffer more than the arithmetic."""
    rows, dims = logits.shape[0], (0,) if per_item else tuple(range(logits.dim()))
    p, q = torch.empty_like(logits[:MOMENT_ROWS]), torch.empty_like(logits[:MOMENT_ROWS])

    def at(shift: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        step = shift.to(logits.dtype)
        value = rest = slope = torch.zeros((), dtype=torch.float64, device=logits.device)
        for start in range(0, rows, MOMENT_ROWS):
            block = logits[start:start + MOMENT_ROWS]
            pb, qb = p[: len(block)], q[: len(block)]
            torch.add(block, step, out=pb)
            torch.neg(pb, out=qb).sigmoid_()
            pb.sigmoid_()
            value = value + pb.sum(dim=dims).double()
            rest = rest + qb.sum(dim=dims).double()
            slope = slope + pb.mul_(qb).sum(dim=dims).double()
        return value / rows, rest / rows, slope / rows

    return at


def monotone_root(moments: Callable[[Tensor], tuple[Tensor, Tensor, Tensor]], target: Tensor, lo: Tensor,
                  hi: Tensor, *, top: float) -> Tensor:
    """Per entry, d in [lo, hi] with g(d) = ``target``, g increasing from 0 to ``top`` (``moments``: g(d), top - g(d),
    g'(d)), the target inside the bracket: Newton steps from 0 on log(g / (top - g)), near linear in d for means of
    sigmoids, each evaluation narrowing the bracket, a step that leaves it bisecting it instead; they stop when the
    largest step is below SHIFT_TOLERANCE (a few passes, where bisection to float precision takes 60)."""
    goal = torch.log(target) - torch.log(top - target)
    shift = torch.zeros_like(target).clamp(lo, hi)
    for _ in range(NEWTON_STEPS):
        value, rest, slope = moments(shift)
        gap = goal - torch.log(value) + torch.log(rest)
        above = gap < 0  # the root lies below the shift
        hi, lo = torch.where(above, shift, hi), torch.where(above, lo, shift)
        newton = shift + gap * value * rest / (top * slope)
        inside = torch.isfinite(newton) & (newton >= lo) & (newton <= hi)
        moved = torch.where(inside, newton, (lo + hi) / 2)
        largest = float((moved - shift).abs().max())
        shift = moved
        if largest < SHIFT_TOLERANCE:
            break
    return shift


def _accepted_shift(logits: Tensor, target: Tensor, shift: Tensor, min_items: int) -> Tensor:
    """Fixed-point steps shift += logit(target) - logit(accepted frequency), at most ACCEPTED_STEPS.

    Each item's accepted frequency rises with its own shift; the steps stop when the largest is
    below CALIBRATION_TOLERANCE or a step stops shrinking the error (targets no model of this
    family reaches: say, noisy means summing to fewer than ``min_items`` items).
    """
    goal = torch.logit(target)
    worst = math.inf
    for _ in range(ACCEPTED_STEPS):
        step = goal - torch.logit(accepted_frequencies(logits + shift, min_items).clamp(FLOOR / 10, 1 - FLOOR / 10))
        largest = float(step.abs().max())
        if largest < CALIBRATION_TOLERANCE or largest >= worst:
            break
        worst = largest
        shift = shift + step
    return shift


def accepted_frequencies(logits: Tensor, min_items: int) -> Tensor:
    """Per item, P(item | record holds >= ``min_items`` items), records drawn item by item from
    Bernoulli(sigmoid(logits)) rows [R, n]: the frequencies of the records a release keeps.

    Exact: P(x_i = 1, len >= m) = p_i P(other items >= m - 1) and P(len >= m) come from the counts'
    distribution (Poisson binomial), kept below m only, items added one at a time from the left
    (prefix) and from the right (suffix); item i's others are its prefix and suffix convolved.
    """
    p = torch.sigmoid(logits.double())
    if min_items <= 0:
        return p.mean(dim=0).to(logits.dtype)
    rows, n = p.shape
    m = min_items
    if m == 1:  # P(x_i = 1, len >= 1) = p_i
        accept = 1.0 - torch.prod(1.0 - p, dim=1)
        return (p.mean(dim=0) / accept.mean().clamp_min(1e-300)).to(logits.dtype)
    prefix = torch.zeros(n + 1, rows, m, dtype=p.dtype)
    suffix = torch.zeros(n + 1, rows, m, dtype=p.dtype)
    prefix[0, :, 0] = 1.0
    suffix[n, :, 0] = 1.0
    for i in range(n):  # P(count of items < i = c), and of items > n - 1 - i, for c < m
        prefix[i + 1] = _add_item(prefix[i], p[:, i])
        suffix[n - 1 - i] = _add_item(suffix[n - i], p[:, n - 1 - i])
    accept = 1.0 - prefix[n].sum(dim=-1)  # [R]: P(len >= m)
    # P(others < m - 1) = sum over a + b <= m - 2 of prefix[a] suffix[b] = sum_a prefix[a] S[m - 2 - a],
    # S the suffix counts' cumulative distribution: one product instead of m^2 / 2
    tail = suffix[1:, :, : m - 1].cumsum(dim=-1).flip(-1)
    below = (prefix[:n, :, : m - 1] * tail).sum(dim=-1).T
    joint = (p * (1.0 - below)).mean(dim=0)
    return (joint / accept.mean().clamp_min(1e-300)).to(logits.dtype)


def _add_item(counts: Tensor, p: Tensor) -> Tensor:
    """Counts' distribution [R, m] (truncated below m) after one more Bernoulli(p) item [R]."""
    out = counts * (1.0 - p).unsqueeze(-1)
    out[:, 1:] += counts[:, :-1] * p.unsqueeze(-1)
    return out


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
        else:  # Bernoulli items, or the model's own outputs (dpgm.models.table_vae: one softmax per attribute)
            shift = getattr(model, "frequency_shift", bias_shift)(logits, target, min_items=min_items)
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
