"""A tree of attributes: a declared table's records drawn attribute by attribute (``model.options.by_attribute``).

MST's model (McKenna, Miklau, Sheldon 2021) on the table itself rather than on its binary items. A table
written as attribute=value items (``data.attribute_sizes``) holds one value of each attribute per record;
a tree of binary items cannot say so (two values of one attribute are two items, both drawn or neither).
Here each attribute is one variable whose values are its modelled items and ``none`` (value 0: a value
not modelled, or none at all), each drawn given its parent attribute's value. Parameters are released
statistics, not trained: dpgm.stages.item_pairs fits them from the part's noisy means and the noisy
tables of the chosen attribute pairs. An attribute may also have a second parent, a neighbour of its parent in
the tree (its grandparent or an earlier sibling): it is then drawn given both, from a noisy table of the three
(a junction tree of triples, as PrivBayes's degree-2 networks; ``model.options.triple_noise_multiplier``), or the
tree's root, a class every attribute is drawn given (tree-augmented naive Bayes; ``model.options.target_parent``).
Sampling is ancestral, parents first.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor, nn

from dpgm.models.draws import choose
from dpgm.models.protocol import BernoulliOutputs, NoPostProcessing
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


def systematic_choices(probs: Tensor, counts: Tensor, generator: torch.Generator | None) -> Tensor:
    """``draws.choose`` (systematic) of counts[g] indices by each row g of ``probs`` [G, W], one row after another:
    the same random draws in the same order (a row's offset, then its shuffle) and the same arithmetic, the
    cumulative sums and their searches done for every row at once."""
    if counts.numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    offsets, shuffles = [], []
    for count in counts.tolist():
        offsets.append(torch.rand(1, generator=generator, dtype=torch.float64))
        shuffles.append(torch.randperm(count, generator=generator))
    cumulative = torch.cumsum(probs.to(torch.float64), 1)
    starts = torch.cumsum(counts, 0) - counts
    row = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    rank = torch.arange(int(counts.sum())) - starts[row]
    points = torch.zeros(counts.numel(), int(counts.max()), dtype=torch.float64)
    points[row, rank] = (rank.to(torch.float64) + torch.cat(offsets)[row]) / counts[row] * cumulative[row, -1]
    picks = torch.searchsorted(cumulative, points, right=True).clamp_max(probs.shape[1] - 1)[row, rank]
    return picks[starts[row] + torch.cat(shuffles)]


def roots_of(parent: list[int]) -> list[int]:
    """Each attribute's tree's root (a forest without a cycle)."""
    out = []
    for t in range(len(parent)):
        while parent[t] >= 0:
            t = parent[t]
        out.append(t)
    return out


def seconds_allowed(parent: list[int], second: list[int]) -> bool:
    """Whether every second parent [T] (-1: none) is one the model can draw and whose frequencies it knows exactly:
    its parent's parent or an earlier sibling (a tree edge's joint with the parent), or the root of its tree (a tree
    rooted at a class, each attribute given the class as well: tree-augmented naive Bayes, Friedman, Geiger and
    Goldszmidt 1997) where every second parent on its path from the root is that root (``marginals`` then follows
    every attribute's joint with the root)."""
    roots = roots_of(parent)
    for t, s in enumerate(second):
        p = parent[t]
        if s < 0:
            continue
        if p < 0:
            return False
        if s == parent[p] or (parent[s] == p and s < t):
            continue
        if s != roots[t]:
            return False
        a = p
        while parent[a] >= 0:
            if second[a] not in (-1, s):
                return False
            a = parent[a]
    return True


class AttributeTree(ResizedBuffers, NoPostProcessing, BernoulliOutputs, nn.Module):
    """``attribute[j]``: the attribute of item j; ``parent[t]``: attribute t's parent (-1: a root); ``second[t]``:
    its second parent (-1: none), a neighbour of its parent or its tree's root, drawn before it
    (``seconds_allowed``). Values 0 (none) and 1 .. (the attribute's items in id order) fall in groups,
    ``groups[t, v]``; P(attribute t takes value v | its parents' values) = cell (row, group of v) of t's table
    times ``within[t, v]``, the row its parent's group (0 for a root), times the second parent's number of groups
    plus the second's group where it has one. t's table has ``shapes[t]`` = (rows, groups of t); the tables lie
    one after another in ``tables``. Every value its own group: a dense table, of the attributes' own sizes. The
    buffers take their shapes from ``set_tree``."""

    resized = ("parent", "second", "groups", "within", "tables", "shapes")

    def __init__(self, n_items: int) -> None:
        super().__init__()
        self.n_items = int(n_items)
        self.register_buffer("attribute", torch.zeros(self.n_items, dtype=torch.long))
        self.register_buffer("parent", torch.full((1,), -1, dtype=torch.long))
        self.register_buffer("second", torch.full((1,), -1, dtype=torch.long))
        self.register_buffer("groups", torch.zeros(1, 1, dtype=torch.long))
        self.register_buffer("within", torch.ones(1, 1, dtype=torch.float64))
        self.register_buffer("tables", torch.ones(1, dtype=torch.float64))
        self.register_buffer("shapes", torch.ones(1, 2, dtype=torch.long))
        with warnings.catch_warnings():  # "Initializing zero-element tensors is a no-op": the weight is empty
            warnings.simplefilter("ignore", UserWarning)
            self.out = nn.Linear(0, self.n_items)  # its bias: the part means' starting point (never trained)
        nn.init.zeros_(self.out.bias)

    @torch.no_grad()
    def set_tree(self, attribute: Tensor, parent: Tensor, groups: Tensor, within: Tensor, tables: Tensor,
                 shapes: Tensor, second: Tensor | None = None) -> None:
        """The items' attributes [n_items], the forest over attributes [T] (checked acyclic), each value's group and
        weight in it [T, W] (W: the most values of one attribute), the tables over groups (``tables`` [>= L] read by
        ``shapes`` [T, 2]; L the sum of their cells, what follows is padding) and the second parents [T] (default:
        none; each drawn before it, ``seconds_allowed``)."""
        attribute, parent = torch.as_tensor(attribute, dtype=torch.long), torch.as_tensor(parent, dtype=torch.long)
        second = torch.full_like(parent, -1) if second is None else torch.as_tensor(second, dtype=torch.long)
        groups, shapes = torch.as_tensor(groups, dtype=torch.long), torch.as_tensor(shapes, dtype=torch.long)
        within, tables = torch.as_tensor(within, dtype=torch.float64), torch.as_tensor(tables, dtype=torch.float64)
        cells = int(shapes.prod(dim=1).sum()) if shapes.numel() else 0
        if (attribute.shape != (self.n_items,) or groups.shape != within.shape or groups.shape[0] != parent.numel()
                or shapes.shape != (parent.numel(), 2) or tables.numel() < cells or second.shape != parent.shape):
            raise ValueError("attribute tree: one attribute per item and one table per attribute")
        order_of(parent)  # refuses a cycle
        if not seconds_allowed(parent.tolist(), second.tolist()):
            raise ValueError("attribute tree: a second parent is its parent's parent, an earlier sibling, or its "
                             "tree's root where every second parent above it is that root")
        self.attribute, self.parent, self.groups, self.within = attribute.clone(), parent.clone(), groups.clone(), \
            within.clone()
        self.tables, self.shapes, self.second = tables[:cells].clone(), shapes.clone(), second.clone()

    def set_dense(self, attribute: Tensor, parent: Tensor, probs: Tensor) -> None:
        """``set_tree`` from dense conditional tables [T, W, W], ``probs[t, u, v]``: every value its own group."""
        attribute, parent = torch.as_tensor(attribute, dtype=torch.long), torch.as_tensor(parent, dtype=torch.long)
        probs = torch.as_tensor(probs, dtype=torch.float64)
        sizes = torch.bincount(attribute, minlength=parent.numel()) + 1
        rows = torch.where(parent >= 0, sizes[parent.clamp_min(0)], torch.ones_like(parent))
        tables = [probs[t, :r, :c].reshape(-1) for t, (r, c) in enumerate(zip(rows.tolist(), sizes.tolist()))]
        values = torch.arange(probs.shape[-1]).expand(parent.numel(), -1)
        held = values < sizes[:, None]
        self.set_tree(attribute, parent, torch.where(held, values, 0), held.to(torch.float64), torch.cat(tables),
                      torch.stack([rows, sizes], dim=1))

    def items_of(self, t: int) -> Tensor:
        """The items of attribute t in id order (its values 1, 2, ...)."""
        return torch.nonzero(self.attribute == t).flatten()

    def values(self, x: Tensor) -> Tensor:
        """Each record's value of every attribute [n, T] from 0/1 records [n, n_items] (``record_values``)."""
        of = self.attribute.cpu().numpy()
        return torch.as_tensor(record_values(x.detach().cpu().numpy(), of, self.parent.numel()), device=x.device)

    def sizes(self) -> Tensor:
        """Each attribute's number of values [T]: its items and none."""
        return torch.bincount(self.attribute, minlength=self.parent.numel()) + 1

    def table(self, t: int) -> Tensor:
        """Attribute t's table over groups [its parent's groups (1 for a root), its groups]."""
        start = int(self.shapes[:t].prod(dim=1).sum())
        rows, columns = self.shapes[t].tolist()
        return self.tables[start: start + rows * columns].view(rows, columns)

    def group_counts(self) -> Tensor:
        """Each attribute's number of groups [T]."""
        sizes = self.sizes()
        held = torch.arange(self.groups.shape[1], device=self.groups.device) < sizes[:, None]
        return torch.where(held, self.groups, 0).max(dim=1).values + 1

    def rows(self, v: Tensor) -> Tensor:
        """[n, T]: the row of each attribute's table that records of values ``v`` [n, T] read (class docstring)."""
        parent, second = self.parent.clamp_min(0).expand_as(v), self.second.clamp_min(0).expand_as(v)
        first = torch.where(self.parent >= 0, self.groups[parent, v.gather(1, parent)], torch.zeros_like(v))
        both = first * self.group_counts()[second] + self.groups[second, v.gather(1, second)]
        return torch.where(self.second >= 0, both, first)

    def conditional(self, t: int, size: int) -> Tensor:
        """[t's table's rows, W]: P(attribute t takes each of its ``size`` values | its parents' groups' row), zero
        past them."""
        table = self.table(t)
        out = torch.zeros(table.shape[0], self.groups.shape[1], dtype=torch.float64, device=table.device)
        out[:, :size] = table[:, self.groups[t, :size]] * self.within[t, :size]
        return out

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float), one value per attribute drawn given its parent's, parents first:
        the records sharing a parent value draw theirs systematically (``draws.choose``) or independently."""
        x = torch.zeros(n, self.n_items, dtype=torch.float32)
        drawn = torch.zeros(n, self.parent.numel(), dtype=torch.long)
        sizes = self.sizes().tolist()
        width, group_counts = self.groups.shape[1], self.group_counts().tolist()
        for t in order_of(self.parent).tolist():
            p, s = int(self.parent[t]), int(self.second[t])
            given = drawn[:, p] if p >= 0 else torch.zeros(n, dtype=torch.long)
            if s >= 0:  # the records of each pair of the parents' values
                given = given * width + drawn[:, s]
            conditional = self.conditional(t, sizes[t]).cpu()
            order = torch.argsort(given, stable=True)  # the records of each parent value, in record order
            values, counts = torch.unique_consecutive(given[order], return_counts=True)
            row = self._row_of(t, values, group_counts)
            if systematic:
                drawn[order, t] = systematic_choices(conditional[row], counts, generator)
            else:
                for r, rows in zip(row.tolist(), torch.split(order, counts.tolist())):
                    drawn[rows, t] = choose(conditional[r], rows.numel(), generator, systematic=False)
            items = self.items_of(t).cpu()
            held = drawn[:, t] > 0
            if items.numel():
                x[held.nonzero().flatten(), items[(drawn[held, t] - 1).clamp_max(items.numel() - 1)]] = 1.0
        return x.to(self.tables.device)

    def _row_of(self, t: int, given: Tensor, group_counts: list[int]) -> Tensor:
        """The table rows of attribute t for its parents' values ``given`` (the parent's, times W plus the second's
        where t has one; 0 for a root), on the CPU; ``group_counts``: each attribute's (``group_counts``)."""
        p, s, width = int(self.parent[t]), int(self.second[t]), self.groups.shape[1]
        if p < 0:
            return torch.zeros_like(given)
        groups = self.groups.cpu()
        if s < 0:
            return groups[p][given]
        return groups[p][given // width] * group_counts[s] + groups[s][given % width]

    def marginals(self) -> Tensor:
        """Each item's exact frequency under the model [n_items] (parents first), from each attribute's joint with its
        parent over groups (a second parent's joint with the first is such a joint: theirs is a tree edge)."""
        sizes, counts = self.sizes().tolist(), self.group_counts().tolist()
        marginal: dict[int, Tensor] = {}
        joint: dict[int, Tensor] = {}  # t -> [parent's groups, t's groups]
        rooted: dict[int, Tensor] = {}  # t -> [its root's groups, t's groups], while every second parent is the root
        parent, roots = self.parent.tolist(), roots_of(self.parent.tolist())
        for t in order_of(self.parent).tolist():
            p, s, table = parent[t], int(self.second[t]), self.table(t)
            if p < 0:
                marginal[t] = table[0]
                rooted[t] = torch.diag(table[0])
                continue
            if s < 0:
                joint[t] = marginal[p][:, None] * table
                if p in rooted:
                    rooted[t] = rooted[p] @ table
            else:
                if s == parent[p]:
                    pair = joint[p].T  # [p's groups, s's groups]
                elif parent[s] == p:  # an earlier sibling (a root has no parent)
                    pair = joint[s]
                else:
                    pair = rooted[p].T
                triple = pair[:, :, None] * table.view(counts[p], counts[s], -1)
                joint[t] = triple.sum(dim=1)
                if s == roots[t]:
                    rooted[t] = triple.sum(dim=0)
            marginal[t] = joint[t].sum(dim=0)
        out = torch.zeros(self.n_items, dtype=torch.float64, device=self.tables.device)
        for t in range(self.parent.numel()):
            items = self.items_of(t)
            value = marginal[t][self.groups[t, :sizes[t]]] * self.within[t, :sizes[t]]
            out[items] = value[1: items.numel() + 1]
        return out

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Negative log-likelihood of each row of ``x`` [B, m] (0/1) under the tree -> [B]."""
        v = self.values(x)
        t = torch.arange(v.shape[1], device=v.device).expand_as(v)
        row = self.rows(v)
        starts = torch.cumsum(self.shapes.prod(dim=1), 0) - self.shapes.prod(dim=1)
        cell = self.tables[starts[t] + row * self.shapes[t, 1] + self.groups[t, v]] * self.within[t, v]
        return -torch.log(cell.clamp_min(1e-12)).sum(dim=1)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """No per-record randomness: [n, 0]."""
        return torch.zeros(n, 0, dtype=self.tables.dtype, device=self.tables.device)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        return self.record_losses(x, self.step_noise(x.shape[0], generator))

    def output_bias(self) -> Tensor:
        """The part means' starting point, which the tree's tables replace (``set_tree``); never sampled from."""
        return self.out.bias

    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Drawn records as their own probabilities (a tree draws each item given the others)."""
        return self.sample(n, generator)
