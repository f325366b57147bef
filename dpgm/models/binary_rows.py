"""A batch of 0/1 records held by its ones: what a wide sparse batch costs is its ones, not B x m.

A record holds ~10 of 2,000 items, so a dense [B, m] copy of the batch, the first layer's
product x W^T, its per-record input norms ||x_i||^2 and its clipped sum X^T (c * G) all cost B m
where the ones cost ~10 B. ``BinaryRows`` keeps (row, item) of every 1, rows flattened over the
leading dimensions (a stack's [k, B, m] batch has k B rows), and computes those from the ones:
x W^T as each row's sum of its items' columns, ||x_i||^2 as its length, the clipped sum by adding
each row's output gradient to its items' columns, and the Bernoulli negative log-likelihood
sum softplus(l) - sum over the row's items of l. Models read it through ``RowsLinear`` (dense
input as nn.Linear does) and ``bernoulli_nll``; the values are those of the dense path up to float
rounding (another order of the same sums).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: Logits per chunk of the loss's softplus (a small temporary, reused, instead of one of B x m).
CHUNK_CELLS = 1 << 18

#: softplus(l) = l above this: log1p(exp(-40)) is below the rounding of 40 in float32 and float64.
SOFTPLUS_LINEAR = 40.0


@dataclass(frozen=True)
class BinaryRows:
    """0/1 records of dense shape ``shape`` [..., B, m]: row ``rows[t]`` (flat over [..., B], row-major,
    increasing) holds item ``items[t]``; every other cell is 0. Each (row, item) appears once."""

    rows: Tensor  # [nnz] long
    items: Tensor  # [nnz] long
    shape: tuple[int, ...]

    @classmethod
    def from_csr(cls, records: sp.csr_matrix, device: torch.device | str = "cpu") -> BinaryRows:
        """The ones of 0/1 CSR records [B, m] (stored zeros dropped)."""
        csr = sp.csr_matrix(records)
        ones = np.asarray(csr.data) != 0
        rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))[ones]
        items = np.asarray(csr.indices, dtype=np.int64)[ones]
        return cls(torch.as_tensor(rows, device=device), torch.as_tensor(items, device=device), tuple(csr.shape))

    @property
    def device(self) -> torch.device:
        return self.rows.device

    @property
    def n_rows(self) -> int:
        """Rows over all leading dimensions (k B for a stack's batch)."""
        return math.prod(self.shape[:-1])

    def __len__(self) -> int:
        return self.shape[0]

    def dim(self) -> int:
        return len(self.shape)

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> BinaryRows:
        """The same ones on ``device`` (``dtype`` is the dense values' and changes nothing here)."""
        if device is None or torch.device(device) == self.device:
            return self
        return BinaryRows(self.rows.to(device), self.items.to(device), self.shape)

    def detach(self) -> BinaryRows:
        return self

    def dense(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """The records as a dense 0/1 tensor ``shape``."""
        out = torch.zeros(self.n_rows, self.shape[-1], dtype=dtype, device=self.device)
        out[self.rows, self.items] = 1
        return out.view(self.shape)

    def lengths(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """Items per row [..., B]: each row's ||x_i||^2."""
        return torch.bincount(self.rows, minlength=self.n_rows).to(dtype).view(self.shape[:-1])

    def __getitem__(self, index: Tensor) -> BinaryRows:
        """Rows ``index`` of a [B, m] batch (a boolean mask, or distinct indices in their order)."""
        b = self.shape[0]
        picked = torch.arange(b, device=self.device)[index.to(self.device)]
        new_of = torch.full((b,), -1, dtype=torch.long, device=self.device)
        new_of[picked] = torch.arange(len(picked), device=self.device)
        return self._moved(new_of, (len(picked), self.shape[-1]))

    def placed(self, slots: tuple[Tensor, Tensor], shape: tuple[int, int]) -> BinaryRows:
        """Row i of a [B, m] batch moved to row (``slots[0][i]``, ``slots[1][i]``) of [g, B_max, m]
        (``_padded`` of dpgm.training.stacked for the ones; the other rows empty)."""
        part, rank = slots
        return self._moved(part * shape[1] + rank, (*shape, self.shape[-1]))

    def without(self, bad: Tensor) -> BinaryRows:
        """The same with the rows flagged in ``bad`` [..., B] emptied."""
        keep = ~bad.reshape(-1).to(self.device)[self.rows]
        return BinaryRows(self.rows[keep], self.items[keep], self.shape)

    def _moved(self, new_of: Tensor, shape: tuple[int, ...]) -> BinaryRows:
        """The ones of row r moved to row ``new_of[r]`` (dropped where -1) of a batch of ``shape``."""
        rows = new_of[self.rows]
        keep = rows >= 0
        rows, items = rows[keep], self.items[keep]
        order = torch.argsort(rows, stable=True)
        return BinaryRows(rows[order], items[order], shape)

    def _table_rows(self, stacked: bool) -> Tensor:
        """Each 1's row in a weight's transposed table [(k) m, out]: its item, offset by its stack's m."""
        if not stacked:
            return self.items
        return torch.div(self.rows, self.shape[-2], rounding_mode="floor") * self.shape[-1] + self.items

    def linear(self, weight: Tensor, bias: Tensor | None) -> Tensor:
        """x W^T + b for W [out, m] on a [..., B, m] batch, or k weights [k, out, m] on its [k, B, m]."""
        stacked = weight.dim() == 3
        table = weight.transpose(-1, -2).contiguous().view(-1, weight.shape[-2])  # [(k) m, out]
        out = F.embedding_bag(self._table_rows(stacked), table, _starts(self.rows, self.n_rows), mode="sum")
        out = out.view(*self.shape[:-1], weight.shape[-2])
        if bias is None:
            return out
        return out + (bias.unsqueeze(-2) if stacked else bias)

    def add_outer_(self, total: Tensor, scaled: Tensor) -> None:
        """total += sum_i scaled_i x_i^T for a weight's total [(k,) out, m] and ``scaled`` [..., B, out]:
        each item's column gets the sum of its rows' vectors (the first layer's clipped sum)."""
        stacked, out = total.dim() == 3, total.shape[-2]
        cells = self._table_rows(stacked)
        order = torch.argsort(cells, stable=True)  # the ones item by item: one bag of rows per item
        sums = F.embedding_bag(self.rows[order], scaled.reshape(-1, out), _starts(cells[order], total.numel() // out),
                               mode="sum")  # [(k) m, out], the transposed table
        total.add_(sums.view(*total.shape[:-2], total.shape[-1], out).transpose(-1, -2))

    def bernoulli_nll(self, logits: Tensor) -> Tensor:
        """-log p(x | logits) per row for Bernoulli logits [..., B, (K,) m] -> [..., B, (K)]: with K
        logits per record (record-major), each scored against the record."""
        return _BernoulliNll.apply(logits, self.rows, self.items, math.prod(logits.shape[:-1]) // max(1, self.n_rows))


class _BernoulliNll(torch.autograd.Function):
    """sum_j softplus(l_j) - sum over the row's items of l_j; gradient sigmoid(l) - x, formed in one
    tensor (the dense loss's autograd makes three of [..., B, m])."""

    @staticmethod
    def forward(ctx: Any, logits: Tensor, rows: Tensor, items: Tensor, k: int) -> Tensor:
        ctx.save_for_backward(logits, rows, items)
        ctx.k = k
        ones = _cells(rows, items, k)
        per_row = logits.reshape(-1, logits.shape[-1])  # [rows K, m]
        taken = per_row.new_zeros(len(per_row)).index_put_(ones[:1], per_row[ones], accumulate=True)  # deterministic
        step = max(1, CHUNK_CELLS // per_row.shape[1])  # softplus a chunk at a time: no temporary of B x m
        spread = torch.cat([per_row.new_zeros(0)] + [F.softplus(c, threshold=SOFTPLUS_LINEAR).sum(dim=-1)
                                                     for c in per_row.split(step)])
        return (spread - taken).view(logits.shape[:-1])

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None]:
        logits, rows, items = ctx.saved_tensors
        out = torch.sigmoid(logits).mul_(grad.unsqueeze(-1))
        ones = _cells(rows, items, ctx.k)
        out.view(-1, logits.shape[-1]).index_put_(ones, -grad.reshape(-1)[ones[0]], accumulate=True)
        return out, None, None, None


def _starts(index: Tensor, n: int) -> Tensor:
    """Where each of the values 0 .. n - 1 starts in the increasing ``index`` (a bag's offset)."""
    counts = torch.bincount(index, minlength=n)
    return torch.cumsum(counts, 0) - counts


def _cells(rows: Tensor, items: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """(row, item) of every 1 among logits viewed [rows K, m], K logits per record (record-major)."""
    if k == 1:
        return rows, items
    draws = torch.arange(k, device=rows.device)
    return (rows.unsqueeze(-1) * k + draws).reshape(-1), items.repeat_interleave(k)


class RowsLinear(nn.Linear):
    """nn.Linear that also reads BinaryRows (a model's first layer on sparse records)."""

    def forward(self, x: Tensor | BinaryRows) -> Tensor:  # type: ignore[override]
        return x.linear(self.weight, self.bias) if isinstance(x, BinaryRows) else super().forward(x)
