"""MWEM baseline (Hardt, Ligett, McSherry 2012, Algorithm 1) for counting queries on item sets.

Each of T rounds: (1) the exponential mechanism picks the workload query worst answered by
the current distribution A, P(q) ~ exp(eps_round * |n q(A) - q(B)| / 2); (2) the Laplace
mechanism measures it, m = q(B) + Lap(1 / eps_round); (3) multiplicative weights:
A(x) <- A(x) exp(q(x) (m - n q(A)) / (2 n)), renormalised; then, as in the paper's practical
variant, ``repeat_updates`` more passes of that update over every measurement so far.
The output is the last A (the practical variant) or the average of the A_i (the theorem).

Privacy (add/remove one record, docs/privacy.md). A query "contains at least one item of
P" changes by at most 1 when one record is added or removed, so the score and the
measurement both have sensitivity 1 (no clipping needed). n is private: a share
``n_fraction`` of epsilon releases it once with Laplace noise; the rest is split evenly over
the 2T mechanisms (eps_round = (1 - n_fraction) epsilon / (2T) each). The ledger gets one
LaplaceEvent for n, T ExponentialEvents and T LaplaceEvents, charged before each release:
pure epsilon-DP in total; the RDP accountant may report a smaller epsilon at a given delta.
The real data enter only through the true workload answers q(B) and n.

Domain. With m items the full domain has 2^m records: used exactly when m <= max_full_items
(msnbc: 17 items, 131,072 cells; workload answers for all cells at once by a subset-sum
transform). For larger m, A lives on a finite support of ``support_size`` candidate records
drawn WITHOUT looking at the data (``random_support``: the empty record, every singleton, and
records of length l in 2..L with P(l) ~ 1/l, L public, items uniform without replacement):
the support is public randomness, so the guarantee is unchanged; the cost is accuracy
(A can only mix the candidates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.evaluation.queries import QuerySet, answer, as_csr, hit_chunks, records_from_bitmasks
from dpgm.evaluation.saved import Arrays, csr_arrays, csr_from, saved_as
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DpEvent, ExponentialEvent, LaplaceEvent
from dpgm.privacy.mechanisms import exponential_mechanism, floor_counts, laplace_release
from dpgm.progress import stage_bar

MAX_FULL_ITEMS = 20  # 2^20 cells (8 MiB of weights) is still cheap


class Domain(Protocol):
    """Records the MWEM distribution lives on; queries as 0/1 masks over them."""

    size: int

    def answers(self, weights: np.ndarray) -> np.ndarray:
        """Every workload query's weighted fraction sum_x w(x) q(x)."""

    def mask(self, k: int) -> np.ndarray:
        """Query k as a float 0/1 vector over the domain."""

    def records(self, index: np.ndarray) -> sp.csr_matrix:
        """The domain records at ``index`` as CSR rows."""


def subset_sums(values: np.ndarray, n_items: int) -> np.ndarray:
    """Zeta transform: out[S] = sum of values[c] over cells c whose bits are a subset of S."""
    out = np.array(values, dtype=np.float64)
    for j in range(n_items):
        view = out.reshape(-1, 2, 1 << j)
        view[:, 1, :] += view[:, 0, :]
    return out


class FullDomain:
    """All 2^m binary records: cell c holds item j iff bit j of c is set."""

    def __init__(self, queries: QuerySet) -> None:
        if queries.n_items > MAX_FULL_ITEMS:
            raise ConfigError(f"mwem: full domain needs at most {MAX_FULL_ITEMS} items, got {queries.n_items}")
        self.n_items = queries.n_items
        self.size = 1 << self.n_items
        self._bits = queries.bitmasks().astype(np.int64)
        self._cells = np.arange(self.size, dtype=np.int64)

    def answers(self, weights: np.ndarray) -> np.ndarray:
        """Fraction hitting P = total minus the mass on cells inside the complement of P."""
        sums = subset_sums(weights, self.n_items)
        return sums[-1] - sums[(self.size - 1) ^ self._bits]

    def mask(self, k: int) -> np.ndarray:
        return ((self._cells & self._bits[k]) != 0).astype(np.float64)

    def records(self, index: np.ndarray) -> sp.csr_matrix:
        return records_from_bitmasks(np.asarray(index, dtype=np.uint64), self.n_items)


class SupportDomain:
    """A finite, data-independent set of candidate records (CSR rows)."""

    def __init__(self, support: sp.spmatrix, queries: QuerySet) -> None:
        self.support = as_csr(support)
        if self.support.shape[1] != queries.n_items:
            raise ConfigError(f"mwem: support has {self.support.shape[1]} items, queries {queries.n_items}")
        self.size = self.support.shape[0]
        self._hits = np.zeros((self.size, len(queries)), dtype=np.float32)
        for start, hits in hit_chunks(self.support, queries.incidence()):
            self._hits[start : start + hits.shape[0]] = hits.toarray() > 0

    def answers(self, weights: np.ndarray) -> np.ndarray:
        return np.asarray(weights, dtype=np.float64) @ self._hits

    def mask(self, k: int) -> np.ndarray:
        return self._hits[:, k].astype(np.float64)

    def records(self, index: np.ndarray) -> sp.csr_matrix:
        return self.support[np.asarray(index)]


class SavedDomain:
    """A domain as saved: the records its weights are over (sampling needs no query masks)."""

    def __init__(self, n_items: int, support: sp.csr_matrix | None) -> None:
        self.n_items, self.support = n_items, support
        self.size = (1 << n_items) if support is None else support.shape[0]

    def records(self, index: np.ndarray) -> sp.csr_matrix:
        if self.support is None:
            return records_from_bitmasks(np.asarray(index, dtype=np.uint64), self.n_items)
        return self.support[np.asarray(index)]


def random_support(n_items: int, size: int, max_length: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``size`` candidate records drawn without looking at any data (a public prior).

    The empty record and all m singletons come first; the others have length l in 2..L with
    P(l) ~ 1/l (short records are common in transaction data) and uniform items without replacement.
    """
    if size < n_items + 1 or not 1 <= max_length <= n_items:
        raise ConfigError(f"mwem: need support size >= {n_items + 1} and 1 <= max length <= {n_items}")
    extra = size - n_items - 1
    choices = np.arange(2, max_length + 1)
    lengths = np.zeros(extra, dtype=np.int64)
    if choices.size:
        lengths = rng.choice(choices, size=extra, p=(1.0 / choices) / (1.0 / choices).sum())
    lengths = np.concatenate([[0], np.ones(n_items, dtype=np.int64), lengths])
    order = np.argsort(rng.random((size, n_items)), axis=1)
    order[1 : n_items + 1, 0] = np.arange(n_items)
    keep = np.arange(n_items)[None, :] < lengths[:, None]
    rows = np.repeat(np.arange(size), lengths)
    data = np.ones(rows.size, dtype=np.int32)
    return sp.csr_matrix((data, (rows, order[keep])), shape=(size, n_items))


@dataclass(frozen=True)
class MwemBudget:
    """Pure-epsilon split: ``n_epsilon`` for n, then ``round_epsilon`` for each of 2T mechanisms."""

    epsilon: float
    rounds: int
    n_fraction: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ConfigError(f"mwem: epsilon must be > 0, got {self.epsilon}")
        if self.rounds < 1:
            raise ConfigError(f"mwem: rounds must be >= 1, got {self.rounds}")
        if not 0 < self.n_fraction < 1:
            raise ConfigError(f"mwem: n_fraction must be in (0, 1), got {self.n_fraction}")

    @property
    def n_epsilon(self) -> float:
        return self.n_fraction * self.epsilon

    @property
    def round_epsilon(self) -> float:
        return (1.0 - self.n_fraction) * self.epsilon / (2 * self.rounds)

    def events(self) -> list[tuple[DpEvent, int]]:
        """(event, count) pairs the run charges, in order."""
        return [
            (LaplaceEvent(epsilon=self.n_epsilon), 1),
            (ExponentialEvent(epsilon=self.round_epsilon), self.rounds),
            (LaplaceEvent(epsilon=self.round_epsilon), self.rounds),
        ]


def selection_probabilities(scores: np.ndarray, epsilon: float) -> np.ndarray:
    """Exponential mechanism with sensitivity-1 scores: P(q) ~ exp(epsilon * score(q) / 2)."""
    logits = 0.5 * epsilon * np.asarray(scores, dtype=np.float64)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def multiplicative_update(weights: np.ndarray, mask: np.ndarray, target: float) -> np.ndarray:
    """A(x) <- A(x) exp(q(x) (target - q(A)) / 2), renormalised (A and target as fractions of n)."""
    estimate = float(np.einsum("i,i->", mask, weights))  # not BLAS: threads contend on small dots
    factor = math.exp(0.5 * (target - estimate))  # exp(q(x) c) = 1 + (e^c - 1) q(x) for q(x) in {0, 1}
    out = weights * (1.0 + (factor - 1.0) * mask)
    return out / out.sum()


@dataclass
class MwemRound:
    """One round: the selected query, its noisy count, and (traced, not private) P(select) and A."""

    query: int
    measurement: float
    probabilities: np.ndarray | None = None
    weights: np.ndarray | None = None


@dataclass
@saved_as("mwem")
class MwemResult:
    """The released distribution ``weights`` over ``domain`` and the noisy record count."""

    weights: np.ndarray
    domain: Domain
    n_noisy: float
    item_names: list[str]
    rounds: list[MwemRound] = field(default_factory=list)

    def state(self) -> tuple[dict[str, Any], Arrays]:
        """The weights and, over a support, its records (the query masks are not needed to sample)."""
        support = getattr(self.domain, "support", None)
        meta = {"n_noisy": self.n_noisy, "item_names": list(self.item_names), "n_items": len(self.item_names),
                "domain": "full" if support is None else "support"}
        arrays = {"weights": np.asarray(self.weights, dtype=np.float64)}
        return meta, arrays if support is None else {**arrays, **csr_arrays("support", support)}

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: Arrays) -> MwemResult:
        support = csr_from("support", arrays) if meta["domain"] == "support" else None
        return cls(weights=arrays["weights"], domain=SavedDomain(int(meta["n_items"]), support),  # type: ignore[arg-type]
                   n_noisy=float(meta["n_noisy"]), item_names=list(meta["item_names"]))

    def sample(self, n: int, rng: np.random.Generator) -> BinaryDataset:
        """``n`` records drawn from the released distribution (post-processing)."""
        if n < 1:
            raise ConfigError(f"mwem: number of synthetic records must be >= 1, got {n}")
        index = rng.choice(self.domain.size, size=n, p=self.weights)
        return BinaryDataset(records=self.domain.records(index), item_names=list(self.item_names), name="mwem")


def mwem(
    true_answers: np.ndarray,
    n_records: int,
    domain: Domain,
    *,
    budget: MwemBudget,
    accountant: Accountant,
    rng: np.random.Generator,
    item_names: list[str],
    repeat_updates: int = 10,
    output: Literal["last", "average"] = "last",
    trace: bool = False,
    stage: str = "mwem",
) -> MwemResult:
    """Algorithm 1 of Hardt et al. on precomputed true answers q(B) (see the module docstring).

    Every draw is exact (``dpgm.privacy.mechanisms``: the OS CSPRNG in a private run). A seeded
    generator's stream, in order: one Laplace draw for n, then per round one uniform (the
    selection's inverse CDF) and one Laplace draw (measurement): it reproduces a run exactly.
    ``trace`` keeps each round's selection probabilities, which are NOT private: tests only.
    """
    if repeat_updates < 0 or output not in ("last", "average"):
        raise ConfigError("mwem: repeat_updates must be >= 0 and output 'last' or 'average'")
    truth = np.asarray(true_answers, dtype=np.float64)
    eps = budget.round_epsilon
    n_noisy = float(floor_counts(laplace_release(n_records, l1_sensitivity=1.0, epsilon=budget.n_epsilon,
                                                 accountant=accountant, stage=stage, rng=rng)))
    weights = np.full(domain.size, 1.0 / domain.size)
    average = np.zeros(domain.size)
    measured: list[tuple[np.ndarray, float]] = []
    rounds: list[MwemRound] = []
    bar = stage_bar("mwem", budget.rounds, unit="round")
    for _ in range(budget.rounds):
        scores = np.abs(n_noisy * domain.answers(weights) - truth)
        k = exponential_mechanism(scores, epsilon=eps, sensitivity=1.0, accountant=accountant, stage=stage, rng=rng)
        probs = selection_probabilities(scores, eps) if trace else None
        measurement = float(laplace_release(truth[k], l1_sensitivity=1.0, epsilon=eps,
                                            accountant=accountant, stage=stage, rng=rng))
        measured.append((domain.mask(k), measurement / n_noisy))
        weights = multiplicative_update(weights, *measured[-1])
        for _ in range(repeat_updates):
            for mask, target in measured:
                weights = multiplicative_update(weights, mask, target)
        average += weights / budget.rounds
        rounds.append(MwemRound(k, measurement, probs, weights.copy() if trace else None))
        bar.advance()
    bar.close()
    final = weights if output == "last" else average / average.sum()
    return MwemResult(weights=final, domain=domain, n_noisy=n_noisy, item_names=item_names, rounds=rounds)


def make_domain(
    queries: QuerySet,
    rng: np.random.Generator,
    *,
    support_size: int = 10_000,
    support_max_length: int | None = None,
    max_full_items: int = MAX_FULL_ITEMS,
) -> Domain:
    """The full domain when m <= max_full_items, else a random data-independent support."""
    if queries.n_items <= min(max_full_items, MAX_FULL_ITEMS):
        return FullDomain(queries)
    length = queries.n_items if support_max_length is None else support_max_length
    return SupportDomain(random_support(queries.n_items, support_size, length, rng), queries)


def fit_mwem(
    data: BinaryDataset,
    queries: QuerySet,
    *,
    epsilon: float,
    accountant: Accountant,
    rng: np.random.Generator,
    rounds: int = 50,
    n_fraction: float = 0.05,
    repeat_updates: int = 10,
    output: Literal["last", "average"] = "last",
    support_size: int = 10_000,
    support_max_length: int | None = None,
    stage: str = "mwem",
) -> MwemResult:
    """MWEM on ``data`` with the workload ``queries`` and total pure budget ``epsilon``."""
    budget = MwemBudget(epsilon=epsilon, rounds=rounds, n_fraction=n_fraction)
    domain = make_domain(queries, rng, support_size=support_size, support_max_length=support_max_length)
    return mwem(
        answer(data, queries),
        data.n_records,
        domain,
        budget=budget,
        accountant=accountant,
        rng=rng,
        item_names=list(data.item_names),
        repeat_updates=repeat_updates,
        output=output,
        stage=stage,
    )
