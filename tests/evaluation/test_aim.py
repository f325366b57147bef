"""AIM: accounting against the authors' cdp2adp, and one round against a brute-force reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.evaluation.aim import AimOptions, AimSchedule, compile_workload, default_rounds
from dpgm.evaluation.pgm import rho_for_epsilon
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_gaussian
from dpgm.privacy.events import DiscreteGaussianEvent, ExponentialEvent, GaussianEvent

# ---- the authors' cdp2adp (private-pgm mechanisms/cdp2adp.py, Canonne, Kamath, Steinke 2020),
# ---- copied verbatim as the independent reference (asserts kept, plotting import dropped)


def cdp_delta(rho, eps):
    assert rho >= 0
    assert eps >= 0
    if rho == 0:
        return 0  # degenerate case
    amin = 1.01  # don't let alpha be too small, due to numerical stability
    amax = (eps + 1) / (2 * rho) + 2
    for i in range(1000):  # should be enough iterations
        alpha = (amin + amax) / 2
        derivative = (2 * alpha - 1) * rho - eps + math.log1p(-1.0 / alpha)
        if derivative < 0:
            amin = alpha
        else:
            amax = alpha
    delta = math.exp((alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha)) / (
        alpha - 1.0
    )
    return min(delta, 1.0)  # delta<=1 always


def cdp_eps(rho, delta):
    assert rho >= 0
    assert delta > 0
    if delta >= 1 or rho == 0:
        return 0.0  # if delta>=1 or rho=0 then anything goes
    epsmin = 0.0  # maintain cdp_delta(rho,eps)>=delta
    epsmax = rho + 2 * math.sqrt(rho * math.log(1 / delta))  # maintain cdp_delta(rho,eps)<=delta
    for i in range(1000):
        eps = (epsmin + epsmax) / 2
        if cdp_delta(rho, eps) <= delta:
            epsmax = eps
        else:
            epsmin = eps
    return epsmax


def cdp_rho(eps, delta):
    assert eps >= 0
    assert delta > 0
    if delta >= 1:
        return 0.0  # if delta>=1 anything goes
    rhomin = 0.0  # maintain cdp_delta(rho,eps)<=delta
    rhomax = eps + 1  # maintain cdp_delta(rhomax,eps)>delta
    for i in range(1000):
        rho = (rhomin + rhomax) / 2
        if cdp_delta(rho, eps) <= delta:
            rhomin = rho
        else:
            rhomax = rho
    return rhomin


# ---- accounting (no mbi needed)

CASES = [(1.0, 1e-7, 17), (0.3, 1e-6, 100), (4.0, 1e-5, 3)]


@pytest.mark.parametrize("epsilon,delta,m", CASES)
def test_schedule_ledger_within_target_and_matches_cdp2adp(
    epsilon: float, delta: float, m: int
) -> None:
    rho = rho_for_epsilon(epsilon, delta)
    assert rho == pytest.approx(cdp_rho(epsilon, delta), rel=5e-3)  # grid of orders vs continuous
    rng = np.random.default_rng(0)
    for _ in range(3):  # random annealing decisions: the total is rho whatever the run does
        acc = Accountant(delta=delta, budget_epsilon=epsilon)
        sched = AimSchedule(rho, default_rounds(m), m)
        acc.spend("aim", GaussianEvent(noise_multiplier=sched.sigma), count=m)
        last = False
        while not last:
            eps_t, sigma_t, last = sched.next_round()
            acc.spend("aim", ExponentialEvent(epsilon=eps_t))
            acc.spend("aim", GaussianEvent(noise_multiplier=sigma_t))
            if rng.random() < 0.2 and not last:
                sched.anneal()
        assert sched.used == pytest.approx(rho, rel=1e-9)
        spent = acc.spent().epsilon
        assert spent <= epsilon
        assert spent == pytest.approx(cdp_eps(sched.used, delta), rel=5e-3)


def test_schedule_rejects_too_few_rounds() -> None:
    from dpgm.errors import ConfigError

    with pytest.raises(ConfigError):
        AimSchedule(0.1, 10, 20)  # 20 one-way marginals at sigma_0 of T = 10 cost 1.8 rho


def test_workload_weights_by_hand() -> None:
    # all pairs of 3 items: a single is in 2 pairs; (0,1) meets itself (2) and the others (1 + 1)
    weights = compile_workload({(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.0})
    assert weights == {(0,): 2.0, (1,): 2.0, (2,): 2.0, (0, 1): 4.0, (0, 2): 4.0, (1, 2): 4.0}


# ---- one AIM round against a hand-written reference (needs mbi)


def marginal_release(sigma: float, dim: int) -> tuple[DiscreteGaussianEvent, float]:
    """How a marginal of ``dim`` cells (L2 sensitivity 1) is released at noise multiplier sigma,
    by the documented rule (docs/privacy.md): counts are floats, so snapped to the largest
    power-of-two grid g with g sqrt(dim) <= 2^-10 x sensitivity, with sensitivity s / g + sqrt(dim)
    in grid units (each bound rounded up by 2^-50), and exact discrete Gaussian noise of scale
    sigma x that. Returns (the event charged, the noise scale in grid units)."""
    up = 1 + 2**-50
    sensitivity = 1.0 * up
    grid = 2.0 ** math.floor(math.log2(2**-10 * sensitivity / dim**0.5))
    units = (sensitivity / grid * up + dim**0.5 * up) * up
    event = DiscreteGaussianEvent(noise_multiplier=sigma, sensitivity=units, dim=dim, grid=grid)
    return event, sigma * units * up


def noisy_marginal(counts: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """counts + N_Z(0, (sigma x sensitivity)^2) on the grid, as the mechanism draws it (same stream)."""
    event, scale = marginal_release(sigma, counts.size)
    return (np.rint(counts / event.grid) + discrete_gaussian(counts.shape, scale, rng)) * event.grid


def test_first_round_matches_brute_force() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.aim import aim

    data_rng = np.random.default_rng(3)
    n = 4000
    z = data_rng.random(n)
    x = (data_rng.random((n, 3)) < np.array([0.3, 0.5, 0.6]) * (0.85 + 0.3 * z[:, None])).astype(
        np.uint8
    )
    rho, T, seed = 0.01, 6, 5  # weak correlation, small rho: no candidate is near-certain
    acc = Accountant(delta=1e-6)
    # max_rounds=1: the first round is the last and spends the rest of rho
    res = aim(
        x,
        rho=rho,
        accountant=acc,
        rng=np.random.default_rng(seed),
        trace=True,
        options=AimOptions(rounds=T, max_iters=1000, max_rounds=1),
    )
    assert len(res.rounds) == 1

    # the reference, by hand, on the same random stream
    rng = np.random.default_rng(seed)

    def count(cl: tuple[int, ...]) -> np.ndarray:
        out = np.zeros(2 ** len(cl))
        for row in x:
            out[int("".join(str(row[j]) for j in cl), 2)] += 1
        return out

    sigma0 = math.sqrt(T / (2 * 0.9 * rho))
    y = [noisy_marginal(count((j,)), sigma0, rng) for j in range(3)]
    total = np.mean([v.sum() for v in y])  # equal variances: the min-variance total is the mean
    mu = [v + (total - v.sum()) / 2 for v in y]  # the fitted independent model's 1-way marginals
    remaining = rho - 3 * 0.5 / sigma0**2
    sigma1, eps1 = math.sqrt(1 / (2 * 0.9 * remaining)), math.sqrt(8 * 0.1 * remaining)
    cands = [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    weight = {1: 2.0, 2: 4.0}
    est = {(j,): mu[j] for j in range(3)}
    est.update({(i, j): np.outer(mu[i], mu[j]).ravel() / total for i, j in cands[3:]})
    scores = np.array(
        [
            weight[len(c)]
            * (np.abs(count(c) - est[c]).sum() - math.sqrt(2 / math.pi) * sigma1 * 2 ** len(c))
            for c in cands
        ]
    )
    logits = 0.5 * eps1 / 4.0 * scores
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    u = rng.random()
    k = int(np.searchsorted(np.cumsum(probs), u, side="right"))
    measured = noisy_marginal(count(cands[k]), sigma1, rng)

    r = res.rounds[0]
    assert r.candidates == cands
    assert r.sigma == pytest.approx(sigma1) and r.epsilon == pytest.approx(eps1)
    np.testing.assert_allclose(r.probabilities, probs, atol=2e-3)
    assert probs.max() < 0.5 and len(cands[k]) == 2  # a real choice, and a pair measured
    assert r.clique == cands[k]
    np.testing.assert_allclose(r.measurement, measured, rtol=1e-12)
    kinds = [(e.event, e.count) for e in acc.ledger.entries]
    assert marginal_release(sigma0, 2)[0].grid == marginal_release(sigma1, 4)[0].grid == 2.0**-11
    assert kinds == [  # the marginals' exact discrete Gaussians, at the planned multipliers
        (marginal_release(sigma0, 2)[0], 3),
        (ExponentialEvent(epsilon=r.epsilon), 1),
        (marginal_release(r.sigma, 4)[0], 1),
    ]


def test_fit_aim_spends_at_most_epsilon_and_samples() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.aim import fit_aim
    from dpgm.evaluation.pgm import synthesize

    rng = np.random.default_rng(0)
    x = (rng.random((2000, 5)) < 0.4).astype(np.uint8)
    acc = Accountant(delta=1e-6, budget_epsilon=1.0)
    res = fit_aim(
        x,
        epsilon=1.0,
        delta=1e-6,
        rng=np.random.default_rng(1),
        accountant=acc,
        options=AimOptions(rounds=8, max_iters=100),
    )
    assert acc.spent().epsilon <= 1.0
    assert acc.spent().epsilon == pytest.approx(cdp_eps(res.rho, 1e-6), rel=5e-3)
    assert res.info["rho_used"] == pytest.approx(res.rho, rel=1e-9)
    capped = fit_aim(
        x,
        epsilon=1.0,
        delta=1e-6,
        rng=np.random.default_rng(1),
        options=AimOptions(rounds=8, max_iters=50, max_rounds=2),
    )
    assert len(capped.rounds) == 2 and capped.info["rho_used"] == pytest.approx(
        capped.rho, rel=1e-9
    )
    out = res.sample(300, np.random.default_rng(2))
    assert out.records.shape == (300, 5)
    syn = synthesize(
        fit_aim, x, 1.0, 1e-6, np.random.default_rng(1), n_out=50, options=AimOptions(rounds=6, max_iters=50)
    )
    assert syn.shape == (50, 5) and set(np.unique(syn)) <= {0, 1}


def test_model_size_matches_mbi() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.pgm import clique_attrs, import_mbi, mbi_domain, model_size_mb

    mbi = import_mbi()
    rng = np.random.default_rng(0)
    for _ in range(25):
        m = int(rng.integers(3, 25))
        cliques = [(j,) for j in range(m)]
        for _ in range(int(rng.integers(0, 2 * m))):
            cliques.append(tuple(sorted(rng.choice(m, int(rng.integers(2, 4)), replace=False))))
        expected = mbi.junction_tree.hypothetical_model_size(
            mbi_domain(m), [clique_attrs(c) for c in cliques]
        )
        assert model_size_mb(m, cliques) == pytest.approx(expected, rel=1e-12)


def test_junction_tree_marginals_and_samples_match_mbi() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.pgm import (
        JunctionTree,
        TrueMarginals,
        clique_attrs,
        fit_model,
        import_mbi,
        measurement,
    )

    mbi = import_mbi()
    rng = np.random.default_rng(1)
    n, m = 3000, 6
    z = rng.random(n)
    x = (rng.random((n, m)) < 0.2 + 0.6 * z[:, None]).astype(np.uint8)
    truth = TrueMarginals(x)
    cliques = [(j,) for j in range(m)] + [(0, 1), (1, 2), (2, 3, 4), (0, 5), (3, 5)]
    model = fit_model([measurement(c, truth(c), 1.0) for c in cliques], m, 200)
    tree = JunctionTree.from_mbi(model, m)
    for c in [(0, 2), (1, 4), (0, 3, 5), (1, 2, 5), (4,)]:
        expected = mbi.marginal_oracles.variable_elimination(
            model.potentials, clique_attrs(c), float(model.total)
        )
        np.testing.assert_allclose(tree.marginal(c), np.asarray(expected.datavector()), rtol=1e-9)
    sample = TrueMarginals(tree.sample(100_000, np.random.default_rng(0)))
    for c in [(0, 1), (2, 3, 4)]:
        np.testing.assert_allclose(sample(c) / 100_000, tree.marginal(c) / tree.total, atol=0.01)
