"""Shifts of a model's output bias that meet target item frequencies: the calibration to the part means
(dpgm.stages.part_means) solves them on the logits of sampled records, after training (post-processing).

``bias_shift``: per item, d with mean over rows of sigmoid(logits + d) = target (Bernoulli items);
``total_shift``: one d for every item, meeting the expected number of items per record; with a release's
``min_items``, the frequencies among the records it keeps (``accepted_frequencies``, exact).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

#: Means are kept in [FLOOR, 1 - FLOOR] so that their logits are finite (small: a floor adds
#: mass to rare items, FLOOR per part).
FLOOR = 1e-5
#: The largest shift (in logits) that ends the calibration's rounds, and the min_items steps (``_accepted_shift``).
CALIBRATION_TOLERANCE = 1e-3
#: Calibration with data.min_items: logit steps at most (``_accepted_shift``).
ACCEPTED_STEPS = 50
#: Calibration's shifts (``monotone_root``): Newton or bisection steps at most, and the step (in logits) that ends them.
NEWTON_STEPS = 100
SHIFT_TOLERANCE = 1e-5
#: Calibration's moments: rows summed per block (``_moments``; [128, 2,000] float buffers fit in cache).
MOMENT_ROWS = 128


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
