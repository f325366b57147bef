"""MWEM+PGM: accounting against the authors' formulas and cdp2adp, selection, output."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpgm.errors import PrivacyBudgetError
from dpgm.evaluation.mwem_pgm import ALPHA, MwemPgmOptions, MwemPgmSchedule
from dpgm.evaluation.pgm import rho_for_epsilon
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import ExponentialEvent, GaussianEvent
from dpgm.privacy.mechanisms import exponential_mechanism
from tests.evaluation.test_aim import cdp_eps, cdp_rho, marginal_release

CASES = [(1.0, 1e-6, 100), (0.3, 1e-7, 17), (4.0, 1e-5, 3)]


def authors_round(rho: float, rounds: int) -> tuple[float, float]:
    """private-pgm mechanisms/mwem+pgm.py (Gaussian noise), verbatim: (exp_eps, sigma)."""
    alpha = 0.9
    rho_per_round = rho / rounds
    sigma = np.sqrt(0.5 / (alpha * rho_per_round))
    exp_eps = np.sqrt(8 * (1 - alpha) * rho_per_round)
    return float(exp_eps), float(sigma)


@pytest.mark.parametrize("epsilon,delta,rounds", CASES)
def test_schedule_matches_the_authors_and_cdp2adp(epsilon: float, delta: float, rounds: int) -> None:
    rho = rho_for_epsilon(epsilon, delta)
    assert rho == pytest.approx(cdp_rho(epsilon, delta), rel=5e-3)  # grid of orders vs continuous
    assert ALPHA == 0.9
    for stop in (rounds, 1, max(1, rounds // 3)):  # the full plan, and capped by max_rounds
        acc = Accountant(delta=delta, budget_epsilon=epsilon)
        sched = MwemPgmSchedule(rho, rounds, max_rounds=stop)
        total, t, last = 0.0, 0, False
        while not last:
            t += 1
            eps_t, sigma_t, last = sched.next_round()
            if not last:
                assert (eps_t, sigma_t) == pytest.approx(authors_round(rho, rounds), rel=1e-12)
            acc.spend("mwem_pgm", ExponentialEvent(epsilon=eps_t))
            acc.spend("mwem_pgm", GaussianEvent(noise_multiplier=sigma_t))
            total += eps_t**2 / 8 + 1 / (2 * sigma_t**2)  # zCDP of the two events, by hand
        assert t == min(stop, rounds)
        assert total == pytest.approx(rho, rel=1e-9) and sched.used == pytest.approx(rho, rel=1e-9)
        spent = acc.spent().epsilon
        assert spent <= epsilon
        assert spent == pytest.approx(cdp_eps(total, delta), rel=5e-3)


def test_schedule_rejects_bad_settings() -> None:
    from dpgm.errors import ConfigError

    with pytest.raises(ConfigError):
        MwemPgmSchedule(0.0, 10)
    with pytest.raises(ConfigError):
        MwemPgmSchedule(0.1, 0)


def test_the_mechanism_with_fits_is_the_restricted_exponential_mechanism() -> None:
    from dpgm.evaluation.mwem import selection_probabilities

    scores = np.array([3.0, 9.0, 1.0, 8.5, 0.0, 7.0])
    fits = {0, 2, 4, 5}  # the two best do not fit: most unrestricted draws are rejected
    target = np.zeros(scores.size)
    target[sorted(fits)] = selection_probabilities(scores[sorted(fits)], 1.0)
    for tries in (0, 1, 3, 64):  # the fallback alone, mixed, and rejection alone (almost surely)
        rng = np.random.default_rng(tries)
        draws = [exponential_mechanism(scores, epsilon=1.0, sensitivity=1.0, accountant=Accountant(delta=1e-6),
                                       stage="s", rng=rng, fits=lambda i: i in fits, tries=tries)
                 for _ in range(5_000)]
        freq = np.bincount(draws, minlength=scores.size) / len(draws)
        np.testing.assert_allclose(freq, target, atol=0.025)  # 3.5 standard errors at most


# ---- runs (need mbi)


def correlated(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    return (rng.random((n, m)) < 0.1 + 0.7 * z[:, None] * (np.arange(m) % 2 == 0)).astype(np.uint8)


def test_selection_picks_the_worst_answered_marginal_with_a_huge_budget() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.mwem_pgm import mwem_pgm
    from dpgm.evaluation.pgm import TrueMarginals

    rng = np.random.default_rng(0)
    z = rng.random(3000)
    x = (rng.random((3000, 4)) < np.array([0.08, 0.12, 0.16, 0.2]) * (0.5 + z[:, None])).astype(np.uint8)
    truth = TrueMarginals(x)  # four rare items: an unmeasured pair (1/4 a cell) is answered worst
    res = mwem_pgm(x, rho=1e6, accountant=Accountant(delta=1e-6), rng=np.random.default_rng(1),
                   trace=True, options=MwemPgmOptions(rounds=3, max_iters=1000))
    first, second = res.rounds[0], res.rounds[1]
    assert first.candidates == list(itertools.combinations(range(4), 2))
    # round 2 by hand: the model knows the first pair almost exactly (sigma ~ 1e-3) and nothing
    # else (1/2 each way, independent): M_r(p_hat) = counts of r's measured items x 1/2 per other
    known = set(first.clique)
    expected = {}
    for r in second.candidates:
        kept = tuple(j for j in r if j in known)
        table = truth(kept).reshape((2,) * len(kept)) if kept else np.array(truth.n_records)
        est = np.broadcast_to(
            table.reshape([2 if j in known else 1 for j in r]) / 2 ** (len(r) - len(kept)), (2,) * len(r)
        )
        expected[r] = np.abs(truth(r) - est.ravel()).sum() - 4
    worst = max(expected, key=expected.get)
    assert worst == tuple(sorted(set(range(4)) - known))
    assert max(expected.values()) - sorted(expected.values())[-2] > 100  # a clear worst one
    assert second.clique == worst and second.probabilities.max() > 0.999
    assert second.sigma == pytest.approx(math.sqrt(0.5 / (0.9 * 1e6 / 3)))


def test_fit_spends_at_most_epsilon_refuses_beyond_and_samples() -> None:
    pytest.importorskip("mbi")
    from dpgm.data.dataset import BinaryDataset
    from dpgm.evaluation.mwem_pgm import fit_mwem_pgm

    x = correlated(2000, 6, 2)
    acc = Accountant(delta=1e-6, budget_epsilon=1.0)
    res = fit_mwem_pgm(x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(3), accountant=acc,
                       options=MwemPgmOptions(max_iters=100))
    assert len(res.rounds) == 6 == res.info["T"]  # T = the number of items
    # per round: the selection, then the chosen pair's exact discrete Gaussian (4 cells) at sigma_t
    assert [(e.event, e.count) for e in acc.ledger.entries] == [
        pair for r in res.rounds
        for pair in [(ExponentialEvent(epsilon=r.epsilon), 1), (marginal_release(r.sigma, 4)[0], 1)]
    ]
    assert acc.spent().epsilon <= 1.0
    assert acc.spent().epsilon == pytest.approx(cdp_eps(res.rho, 1e-6), rel=5e-3)
    assert res.info["rho_used"] == pytest.approx(res.rho, rel=1e-9)
    assert all(len(c) == 2 for c in res.measured)

    capped = fit_mwem_pgm(x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(3),
                          options=MwemPgmOptions(max_iters=50, max_rounds=2))
    assert len(capped.rounds) == 2 and capped.info["rho_used"] == pytest.approx(capped.rho, rel=1e-9)
    assert capped.rounds[1].sigma < capped.rounds[0].sigma  # the last round spent the rest

    small = Accountant(delta=1e-6, budget_epsilon=0.5)
    with pytest.raises(PrivacyBudgetError):
        fit_mwem_pgm(x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(3), accountant=small)
    assert small.ledger.entries == []  # refused before anything was released

    out = res.sample(321, np.random.default_rng(4))
    assert isinstance(out, BinaryDataset) and out.records.shape == (321, 6)
    assert out.item_names == [str(j) for j in range(6)]
    assert set(np.unique(out.records.toarray())) <= {0, 1}


def test_run_baseline_mwem_pgm() -> None:
    pytest.importorskip("mbi")
    import scipy.sparse as sp

    from dpgm.data.dataset import BinaryDataset
    from dpgm.evaluation.counting import BASELINES, run_baseline
    from dpgm.evaluation.queries import make_queries

    assert "mwem_pgm" in BASELINES
    x = correlated(1500, 5, 5)
    real = BinaryDataset(records=sp.csr_matrix(x), item_names=list("abcde"))
    queries = make_queries(5, 3, 20, np.random.default_rng(0))
    syn, report = run_baseline("mwem_pgm", real, queries, epsilon=1.0, delta=1e-6,
                               rng=np.random.default_rng(6), n_synthetic=400,
                               options=MwemPgmOptions(max_iters=50))
    assert isinstance(syn, BinaryDataset) and syn.n_records == 400 and syn.item_names == list("abcde")
    assert report["rounds"] == 5 and report["epsilon"] <= 1.0
