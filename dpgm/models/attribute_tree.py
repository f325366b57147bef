"""A tree of attributes: a declared table's records drawn attribute by attribute (``model.options.by_attribute``).

MST's model (McKenna, Miklau, Sheldon 2021) on the table itself rather than on its binary items. A table
written as attribute=value items (``data.attribute_sizes``) holds one value of each attribute per record;
a tree of binary items cannot say so (two values of one attribute are two items, both drawn or neither).
Here each attribute is one variable whose values are its modelled items and ``none`` (value 0: a value
not modelled, or none at all), each drawn given its parent attribute's value. Parameters are released
statistics, not trained: dpgm.stages.item_pairs fits them from the part's noisy means and the noisy
tables of the chosen attribute pairs. Sampling is ancestral, parents first.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor, nn

from dpgm.models.draws import choose
from dpgm.models.protocol import NoPostProcessing
from dpgm.models.tree import ResizedBuffers, order_of


def record_values(records: Any, of: np.ndarray, attributes: int) -> np.ndarray:
    """[n, T]: each record's value of every attribute (``of``: the attribute of each item), 0 (none) or 1 + the
    rank of the first of its items of the attribute among the attribute's items in column order."""
    x = records.toarray() if sp.issparse(records) else np.asarray(records)
    out = np.zeros((x.shape[0], attributes), dtype=np.int64)
    for t in range(attributes):
        held = x[:, of == t] > 0
        if held.shape[1]:
            out[:, t] = np.where(held.any(axis=1), held.argmax(axis=1) + 1, 0)
    return out


class AttributeTree(ResizedBuffers, NoPostProcessing, nn.Module):
    """``attribute[j]``: the attribute of item j; ``parent[t]``: attribute t's parent (-1: a root);
    ``probs[t, u, v]``: P(attribute t takes value v | its parent takes value u), values 0 (none) and
    1 .. (the attribute's items in id order). The buffers take their shapes from ``set_tree``."""

    resized = ("parent", "probs")

    def __init__(self, n_items: int) -> None:
        super().__init__()
        self.n_items = int(n_items)
        self.register_buffer("attribute", torch.zeros(self.n_items, dtype=torch.long))
        self.register_buffer("parent", torch.full((1,), -1, dtype=torch.long))
        self.register_buffer("probs", torch.ones(1, 1, 1, dtype=torch.float64))
        with warnings.catch_warnings():  # "Initializing zero-element tensors is a no-op": the weight is empty
            warnings.simplefilter("ignore", UserWarning)
            self.out = nn.Linear(0, self.n_items)  # its bias: the part means' starting point (never trained)
        nn.init.zeros_(self.out.bias)

    @torch.no_grad()
    def set_tree(self, attribute: Tensor, parent: Tensor, probs: Tensor) -> None:
        """The items' attributes [n_items], the forest over attributes [T] (checked acyclic) and its
        conditional tables [T, S + 1, S + 1] (S: the most items of one attribute)."""
        attribute, parent = torch.as_tensor(attribute, dtype=torch.long), torch.as_tensor(parent, dtype=torch.long)
        probs = torch.as_tensor(probs, dtype=torch.float64)
        if attribute.shape != (self.n_items,) or probs.shape[0] != parent.numel() or probs.shape[1] != probs.shape[2]:
            raise ValueError("attribute tree: one attribute per item and one square table per attribute")
        order_of(parent)  # refuses a cycle
        self.attribute, self.parent, self.probs = attribute.clone(), parent.clone(), probs.clone()

    def items_of(self, t: int) -> Tensor:
        """The items of attribute t in id order (its values 1, 2, ...)."""
        return torch.nonzero(self.attribute == t).flatten()

    def values(self, x: Tensor) -> Tensor:
        """Each record's value of every attribute [n, T] from 0/1 records [n, n_items] (``record_values``)."""
        of = self.attribute.cpu().numpy()
        return torch.as_tensor(record_values(x.detach().cpu().numpy(), of, self.parent.numel()), device=x.device)

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float), one value per attribute drawn given its parent's, parents first:
        the records sharing a parent value draw theirs systematically (``draws.choose``) or independently."""
        x = torch.zeros(n, self.n_items, dtype=torch.float32)
        drawn = torch.zeros(n, self.parent.numel(), dtype=torch.long)
        for t in order_of(self.parent).tolist():
            p = int(self.parent[t])
            given = drawn[:, p] if p >= 0 else torch.zeros(n, dtype=torch.long)
            for u in torch.unique(given).tolist():
                rows = torch.nonzero(given == u).flatten()
                drawn[rows, t] = choose(self.probs[t, u].cpu(), rows.numel(), generator, systematic=systematic)
            items = self.items_of(t).cpu()
            held = drawn[:, t] > 0
            if items.numel():
                x[held.nonzero().flatten(), items[(drawn[held, t] - 1).clamp_max(items.numel() - 1)]] = 1.0
        return x.to(self.probs.device)

    def marginals(self) -> Tensor:
        """Each item's exact frequency under the model [n_items] (parents first)."""
        T = self.parent.numel()
        value = torch.zeros(T, self.probs.shape[1], dtype=self.probs.dtype, device=self.probs.device)
        for t in order_of(self.parent).tolist():
            p = int(self.parent[t])
            value[t] = self.probs[t, 0] if p < 0 else value[p] @ self.probs[t]
        out = torch.zeros(self.n_items, dtype=self.probs.dtype, device=self.probs.device)
        for t in range(T):
            items = self.items_of(t)
            out[items] = value[t, 1: items.numel() + 1]
        return out

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Negative log-likelihood of each row of ``x`` [B, m] (0/1) under the tree -> [B]."""
        v = self.values(x)
        given = torch.where(self.parent >= 0, v[:, self.parent.clamp_min(0)], torch.zeros_like(v))
        t = torch.arange(v.shape[1], device=v.device).expand_as(v)
        return -torch.log(self.probs[t, given, v].clamp_min(1e-12)).sum(dim=1)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """No per-record randomness: [n, 0]."""
        return torch.zeros(n, 0, dtype=self.probs.dtype, device=self.probs.device)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        return self.record_losses(x, self.step_noise(x.shape[0], generator))

    def output_bias(self) -> Tensor:
        """The part means' starting point, which the tree's tables replace (``set_tree``); never sampled from."""
        return self.out.bias

    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Drawn records as their own probabilities (a tree draws each item given the others)."""
        return self.sample(n, generator)
