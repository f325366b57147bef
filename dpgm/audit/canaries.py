"""The audit's canaries and their scores: canary i is a random base record plus a mark item only
it has; a score says how much the released model learnt that mark (white-box: how far the
weights reading it moved; black-box: its likelihood)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from dpgm.data.dataset import BinaryDataset


# ------------------------------------------------------------------ canaries and data
def make_canaries(base: BinaryDataset, m: int, rng: np.random.Generator) -> sp.csr_matrix:
    """m canaries over base.n_items + m items: a random base record plus mark item n_items + i."""
    rows = rng.integers(0, base.n_records, size=m)
    body = sp.csr_matrix(base.records[rows])
    marks = sp.identity(m, dtype=np.uint8, format="csr")
    return sp.hstack([body, marks], format="csr", dtype=np.uint8)


def training_records(
    base: BinaryDataset, canaries: sp.csr_matrix, included: np.ndarray
) -> np.ndarray | sp.csr_matrix:
    """The base records (marks all 0), then the included canaries; dense if the base is dense."""
    m = canaries.shape[1] - base.n_items
    padded = sp.hstack(
        [sp.csr_matrix(base.records), sp.csr_matrix((base.n_records, m), dtype=np.uint8)],
        format="csr",
    )
    records = sp.vstack([padded, canaries[np.flatnonzero(included)]], format="csr", dtype=np.uint8)
    return records if base.is_sparse else records.toarray()


# ------------------------------------------------------------------ scores
def input_weights(model: nn.Module) -> list[torch.Tensor]:
    """Weights [out, n_items] of the linear layers that read the record (VAE: the encoder's
    first layer; RBM: W and the visible bias): column j multiplies item j and nothing else."""
    n_items = int(model.n_items)  # type: ignore[arg-type]
    return [
        layer.weight
        for layer in model.modules()
        if isinstance(layer, nn.Linear) and layer.in_features == n_items
    ]


@torch.no_grad()
def weight_scores(
    initial: Sequence[torch.Tensor], released: Sequence[torch.Tensor], n_base_items: int
) -> np.ndarray:
    """White-box: how far each canary's mark columns of the input weights (``input_weights``)
    moved from ``initial`` to ``released``, squared. Only the canary's own gradient and the
    step noise reach its column: with the noise off an excluded canary's column never moves.
    Built to catch a broken run: with the noise on (and Adam) the noise sets how far every
    column moves, an included one no further (its canary's loss pulls it back), so the bound
    stays near 0 rather than tight."""
    total = torch.zeros(released[0].shape[1] - n_base_items, dtype=torch.float64)
    for start, end in zip(initial, released):
        moved = end[:, n_base_items:].double().cpu() - start[:, n_base_items:].double().cpu()
        total += moved.pow(2).sum(dim=0)
    return total.numpy()


@torch.no_grad()
def likelihood_scores(
    model: nn.Module,
    canaries: sp.csr_matrix,
    n_base_items: int,
    draws: int,
    generator: torch.Generator,
) -> np.ndarray:
    """Black-box: log p(canary) - log p(canary without its mark) from per-record losses (higher:
    the mark was learnt). Both losses use the same reparameterisation draws, ``draws`` times."""
    model.eval()
    p = next(model.parameters())
    with_mark = torch.as_tensor(canaries.toarray(), dtype=p.dtype, device=p.device)
    without = with_mark.clone()
    without[:, n_base_items:] = 0
    total = torch.zeros(with_mark.shape[0], dtype=torch.float64, device=p.device)
    for _ in range(draws):
        state = generator.get_state()
        loss_with = model.loss_per_record(with_mark, generator)
        generator.set_state(state)
        loss_without = model.loss_per_record(without, generator)
        total += (loss_without - loss_with).double()
    return (total / draws).cpu().numpy()
