"""Inference on the fitted model (post-processing), in numpy.

``mbi`` fits the graphical model (mirror descent, McKenna et al. 2019); marginals of arbitrary
cliques and samples are then computed HERE in numpy from the calibrated junction tree
(``JunctionTree``): mbi's own out-of-model marginals compile one JAX program per clique (about
0.35 s each, hours for AIM's candidates) and its sampler draws from NumPy's global random
state, whereas dpgm passes one Generator around.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpgm.evaluation.pgm.fitting import import_mbi
from dpgm.evaluation.pgm.workload import Clique, as_sizes, strides


def _contract(factors: Sequence[tuple[Clique, np.ndarray]], out: Clique) -> np.ndarray:
    """sum over all variables not in ``out`` of the product of the factors (tables of shape sizes[vs])."""
    labels = {v: i for i, v in enumerate(sorted({v for vs, _ in factors for v in vs} | set(out)))}
    args: list[Any] = []
    for vs, table in factors:
        args += [table, [labels[v] for v in vs]]
    return np.einsum(*args, [labels[v] for v in out], optimize=len(factors) > 2)


def _table_to(vs: Clique, table: np.ndarray, order: Clique) -> np.ndarray:
    """Reorder a table from variable order ``vs`` to ``order`` (same set)."""
    return np.transpose(table, [vs.index(v) for v in order])


def _expand(table: np.ndarray, vs: Clique, to: Clique) -> np.ndarray:
    """A table over sorted ``vs`` broadcast against sorted ``to`` (a superset)."""
    return table.reshape([table.shape[vs.index(v)] if v in vs else 1 for v in to])


def _logsumexp_to(table: np.ndarray, vs: Clique, keep: Clique) -> np.ndarray:
    """log sum exp of a log table over sorted ``vs`` down to the sorted subset ``keep``."""
    from scipy.special import logsumexp

    axes = tuple(i for i, v in enumerate(vs) if v not in keep)
    return logsumexp(table, axis=axes) if axes else table


def _calibrate(
    cliques: list[Clique], logpot: list[np.ndarray], edges: list[tuple[int, int]], total: float
) -> list[np.ndarray]:
    """Clique marginals (counts summing to ``total``) by two-pass sum-product on a forest."""
    k = len(cliques)
    adj: list[list[int]] = [[] for _ in range(k)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    parent, order, seen = [-1] * k, [], [False] * k
    for root in range(k):
        if seen[root]:
            continue
        seen[root], queue = True, [root]
        while queue:
            c = queue.pop(0)
            order.append(c)
            for nb in adj[c]:
                if not seen[nb]:
                    seen[nb], parent[nb] = True, c
                    queue.append(nb)

    def sep(a: int, b: int) -> Clique:
        return tuple(v for v in cliques[a] if v in cliques[b])

    up: dict[int, np.ndarray] = {}  # message child -> parent, over their separator
    for c in reversed(order):
        belief = logpot[c] + sum(
            (_expand(up[ch], sep(ch, c), cliques[c]) for ch in adj[c] if parent[ch] == c),
            np.zeros(()),
        )
        if parent[c] >= 0:
            up[c] = _logsumexp_to(belief, cliques[c], sep(c, parent[c]))
    beliefs: list[np.ndarray] = [np.zeros(())] * k
    down: dict[int, np.ndarray] = {}  # message parent -> child
    for c in order:
        belief = logpot[c] + sum(
            (_expand(up[ch], sep(ch, c), cliques[c]) for ch in adj[c] if parent[ch] == c),
            np.zeros(()),
        )
        if parent[c] >= 0:
            belief = belief + _expand(down[c], sep(c, parent[c]), cliques[c])
        beliefs[c] = belief
        for ch in adj[c]:
            if parent[ch] == c:
                msg = belief - _expand(up[ch], sep(ch, c), cliques[c])
                down[ch] = _logsumexp_to(msg, cliques[c], sep(ch, c))
    from scipy.special import logsumexp

    return [total * np.exp(b - logsumexp(b)) for b in beliefs]


class JunctionTree:
    """A calibrated junction tree over attributes of ``sizes`` values (an integer m: m binary items):
    clique marginals (counts, tables of shape sizes[clique]) and separators.

    Built from an mbi model; ``marginal`` gives any clique's counts exactly by variable
    elimination on the smallest subtree covering it, ``sample`` draws records i.i.d. from the
    model with a numpy Generator (forward sampling from the root).
    """

    def __init__(
        self,
        cliques: list[Clique],
        tables: list[np.ndarray],
        edges: list[tuple[int, int]],
        sizes: int | Sequence[int],
        total: float,
    ) -> None:
        self.cliques, self.tables, self.total = cliques, tables, float(total)
        self.sizes = as_sizes(sizes)
        self.n_items = len(self.sizes)
        k = len(cliques)
        adj: list[list[int]] = [[] for _ in range(k)]
        for a, b in edges:
            adj[a].append(b)
            adj[b].append(a)
        # connect a forest (independent components) with empty separators
        self.parent = [-1] * k
        self.depth = [0] * k
        self.order: list[int] = []
        seen = [False] * k
        for start in range(k):
            if seen[start]:
                continue
            if start > 0:
                self.parent[start] = 0
                self.depth[start] = 1
            seen[start] = True
            queue = [start]
            while queue:
                c = queue.pop(0)
                self.order.append(c)
                for nb in adj[c]:
                    if not seen[nb]:
                        seen[nb] = True
                        self.parent[nb] = c
                        self.depth[nb] = self.depth[c] + 1
                        queue.append(nb)
        if self.order and self.order[0] != 0:  # pragma: no cover - start 0 always comes first
            raise RuntimeError("junction tree: bad traversal")
        self.sep: list[Clique] = []
        self.cond: list[np.ndarray] = []  # P(C_c) / P(S_c): conditional of c given its separator
        for c in range(k):
            p = self.parent[c]
            s = tuple(v for v in cliques[c] if p >= 0 and v in cliques[p])
            self.sep.append(s)
            table = tables[c]
            if p < 0:
                cond = table / max(self.total, 1e-300)
            else:
                denom = _contract([(cliques[c], table)], s)  # s keeps the clique's order
                d = _expand(denom, s, cliques[c])
                cond = np.divide(table, d, out=np.zeros_like(table), where=d > 0)
            self.cond.append(cond)
        self.home: dict[int, int] = {}
        for c in sorted(range(k), key=lambda i: len(cliques[i])):
            for v in cliques[c]:
                self.home.setdefault(v, c)
        missing = set(range(self.n_items)) - set(self.home)
        if missing:
            raise ValueError(f"junction tree does not cover items {sorted(missing)[:5]}")

    @classmethod
    def from_mbi(cls, model: Any, n_items: int) -> JunctionTree:
        """Calibrate ``model`` (an mbi MarkovRandomField over ``n_items`` attributes, its domain's sizes)
        on its junction tree, in numpy.

        mbi's junction tree (maximal cliques, spanning tree); each potential goes to one
        clique holding it; two passes of log-space sum-product give the clique marginals.
        (mbi's own message passing would compile a JAX program for every new structure.)
        """
        mbi = import_mbi()
        jtree, _ = mbi.junction_tree.make_junction_tree(
            model.domain, [tuple(c) for c in model.cliques]
        )
        nodes = list(jtree.nodes)
        cliques = [tuple(sorted(int(a) for a in node)) for node in nodes]
        sizes = tuple(int(s) for s in model.domain.shape)
        logpot = [np.zeros([sizes[v] for v in c]) for c in cliques]
        for cl in model.potentials.cliques:
            factor = model.potentials[cl]
            names = tuple(int(a) for a in factor.domain.attributes)
            order = tuple(sorted(names))
            home = min(
                (i for i, c in enumerate(cliques) if set(order) <= set(c)),
                key=lambda i: len(cliques[i]),
            )
            table = _table_to(names, np.asarray(factor.values, dtype=np.float64), order)
            logpot[home] = logpot[home] + _expand(table, order, cliques[home])
        index = {node: i for i, node in enumerate(nodes)}
        edges = [(index[a], index[b]) for a, b in jtree.edges]
        tables = _calibrate(cliques, logpot, edges, float(model.total))
        if len(sizes) != n_items:
            raise ValueError(f"junction tree: the model has {len(sizes)} attributes, expected {n_items}")
        return cls(cliques, tables, edges, sizes, float(model.total))

    def _path_nodes(self, a: int, b: int) -> set[int]:
        nodes = {a, b}
        while a != b:
            if self.depth[a] >= self.depth[b]:
                a = self.parent[a]
            else:
                b = self.parent[b]
            nodes.add(a)
            nodes.add(b)
        return nodes

    def marginal(self, clique: Clique) -> np.ndarray:
        """Counts of ``clique`` (sorted item indices) under the model, flat in C order."""
        q = tuple(clique)
        for c in sorted((self.home[v] for v in q), key=lambda i: len(self.cliques[i])):
            if set(q) <= set(self.cliques[c]):
                return _contract([(self.cliques[c], self.tables[c])], q).ravel()
        for c, vs in enumerate(self.cliques):
            if set(q) <= set(vs):
                return _contract([(vs, self.tables[c])], q).ravel()
        homes = [self.home[v] for v in q]
        nodes: set[int] = {homes[0]}
        for h in homes[1:]:
            nodes |= self._path_nodes(homes[0], h)
        top = min(nodes, key=lambda i: self.depth[i])  # the subtree's root (its LCA)
        factors = [(self.cliques[top], self.tables[top] / max(self.total, 1e-300))]
        factors += [(self.cliques[c], self.cond[c]) for c in nodes if c != top]
        return (self.total * _contract(factors, q)).ravel()

    def sample(self, n: int, rng: np.random.Generator, chunk: int = 1 << 16) -> np.ndarray:
        """``n`` records (n x m codes; uint8 up to 256 values) drawn i.i.d. from the model, root first, in
        chunks: each clique's new attributes given its separator's, as one mixed-radix cell."""
        steps = []
        done: set[int] = set()
        for c in self.order:
            s = self.sep[c]
            new = tuple(v for v in self.cliques[c] if v not in s and v not in done)
            if new:
                table = _contract([(self.cliques[c], self.cond[c])], s + new).reshape(
                    math.prod(self.sizes[v] for v in s), math.prod(self.sizes[v] for v in new)
                )
                sums = table.sum(axis=1, keepdims=True)
                probs = np.divide(
                    table, sums, out=np.full_like(table, 1.0 / table.shape[1]), where=sums > 0
                )
                cdf = np.cumsum(probs, axis=1)
                cdf[:, -1] = 1.0
                steps.append((s, new, cdf))
                done.update(new)
        out = np.zeros((n, self.n_items), dtype=np.uint8 if max(self.sizes) <= 256 else np.int64)
        for start in range(0, n, chunk):
            block = out[start : start + chunk]
            for s, new, cdf in steps:
                parent = (
                    block[:, list(s)].astype(np.int64) @ strides([self.sizes[v] for v in s])
                    if s
                    else np.zeros(len(block), np.int64)
                )
                u = rng.random(len(block))
                cell = np.empty(len(block), dtype=np.int64)
                order = np.argsort(parent, kind="stable")
                keys, starts = np.unique(parent[order], return_index=True)
                for key, lo, hi in zip(keys, starts, list(starts[1:]) + [len(order)]):
                    rows = order[lo:hi]
                    cell[rows] = np.searchsorted(cdf[key], u[rows], side="right")
                cell = np.minimum(cell, cdf.shape[1] - 1)
                values = np.unravel_index(cell, [self.sizes[v] for v in new])
                for v, value in zip(new, values):
                    block[:, v] = value
        return out
