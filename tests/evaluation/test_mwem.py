"""MWEM against a brute-force pure-Python implementation, its ledger, and its domains."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, PrivacyBudgetError
from dpgm.evaluation.mwem import (
    FullDomain,
    MwemBudget,
    SupportDomain,
    fit_mwem,
    mwem,
    random_support,
    subset_sums,
)
from dpgm.evaluation.queries import QuerySet, answer, make_queries, relative_errors
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_laplace
from dpgm.privacy.events import DiscreteLaplaceEvent, ExponentialEvent
from dpgm.privacy.mechanisms import grid_sensitivity, snap_grid
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon

M = 3
ALL_QUERIES = [list(p) for k in (1, 2, 3) for p in itertools.combinations(range(M), k)]  # 7 item sets


def tiny_data() -> BinaryDataset:
    rows = [{0}] * 12 + [{0, 1}] * 5 + [{2}] * 3 + [set()] * 4 + [{1, 2}] * 2
    dense = np.zeros((len(rows), M), dtype=np.uint8)
    for i, row in enumerate(rows):
        dense[i, list(row)] = 1
    return BinaryDataset(records=dense, item_names=["a", "b", "c"])


def workload() -> QuerySet:
    return QuerySet(items=[np.array(p) for p in ALL_QUERIES], group=np.ones(7, dtype=int),
                    n_items=M, maxlen=M, groups=1)


def laplace_count(
    value: float, epsilon: float, rng: np.random.Generator, *, on_grid: bool
) -> float:
    """value + Lap(1 / epsilon) as the mechanism releases it (same random stream): the exact
    discrete Laplace at the matched epsilon' < epsilon, an int on the integers, a float snapped to
    the power-of-two grid for L1 sensitivity 1 (bounds rounded up by the mechanism's 2^-50)."""
    up = 1 + 2**-50
    sensitivity = (1.0 / epsilon) * epsilon * up  # scale 1 / epsilon, times epsilon
    grid = snap_grid(sensitivity, 1, norm=1) if on_grid else 1.0
    units = grid_sensitivity(sensitivity, 1, grid, norm=1) if on_grid else sensitivity
    noise = int(discrete_laplace((), units / matched_discrete_laplace_epsilon(epsilon) * up, rng))
    return (round(value / grid) + noise) * grid


def brute_force_mwem(domain: list[set[int]], records: list[set[int]], queries: list[list[int]], *,
                     epsilon: float, rounds: int, n_fraction: float, repeat: int, rng: np.random.Generator):
    """Hardt et al. Algorithm 1 with loops over domain records and queries (same random stream)."""
    def hits(x: set[int], p: list[int]) -> bool:
        return any(j in x for j in p)

    truth = [sum(hits(r, p) for r in records) for p in queries]
    eps_n, eps_r = n_fraction * epsilon, (1 - n_fraction) * epsilon / (2 * rounds)
    n_noisy = max(1.0, laplace_count(len(records), eps_n, rng, on_grid=False))  # n: an int
    w = [1.0 / len(domain)] * len(domain)

    def update(k: int, target: float) -> None:
        est = sum(w[c] for c, x in enumerate(domain) if hits(x, queries[k]))
        for c, x in enumerate(domain):
            if hits(x, queries[k]):
                w[c] *= math.exp((target - est) / 2)
        total = sum(w)
        w[:] = [v / total for v in w]

    trace, measured = [], []
    for _ in range(rounds):
        est = [sum(w[c] for c, x in enumerate(domain) if hits(x, p)) for p in queries]
        scores = [abs(n_noisy * e - t) for e, t in zip(est, truth)]
        top = max(scores)
        unnorm = [math.exp(eps_r * (s - top) / 2) for s in scores]
        probs = [u / sum(unnorm) for u in unnorm]
        u, cum, pick = rng.random(), 0.0, len(queries) - 1
        for k, p in enumerate(probs):
            cum += p
            if cum > u:
                pick = k
                break
        meas = laplace_count(truth[pick], eps_r, rng, on_grid=True)  # answers are floats
        measured.append((pick, meas / n_noisy))
        update(*measured[-1])
        for _ in range(repeat):
            for k, target in measured:
                update(k, target)
        trace.append((pick, meas, probs, list(w)))
    return trace


def as_sets(data: BinaryDataset) -> list[set[int]]:
    return [set(np.flatnonzero(row).tolist()) for row in data.dense()]


@pytest.mark.parametrize("repeat", [0, 3])
def test_full_domain_matches_brute_force(repeat: int) -> None:
    data = tiny_data()
    cells = [{j for j in range(M) if c >> j & 1} for c in range(2**M)]
    kwargs = {"epsilon": 40.0, "rounds": 6, "n_fraction": 0.1}
    expected = brute_force_mwem(cells, as_sets(data), ALL_QUERIES, repeat=repeat,
                                rng=np.random.default_rng(7), **kwargs)
    result = mwem(answer(data, workload()), data.n_records, FullDomain(workload()),
                  budget=MwemBudget(**kwargs), accountant=Accountant(delta=1e-6),
                  rng=np.random.default_rng(7), item_names=data.item_names, repeat_updates=repeat, trace=True)
    assert [r.query for r in result.rounds] == [t[0] for t in expected]
    assert len({r.query for r in result.rounds}) > 1  # the stream exercised several selections
    for got, (_, meas, probs, weights) in zip(result.rounds, expected):
        assert got.measurement == pytest.approx(meas, rel=1e-12)
        np.testing.assert_allclose(got.probabilities, probs, rtol=1e-9)
        np.testing.assert_allclose(got.weights, weights, rtol=1e-9, atol=1e-15)
    assert np.ptp(result.rounds[0].probabilities) > 0.05  # selection is far from uniform here
    np.testing.assert_allclose(result.weights, expected[-1][3], rtol=1e-9, atol=1e-15)


def test_support_domain_matches_brute_force() -> None:
    data = tiny_data()
    support_sets = [set(), {0}, {0, 1}, {1, 2}, {2}, {0, 1, 2}]
    support = np.zeros((len(support_sets), M), dtype=np.int32)
    for i, x in enumerate(support_sets):
        support[i, list(x)] = 1
    kwargs = {"epsilon": 30.0, "rounds": 5, "n_fraction": 0.2}
    expected = brute_force_mwem(support_sets, as_sets(data), ALL_QUERIES, repeat=2,
                                rng=np.random.default_rng(8), **kwargs)
    result = mwem(answer(data, workload()), data.n_records, SupportDomain(sp.csr_matrix(support), workload()),
                  budget=MwemBudget(**kwargs), accountant=Accountant(delta=1e-6),
                  rng=np.random.default_rng(8), item_names=data.item_names, repeat_updates=2, trace=True)
    for got, (pick, meas, probs, weights) in zip(result.rounds, expected):
        assert got.query == pick and got.measurement == pytest.approx(meas, rel=1e-12)
        np.testing.assert_allclose(got.probabilities, probs, rtol=1e-9)
        np.testing.assert_allclose(got.weights, weights, rtol=1e-6, atol=1e-12)  # float32 masks


def test_ledger_has_one_entry_per_release() -> None:
    accountant = Accountant(delta=1e-6)
    fit_mwem(tiny_data(), workload(), epsilon=2.0, accountant=accountant, rng=np.random.default_rng(0),
             rounds=4, n_fraction=0.1, stage="mwem")
    entries = accountant.ledger.entries
    assert [e.count for e in entries] == [1] * 9
    n_event = entries[0].event  # n is an int: released on the integers
    assert isinstance(n_event, DiscreteLaplaceEvent) and (n_event.dim, n_event.grid) == (1, 1.0)
    assert n_event.epsilon == matched_discrete_laplace_epsilon(0.2)
    assert n_event.sensitivity == pytest.approx(1.0, rel=1e-12) and n_event.sensitivity >= 1.0
    round_eps = 0.9 * 2.0 / 8
    grid = snap_grid(1.0, 1, norm=1)  # a measured answer is a float: snapped to the grid
    measure = DiscreteLaplaceEvent(epsilon=matched_discrete_laplace_epsilon(round_eps), dim=1,
                                   grid=grid, sensitivity=entries[2].event.sensitivity)
    assert measure.sensitivity == pytest.approx(grid_sensitivity(1.0, 1, grid, norm=1), rel=1e-12)
    assert [e.event for e in entries[1:]] == [ExponentialEvent(epsilon=round_eps), measure] * 4
    pure_total = sum(e.event.epsilon * e.count for e in entries)
    # the discrete Laplaces are charged a matched epsilon' below the planned one (slightly more
    # noise), so the run spends a little less than its plan of 2.0, never more
    assert 0.95 * 2.0 <= pure_total <= 2.0
    assert accountant.spent().epsilon <= pure_total + 1e-9  # RDP never worse than pure composition


def test_budget_is_enforced_before_any_release() -> None:
    accountant = Accountant(delta=1e-6, budget_epsilon=0.5)
    with pytest.raises(PrivacyBudgetError):
        fit_mwem(tiny_data(), workload(), epsilon=50.0, accountant=accountant, rng=np.random.default_rng(0),
                 rounds=3)
    assert accountant.spent().epsilon <= 0.5


def test_mwem_learns_the_workload() -> None:
    rng = np.random.default_rng(1)
    m = 8
    probs = np.linspace(0.05, 0.6, m)
    data = BinaryDataset(records=(rng.random((5000, m)) < probs).astype(np.uint8),
                         item_names=[str(j) for j in range(m)])
    queries = make_queries(m, m, 100, rng)
    uniform = BinaryDataset(records=(rng.random((5000, m)) < 0.5).astype(np.uint8), item_names=data.item_names)
    result = fit_mwem(data, queries, epsilon=5.0, accountant=Accountant(delta=1e-6), rng=rng, rounds=20)
    synthetic = result.sample(5000, rng)
    assert relative_errors(data, synthetic, queries).mean() < 0.3 * relative_errors(data, uniform, queries).mean()


def test_subset_sums_and_full_domain_answers() -> None:
    rng = np.random.default_rng(2)
    m = 5
    values = rng.random(2**m)
    sums = subset_sums(values, m)
    for s in range(2**m):
        assert sums[s] == pytest.approx(sum(values[c] for c in range(2**m) if c & ~s == 0))
    queries = make_queries(m, m, 20, rng)
    domain = FullDomain(queries)
    cells = domain.records(np.arange(2**m))
    np.testing.assert_allclose(domain.answers(values), answer(cells, queries, weights=values))
    expected_mask = cells.toarray()[:, queries.items[0]].any(axis=1).astype(float)
    np.testing.assert_array_equal(domain.mask(0), expected_mask)


def test_random_support_is_public_prior() -> None:
    support = random_support(20, 500, 8, np.random.default_rng(3))
    lengths = np.diff(support.indptr)
    assert support.shape == (500, 20) and lengths[0] == 0
    assert (support[1:21].toarray() == np.eye(20)).all()  # every singleton
    assert lengths[21:].min() >= 2 and lengths.max() <= 8
    assert np.mean(lengths[21:] == 2) > np.mean(lengths[21:] == 8)  # P(l) ~ 1/l
    again = random_support(20, 500, 8, np.random.default_rng(3))
    assert (again != support).nnz == 0


def test_large_universe_uses_support_domain() -> None:
    rng = np.random.default_rng(4)
    m = 30
    data = BinaryDataset(records=sp.csr_matrix((rng.random((400, m)) < 0.1).astype(np.uint8)),
                         item_names=[str(j) for j in range(m)])
    queries = make_queries(m, 6, 25, rng)
    result = fit_mwem(data, queries, epsilon=1.0, accountant=Accountant(delta=1e-5), rng=rng, rounds=3,
                      support_size=300)
    assert isinstance(result.domain, SupportDomain) and result.domain.size == 300
    assert result.sample(50, rng).records.shape == (50, m)


@pytest.mark.parametrize("kwargs", [{"epsilon": 0.0}, {"rounds": 0}, {"n_fraction": 1.0}])
def test_budget_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        MwemBudget(**({"epsilon": 1.0, "rounds": 5, "n_fraction": 0.05} | kwargs))
