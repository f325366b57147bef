"""The audit's canaries and their scores. Record canaries: canary i is a random base record plus a
mark item only it has; a score says how much the released model learnt that mark (white-box: how
far the weights reading it moved; black-box: its likelihood). Gradient canaries: canary i is a
gradient on one coordinate that no record reaches, read off every step's released gradient."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor, nn

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


# ------------------------------------------------------------------ gradient canaries (white-box)
class GradientCanaries:
    """Dirac canaries in DP-SGD's privatised gradient (Nasr et al., USENIX Security 2023), a
    ``dpsgd.GradientHook``: canary i owns one coordinate of the mark columns of the model's first
    input weights, which no record reaches (no record holds a mark). Each step, every included
    canary joins the Poisson batch at the run's rate q and adds C_s / E (one record clipped at
    C_s, its whole norm on its coordinate) to the released sum; every coordinate is then read
    off the released gradient in those units: N(0, sigma^2), plus 1 where the canary was sampled.
    DP-SGD is private for any per-record gradient, so Thm 5.2 holds for these canaries."""

    def __init__(self, model: nn.Module, n_base_items: int, included: np.ndarray, sampling_rate: float,
                 rng: np.random.Generator) -> None:
        self.weight = input_weights(model)[0]
        rows = self.weight.shape[0]
        m = len(included)
        if self.weight.shape[1] - n_base_items < self.marks(m, rows):
            raise ValueError(f"{m} gradient canaries need {self.marks(m, rows)} mark columns")
        index = np.arange(m)
        self.rows, self.cols = torch.as_tensor(index % rows), torch.as_tensor(n_base_items + index // rows)
        self.included = np.asarray(included, dtype=bool)
        self.sampling_rate, self.rng = float(sampling_rate), rng
        self.observed: list[np.ndarray] = []

    @staticmethod
    def marks(m: int, rows: int) -> int:
        """Mark columns that hold m canaries, one per coordinate of a column of ``rows``."""
        return -(-m // rows)

    @torch.no_grad()
    def __call__(self, part: int, params: list[nn.Parameter], grads: list[Tensor], unit: float) -> None:
        grad = next(g for p, g in zip(params, grads) if p is self.weight)
        sampled = self.included & (self.rng.random(len(self.included)) < self.sampling_rate)
        rows, cols = self.rows.to(grad.device), self.cols.to(grad.device)
        chosen = torch.as_tensor(sampled, device=grad.device)
        grad[rows[chosen], cols[chosen]] += unit
        self.observed.append(grad[rows, cols].double().cpu().numpy() / unit)


def gradient_scores(observed: np.ndarray, sampling_rate: float) -> np.ndarray:
    """Per canary, the log-likelihood ratio of its readings [steps, m] under "included" (each step
    1 + N(0, s^2) with probability q, else N(0, s^2)) against "excluded" (N(0, s^2)), summed over
    steps: the most powerful test for the subsampled Gaussian. s is each step's noise, estimated
    from the readings themselves (a robust spread: most canaries are not in any one batch), so
    the score needs no claim and sees a run whose noise was cut."""
    x = np.asarray(observed, dtype=np.float64)
    centred = x - np.median(x, axis=1, keepdims=True)
    spread = np.maximum(1.4826 * np.median(np.abs(centred), axis=1, keepdims=True), 1e-12)
    q = float(sampling_rate)
    return np.logaddexp(math.log1p(-q), math.log(q) + (x - 0.5) / spread**2).sum(axis=0)
