"""Shared machinery of the AIM, MST and MWEM+PGM baselines (private-pgm's mechanisms on top of ``mbi``).

Binary items are 2-valued attributes named "0".."m-1"; a clique is a sorted tuple of item
indices and its marginal a flat count vector in C order (first item = most significant bit),
as ``mbi``'s ``Factor.datavector`` lays it out.

Privacy (add/remove one record, docs/privacy.md): adding or removing a record changes one
cell of every marginal by 1, so each marginal has L2 sensitivity 1 and a Gaussian measurement
with noise std sigma is ``GaussianEvent(noise_multiplier=sigma)``. The budget is a zCDP rho
(Bun and Steinke 2016) chosen so that the RDP accountant, on a curve a * rho at every order,
gives epsilon <= the target at delta: a Gaussian's RDP is exactly a/(2 sigma^2) and an
epsilon-exponential mechanism's is at most a epsilon^2/8 (accountant.py), so any plan whose
zCDP costs add up to rho is then within the target, whatever the run adapts to.

Inference (post-processing). ``mbi`` fits the graphical model (mirror descent, McKenna et al.
2019); marginals of arbitrary cliques and samples are then computed HERE in numpy from the
calibrated junction tree (``JunctionTree``): mbi's own out-of-model marginals compile one JAX
program per clique (about 0.35 s each, hours for AIM's candidates) and its sampler draws from
NumPy's global random state, whereas dpgm passes one Generator around.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_epsilon
from dpgm.privacy.events import DpEvent, ExponentialEvent, GaussianEvent
from dpgm.privacy.mechanisms import gaussian_releases

Clique = tuple[int, ...]
#: Calibrate just below the target so float rounding of the per-round costs never exceeds it.
CALIBRATION_MARGIN = 1e-9
#: Up to this many items the true marginals come from one histogram over all 2^m records.
MAX_HISTOGRAM_ITEMS = 20
#: Share of each AIM and MWEM+PGM round's zCDP for the measurement (the authors' alpha).
ALPHA = 0.9


def import_mbi() -> Any:
    """Import ``mbi`` (optional extra ``peers``) with JAX in float64, as mbi advises for n > 1e5."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import mbi
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            f"AIM/MST/MWEM+PGM need the optional package mbi ({exc}): pip install -e '.[peers]'"
        ) from exc
    return mbi


def attr(j: int) -> str:
    return str(j)


def clique_attrs(clique: Clique) -> tuple[str, ...]:
    return tuple(attr(j) for j in clique)


def mbi_domain(n_items: int) -> Any:
    mbi = import_mbi()
    return mbi.Domain(tuple(attr(j) for j in range(n_items)), (2,) * n_items)


# --------------------------------------------------------------------------- privacy


def rho_for_epsilon(epsilon: float, delta: float, margin: float = CALIBRATION_MARGIN) -> float:
    """Largest zCDP rho (1e-6 relative) whose curve a * rho the accountant converts to <= epsilon.

    rho-zCDP is the RDP curve of one Gaussian with multiplier 1/sqrt(2 rho); the calibration
    searches the accountant's own conversion (calibrate.sigma_for_epsilon) at ``delta``.
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"epsilon must be finite and > 0, got {epsilon}")
    sigma = sigma_for_epsilon(
        steps=1,
        delta=delta,
        target_epsilon=epsilon * (1.0 - margin),
        event_factory=lambda s: GaussianEvent(noise_multiplier=s),
    )
    return 1.0 / (2.0 * sigma * sigma)


def zcdp_event(rho: float) -> GaussianEvent:
    """The Gaussian event whose RDP curve is a * rho (rho-zCDP)."""
    return GaussianEvent(noise_multiplier=1.0 / math.sqrt(2.0 * rho))


def check_plan(accountant: Accountant, events: Iterable[tuple[DpEvent, int]], what: str) -> None:
    """Refuse the whole run (nothing released) when ``events`` would exceed the accountant's budget."""
    accountant.refuse_unless_affordable(what, *(e for event, count in events for e in [event] * count))


def measure(accountant: Accountant, stage: str, rng: np.random.Generator, sigma: float,
            truths: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gaussian measurements of marginals (L2 sensitivity 1 each), charged together, then drawn."""
    return gaussian_releases(list(truths), [1.0] * len(truths), noise_multiplier=sigma,
                             accountant=accountant, stage=stage, rng=rng)


# --------------------------------------------------------------------------- data


def as_csc(records: np.ndarray | sp.spmatrix | BinaryDataset) -> sp.csc_matrix:
    if isinstance(records, BinaryDataset):
        records = records.records
    return (
        sp.csc_matrix(records, dtype=np.uint8)
        if sp.issparse(records)
        else sp.csc_matrix(np.asarray(records, dtype=np.uint8))
    )


class TrueMarginals:
    """Exact marginal counts of binary records (NOT private: only noisy copies are released).

    Up to ``MAX_HISTOGRAM_ITEMS`` items: one histogram over all 2^m records, marginals by
    summing axes; otherwise per clique, a bincount of the records' codes on the clique.
    """

    def __init__(self, records: np.ndarray | sp.spmatrix | BinaryDataset) -> None:
        self.x = as_csc(records)
        self.n_records, self.n_items = self.x.shape
        self._cache: dict[Clique, np.ndarray] = {}
        self._hist: np.ndarray | None = None
        if self.n_items <= MAX_HISTOGRAM_ITEMS:
            weights = (1 << np.arange(self.n_items)[::-1]).astype(np.int64)
            codes = np.asarray(self.x @ weights).ravel().astype(np.int64)
            self._hist = np.bincount(codes, minlength=1 << self.n_items).astype(np.float64)
            self._hist = self._hist.reshape((2,) * self.n_items)

    def __call__(self, clique: Clique) -> np.ndarray:
        clique = tuple(clique)
        if clique not in self._cache:
            if self._hist is not None:
                other = tuple(j for j in range(self.n_items) if j not in clique)
                out = self._hist.sum(axis=other).ravel()
            else:
                k = len(clique)
                weights = (1 << np.arange(k)[::-1]).astype(np.int64)
                codes = np.asarray(self.x[:, list(clique)] @ weights).ravel().astype(np.int64)
                out = np.bincount(codes, minlength=1 << k).astype(np.float64)
            self._cache[clique] = out
        return self._cache[clique]


# --------------------------------------------------------------------------- numpy inference


def _contract(factors: Sequence[tuple[Clique, np.ndarray]], out: Clique) -> np.ndarray:
    """sum over all variables not in ``out`` of the product of the factors (tables over (2,)*k)."""
    labels = {v: i for i, v in enumerate(sorted({v for vs, _ in factors for v in vs} | set(out)))}
    args: list[Any] = []
    for vs, table in factors:
        args += [table, [labels[v] for v in vs]]
    return np.einsum(*args, [labels[v] for v in out], optimize=len(factors) > 2)


def _table_to(vs: Clique, table: np.ndarray, order: Clique) -> np.ndarray:
    """Reorder a (2,)*k table from variable order ``vs`` to ``order`` (same set)."""
    return np.transpose(table, [vs.index(v) for v in order])


def _expand(table: np.ndarray, vs: Clique, to: Clique) -> np.ndarray:
    """A table over sorted ``vs`` broadcast against sorted ``to`` (a superset)."""
    return table.reshape([2 if v in vs else 1 for v in to])


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
    """A calibrated junction tree over binary items: clique marginals (counts) and separators.

    Built from an mbi model; ``marginal`` gives any clique's counts exactly by variable
    elimination on the smallest subtree covering it, ``sample`` draws records i.i.d. from the
    model with a numpy Generator (forward sampling from the root).
    """

    def __init__(
        self,
        cliques: list[Clique],
        tables: list[np.ndarray],
        edges: list[tuple[int, int]],
        n_items: int,
        total: float,
    ) -> None:
        self.cliques, self.tables, self.n_items, self.total = cliques, tables, n_items, float(total)
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
                d = denom.reshape([2 if v in s else 1 for v in cliques[c]])
                cond = np.divide(table, d, out=np.zeros_like(table), where=d > 0)
            self.cond.append(cond)
        self.home: dict[int, int] = {}
        for c in sorted(range(k), key=lambda i: len(cliques[i])):
            for v in cliques[c]:
                self.home.setdefault(v, c)
        missing = set(range(n_items)) - set(self.home)
        if missing:
            raise ValueError(f"junction tree does not cover items {sorted(missing)[:5]}")

    @classmethod
    def from_mbi(cls, model: Any, n_items: int) -> JunctionTree:
        """Calibrate ``model`` (an mbi MarkovRandomField) on its junction tree, in numpy.

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
        logpot = [np.zeros((2,) * len(c)) for c in cliques]
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
        return cls(cliques, tables, edges, n_items, float(model.total))

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
        """``n`` records (n x m uint8) drawn i.i.d. from the model, root first, in chunks."""
        steps = []
        done: set[int] = set()
        for c in self.order:
            s = self.sep[c]
            new = tuple(v for v in self.cliques[c] if v not in s and v not in done)
            if new:
                table = _contract([(self.cliques[c], self.cond[c])], s + new).reshape(
                    1 << len(s), 1 << len(new)
                )
                sums = table.sum(axis=1, keepdims=True)
                probs = np.divide(
                    table, sums, out=np.full_like(table, 1.0 / table.shape[1]), where=sums > 0
                )
                cdf = np.cumsum(probs, axis=1)
                cdf[:, -1] = 1.0
                steps.append((s, new, cdf))
                done.update(new)
        out = np.zeros((n, self.n_items), dtype=np.uint8)
        for start in range(0, n, chunk):
            block = out[start : start + chunk]
            for s, new, cdf in steps:
                weights = (1 << np.arange(len(s))[::-1]).astype(np.int64)
                parent = (
                    block[:, list(s)].astype(np.int64) @ weights
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
                for pos, v in enumerate(new):
                    block[:, v] = (cell >> (len(new) - 1 - pos)) & 1
        return out


def model_size_mb(n_items: int, cliques: Iterable[Clique]) -> float:
    """mbi's ``hypothetical_model_size`` for binary items, in pure Python (~100x faster).

    The same greedy elimination as mbi's ``greedy_order`` (eliminate the item whose
    neighbourhood, itself included, spans the fewest cells; ties: lowest index), then
    8 bytes x the cells of the maximal cliques of the triangulated graph, in MB. AIM calls it
    for every candidate in every round (mbi's own version takes 0.2 s a call on 100 items).
    """
    adj: list[set[int]] = [set() for _ in range(n_items)]
    for cl in cliques:
        for a in cl:
            adj[a].update(b for b in cl if b != a)
    alive = list(range(n_items))
    formed: list[frozenset[int]] = []
    while alive:
        a = min(alive, key=lambda v: len(adj[v]))  # first minimum in index order
        nbrs = adj[a]
        formed.append(frozenset(nbrs | {a}))
        for b in nbrs:
            adj[b].discard(a)
            adj[b].update(c for c in nbrs if c != b)
        alive.remove(a)
    maximal = [c for c in set(formed) if not any(c < d for d in formed)]
    return sum(2 ** len(c) for c in maximal) * 8 / 2**20


# --------------------------------------------------------------------------- fitting


def fit_model(measurements: list[Any], n_items: int, iters: int, warm_start: Any = None) -> Any:
    """mbi's mirror descent (Algorithm 1 of McKenna et al. 2019) on the noisy measurements."""
    mbi = import_mbi()
    estimator = mbi.estimation.MirrorDescent()
    return estimator.estimate(mbi_domain(n_items), measurements, iters=iters, warm_start=warm_start)


def measurement(clique: Clique, y: np.ndarray, sigma: float) -> Any:
    mbi = import_mbi()
    return mbi.LinearMeasurement(
        np.asarray(y, dtype=np.float64), clique_attrs(clique), stddev=float(sigma)
    )


def select_index(
    scores: np.ndarray, epsilon: float, sensitivity: float, u: float
) -> tuple[int, np.ndarray]:
    """Exponential mechanism P(i) ~ exp(epsilon score_i / (2 sensitivity)), inverse CDF at u."""
    from dpgm.evaluation.mwem import select, selection_probabilities

    probs = selection_probabilities(np.asarray(scores, dtype=np.float64) / sensitivity, epsilon)
    return select(probs, u), probs


def split_round(rho_round: float, alpha: float) -> tuple[float, float]:
    """(epsilon, sigma) of one select-then-measure round costing ``rho_round`` in zCDP: a share
    ``alpha`` for the Gaussian (1 / (2 sigma^2)), the rest for the selection (epsilon^2 / 8)."""
    return math.sqrt(8 * (1 - alpha) * rho_round), math.sqrt(1 / (2 * alpha * rho_round))


def cap_reached(max_rounds: int | None, rounds_done: int) -> bool:
    """Whether the next round must be the last: the caller's public cap ``max_rounds`` is
    reached. A function of counts only, never of the data or of the clock."""
    return max_rounds is not None and rounds_done + 1 >= max_rounds


class RoundSchedule:
    """The rounds rule of AIM and MWEM+PGM: each round's (epsilon_t, sigma_t, last) from public
    inputs (rho, T, the cap ``max_rounds``) and, for AIM, earlier releases (annealing). It never
    sees the data or the clock, so neither can change how many rounds run or their noise; the
    last round spends all the budget left."""

    def __init__(self, rho: float, max_rounds: int | None, what: str) -> None:
        if not rho > 0:
            raise ConfigError(f"{what}: need rho > 0, got {rho}")
        if max_rounds is not None and max_rounds < 1:
            raise ConfigError(f"{what}: max_rounds must be >= 1 or None, got {max_rounds}")
        self.rho, self.max_rounds = float(rho), max_rounds
        self.used, self.done = 0.0, 0

    def regular(self) -> tuple[float, float]:
        """(epsilon_t, sigma_t) of a round that is not the last."""
        raise NotImplementedError

    def budget_last(self) -> bool:
        """Whether the mechanism's own rule makes the next round the last one."""
        raise NotImplementedError

    def next_round(self) -> tuple[float, float, bool]:
        """(epsilon_t, sigma_t, last), its zCDP added to ``used``."""
        last = cap_reached(self.max_rounds, self.done) or self.budget_last()
        epsilon, sigma = split_round(self.rho - self.used, ALPHA) if last else self.regular()
        self.used += epsilon**2 / 8 + 0.5 / sigma**2
        self.done += 1
        return epsilon, sigma, last

    def rounds(self) -> Iterator[tuple[float, float, bool]]:
        """``next_round`` until the last one (lazily: an anneal between rounds takes effect)."""
        last = False
        while not last:
            epsilon, sigma, last = self.next_round()
            yield epsilon, sigma, last


def powerset(clique: Clique) -> list[Clique]:
    """The non-empty subsets of ``clique`` (by size, then lexicographic)."""
    return [c for r in range(1, len(clique) + 1) for c in itertools.combinations(clique, r)]


def workload_cliques(
    n_items: int, degree: int, max_workload: int | None, rng: np.random.Generator, what: str
) -> list[Clique]:
    """All ``degree``-way cliques (lexicographic), or ``max_workload`` of them drawn without
    replacement by ``rng`` (public randomness), in the same order."""
    if not 1 <= degree <= n_items:
        raise ConfigError(f"{what}: degree must be in 1..{n_items}, got {degree}")
    cliques = list(itertools.combinations(range(n_items), degree))
    if max_workload is not None and max_workload < len(cliques):
        keep = np.sort(rng.choice(len(cliques), size=max_workload, replace=False))
        cliques = [cliques[i] for i in keep]
    return cliques


def model_cliques(model: Any) -> list[Clique]:
    return [tuple(sorted(int(a) for a in cl)) for cl in model.cliques]


def size_filter(n_items: int, model: Any, size_limit: float) -> Callable[[Clique], bool]:
    """Whether a candidate keeps the junction tree at most ``size_limit`` MB: it is in a clique
    the model holds, or the model fits and already has its edges (same graph), or the model
    with it added fits (``model_size_mb``): private-pgm's filter, in AIM and MWEM+PGM."""
    cliques = model_cliques(model)
    free = {c for cl in cliques for c in powerset(cl)}
    edges = {e for cl in cliques for e in itertools.combinations(cl, 2)}
    fits_now = model_size_mb(n_items, cliques) <= size_limit
    return lambda c: (
        c in free
        or (fits_now and edges.issuperset(itertools.combinations(c, 2)))
        or model_size_mb(n_items, [*cliques, c]) <= size_limit
    )


def fitting_candidates(
    n_items: int, model: Any, candidates: Iterable[Clique], size_limit: float
) -> list[Clique]:
    """The candidates (in their order) that pass ``size_filter``."""
    fits = size_filter(n_items, model, size_limit)
    return [c for c in candidates if fits(c)]


def l1_errors(truth: TrueMarginals, tree: JunctionTree, cliques: Sequence[Clique]) -> np.ndarray:
    """||M_c(D) - M_c(model)||_1 for each clique (counts; NOT private: a selection score)."""
    return np.array([np.abs(truth(c) - tree.marginal(c)).sum() for c in cliques])


#: Draws of the unrestricted mechanism ``select_fitting`` tries before it filters every candidate.
MAX_TRIES = 64


def select_fitting(
    scores: np.ndarray, epsilon: float, sensitivity: float, rng: np.random.Generator,
    fits: Callable[[int], bool], tries: int = MAX_TRIES,
) -> int:
    """The exponential mechanism over the candidates i with ``fits(i)`` (a predicate that does not
    look at the data), without evaluating it on every candidate: up to ``tries`` draws over all
    candidates (one uniform each, ``select_index``) until one fits, else one draw over those
    that fit. The output has exactly the restricted mechanism's distribution: with P the
    mechanism over all, F the mass P gives the fitting ones and P_F the restricted mechanism,
    P(k) = F P_F(k), so a fitting k comes out with probability
    sum_{j < tries} (1 - F)^j F P_F(k) + (1 - F)^tries P_F(k) = P_F(k).
    """
    from dpgm.evaluation.mwem import select, selection_probabilities

    probs = selection_probabilities(np.asarray(scores, dtype=np.float64) / sensitivity, epsilon)
    for _ in range(tries):
        k = select(probs, rng.random())
        if fits(k):
            return k
    keep = np.array([i for i in range(len(probs)) if fits(i)], dtype=np.int64)
    if keep.size == 0:
        raise ConfigError("no candidate marginal fits the model size limit")
    return int(keep[select(probs[keep], rng.random())])


def select_and_measure(
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
    truth: TrueMarginals,
    candidates: Sequence[Clique],
    scores: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    sigma: float,
    fits: Callable[[Clique], bool] | None = None,
) -> tuple[Clique, np.ndarray, np.ndarray | None]:
    """One round: an ``epsilon`` exponential mechanism over ``candidates`` (one uniform; or, with
    ``fits``, over those that pass it, by ``select_fitting``), then a Gaussian measurement of the
    chosen marginal (noise ``sigma``), each charged before it is made. Returns (chosen clique,
    noisy marginal, selection probabilities; None with ``fits``)."""
    if not len(candidates):
        raise ConfigError(f"{stage}: no candidate marginal fits the model size limit")
    accountant.spend(stage, ExponentialEvent(epsilon=epsilon))
    if fits is None:
        k, probs = select_index(scores, epsilon, sensitivity, rng.random())
    else:
        k, probs = select_fitting(scores, epsilon, sensitivity, rng, lambda i: fits(candidates[i])), None
    (y,) = measure(accountant, stage, rng, sigma, [truth(candidates[k])])
    return candidates[k], y, probs


@dataclass(frozen=True)
class PgmOptions:
    """Settings of AIM and MWEM+PGM: workload (all ``degree``-way marginals, optionally
    ``max_workload`` of them at random), T = ``rounds`` (None: the mechanism's default), model
    size cap in MB, mirror-descent iterations per refit, and ``max_rounds``, a public cap on the
    rounds (None: none) whose last round spends what is left (``RoundSchedule``)."""

    degree: int = 2
    max_workload: int | None = None
    rounds: int | None = None
    max_model_size: float = 80.0
    max_iters: int = 250
    max_rounds: int | None = None


@dataclass
class PgmRound:
    """One AIM or MWEM+PGM round or MST selection: the chosen clique, its noise (probabilities:
    traced only)."""

    clique: Clique
    sigma: float
    epsilon: float
    probabilities: np.ndarray | None = None
    candidates: list[Clique] | None = None
    measurement: np.ndarray | None = None


@dataclass
class PgmResult:
    """The released graphical model (as a junction tree) and what the run measured."""

    tree: JunctionTree
    item_names: list[str]
    method: str
    rho: float
    rounds: list[PgmRound] = field(default_factory=list)
    measured: list[Clique] = field(default_factory=list)
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_noisy(self) -> float:
        """The model's total: mbi's minimum-variance estimate from the noisy marginals."""
        return self.tree.total

    def sample(self, n: int, rng: np.random.Generator) -> BinaryDataset:
        """``n`` synthetic records (post-processing)."""
        if n < 1:
            raise ConfigError(f"{self.method}: number of synthetic records must be >= 1, got {n}")
        records = sp.csr_matrix(self.tree.sample(n, rng))
        return BinaryDataset(records=records, item_names=list(self.item_names), name=self.method)


def synthesize(
    fit: Callable[..., PgmResult],
    records: np.ndarray | sp.spmatrix | BinaryDataset,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_out: int | None = None,
    **options: Any,
) -> np.ndarray:
    """Synthetic records of ``fit`` (fit_aim, fit_mst, fit_mwem_pgm) as a dense 0/1 uint8 matrix (``n_out`` rows,
    default the noisy n); ``options`` go to ``fit``."""
    result = fit(records, epsilon=epsilon, delta=delta, rng=rng, **options)
    return result.tree.sample(default_n_out(result) if n_out is None else n_out, rng)


def at_epsilon(mechanism: Callable[..., PgmResult], records: np.ndarray | sp.spmatrix | BinaryDataset, *,
               epsilon: float, delta: float, rng: np.random.Generator, accountant: Accountant | None = None,
               **options: Any) -> PgmResult:
    """A zCDP ``mechanism`` (aim, mwem_pgm: its whole run costs at most rho, whatever it adapts
    to) at (epsilon, delta): rho calibrated on dpgm's accountant (``rho_for_epsilon``); a fresh
    accountant with budget epsilon unless one is given."""
    rho = rho_for_epsilon(epsilon, delta)
    acc = accountant if accountant is not None else Accountant(delta=delta, budget_epsilon=epsilon)
    return mechanism(records, rho=rho, accountant=acc, rng=rng, **options)


def names_of(
    records: np.ndarray | sp.spmatrix | BinaryDataset, n_items: int, item_names: list[str] | None
) -> list[str]:
    """``item_names``, else the dataset's, else "0".."m-1"."""
    if item_names:
        return list(item_names)
    if isinstance(records, BinaryDataset):
        return list(records.item_names)
    return [str(j) for j in range(n_items)]


def default_n_out(result: PgmResult) -> int:
    return max(1, round(result.n_noisy))


class Timer:
    """Wall-clock seconds of a fit, for the report only: no rounds rule reads it."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
