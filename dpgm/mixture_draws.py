"""Draws from a released mixture: a part by its noisy share, then a record from that part's model.

The primitive every release builds on (``dpgm.release``): post-processing of the released models
and noisy part sizes. A record with fewer than ``data.min_items`` items is drawn again from its
part (``part_records``); ``check_acceptance`` stops a release whose models almost never give one.
"""

from __future__ import annotations

import numpy as np
import torch

from dpgm.artifact import ReleasedMixture
from dpgm.clustering.base import size_shares
from dpgm.errors import DpgmError
from dpgm.models.draws import choose

#: A release gives up when, after at least MIN_DRAWS draws, fewer than MIN_ACCEPTANCE of them held
#: ``data.min_items`` items: the draws stay within max(MIN_DRAWS, n / MIN_ACCEPTANCE) plus one chunk.
MIN_DRAWS = 10_000
MIN_ACCEPTANCE = 0.01


def draw_records(mixture: ReleasedMixture, c: int, probs: torch.Tensor, generator: torch.Generator,
                 threshold: float | None, min_items: int = 0, *,
                 systematic: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """Up to ``c`` records (uint8 [<= c, m]), their parts and how many were drawn: part by noisy size, then
    the part's model, redrawing from the same part every record of fewer than ``min_items`` items
    (``part_records``; a part that almost never draws one gives fewer); ``systematic``: the parts and the
    records drawn systematically (``dpgm.models.draws``), else independently."""
    parts = choose(probs, c, generator, systematic=systematic)
    out = torch.zeros(c, mixture.n_items, dtype=torch.uint8)
    keep = torch.ones(c, dtype=torch.bool)
    drawn = 0
    for j in torch.unique(parts).tolist():
        where = (parts == j).nonzero(as_tuple=True)[0]
        if j == len(mixture.models):  # the part of empty records (``mixture_shares``): all zeros
            drawn += len(where)
            continue
        records, tried = part_records(mixture.models[j], len(where), generator, threshold, min_items, systematic)
        out[where[: len(records)]] = records
        keep[where[len(records):]] = False
        drawn += tried
    if bool(keep.all()):  # no copy of the chunk when every slot holds a record
        return out.numpy(), parts.numpy(), drawn
    return out[keep].numpy(), parts[keep].numpy(), drawn


def part_records(model: torch.nn.Module, count: int, generator: torch.Generator, threshold: float | None,
                 min_items: int, systematic: bool = True) -> tuple[torch.Tensor, int]:
    """Up to ``count`` records of one part's model holding >= ``min_items`` items, and how many were drawn.

    Rejected records are redrawn from the SAME part: each part's model is conditioned on the public
    fact, and its share stays its noisy size, which counts real records that all hold the fact. A
    part stops after max(MIN_DRAWS, count / MIN_ACCEPTANCE) draws (a model that almost never draws
    such a record, say a near-empty part's); the release then fills its slots from new draws of
    every part (``dpgm.release.sample_chunks``), so only that part's share shrinks.
    """
    kept: list[torch.Tensor] = []
    have = drawn = 0
    limit = max(MIN_DRAWS, count / MIN_ACCEPTANCE)
    while have < count and drawn < limit:
        want = count - have
        if threshold is None:
            records = model.sample(want, generator, systematic=systematic).to(torch.uint8)
        else:
            records = (model.sample_probs(want, generator) >= threshold).to(torch.uint8)
        drawn += want
        if min_items > 0:
            records = records[records.sum(dim=1) >= min_items]
        kept.append(records)
        have += len(records)
    return torch.cat(kept)[:count], drawn


def mixture_shares(mixture: ReleasedMixture) -> np.ndarray:
    """Each part's share of the release: the noisy part sizes, then the noisy count of empty records
    as part k when the run set them aside (``partition.empty_part_noise_multiplier``), projected
    together onto non-negative shares (``size_shares``: no mass added)."""
    if mixture.empty_size is None:
        return size_shares(mixture.noisy_sizes)
    return size_shares(np.append(np.asarray(mixture.noisy_sizes, dtype=np.float64), mixture.empty_size))


def check_acceptance(accepted: int, drawn: int, min_items: int) -> None:
    """Refuse to go on drawing when the models almost never give a record of ``min_items`` items."""
    if drawn >= MIN_DRAWS and accepted < MIN_ACCEPTANCE * drawn:
        raise DpgmError(
            f"only {accepted} of {drawn} synthetic records held at least data.min_items = {min_items} items "
            f"(fewer than {MIN_ACCEPTANCE:.0%}): the models almost never draw such records; "
            f"lower data.min_items or train longer")
