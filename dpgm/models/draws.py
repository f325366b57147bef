"""Systematic draws: each record distributed as the model's, the sums over records steadier.

Records drawn independently carry sampling noise on every statistic of a release: an item of
frequency p appears n p +- sqrt(n p (1 - p)) times in n records, on top of the noise the models
already carry. Systematic sampling with unequal probabilities (Madow 1949) keeps every draw's law
and removes that noise from the sums: within a column, the records are put in random order, their
probabilities are summed in that order, and an item is drawn where the running sum passes one of
the points v, v + 1, v + 2, ... (v uniform in [0, 1)). Each record holds the item with probability
exactly its p, whatever the others' are, and the column holds it sum(p) times, rounded up or down.
Columns draw independently, so a record's items given its probabilities are independent, as the
model's. The parts of a release are chosen the same way (``choose``). Post-processing randomness
only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from dpgm.streams import draw_device


def bernoulli_draws(probs: Tensor, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
    """0/1 draws at ``probs`` [n, m] (in [0, 1]), in probs' dtype: systematic within each column (module docstring),
    or independent. Worked on item by item ([m, n]); the running sums in float64, so that no record's chance moves
    by rounding."""
    n, m = probs.shape
    if not systematic or n == 0:
        return torch.bernoulli(probs.to(draw_device(generator, probs.device)), generator=generator).to(probs.device)
    order = torch.stack([torch.randperm(n, generator=generator) for _ in range(m)])  # each item's order of records
    running = torch.gather(probs.detach().T.float().cpu().clamp(0.0, 1.0).contiguous(), 1, order)
    running = torch.cumsum(running, 1, dtype=torch.float64)
    running.add_(torch.rand(m, 1, generator=generator, dtype=torch.float64)).floor_()
    passed = torch.diff(running, dim=1, prepend=torch.zeros(m, 1, dtype=torch.float64)).float()
    x = torch.empty(m, n).scatter_(1, order, passed)
    return x.T.to(device=probs.device, dtype=probs.dtype)


def choose(probs: Tensor, count: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
    """``count`` indices [count] drawn by ``probs`` (non-negative, not all zero): systematic sampling from one
    uniform offset, so index j comes count p_j times rounded up or down, then shuffled (each draw alone has
    law ``probs``); or independent draws."""
    if not systematic:
        return torch.multinomial(probs, count, replacement=True, generator=generator)
    cumulative = torch.cumsum(probs.to(torch.float64), 0)
    points = (torch.arange(count, dtype=torch.float64) + torch.rand(1, generator=generator, dtype=torch.float64))
    picks = torch.searchsorted(cumulative, points / count * cumulative[-1], right=True)
    picks = picks.clamp_max(len(probs) - 1)
    return picks[torch.randperm(count, generator=generator)]
