"""MST: accounting against the authors' cdp2adp (copied in test_aim.py), and a small run."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.evaluation.mst import mst_events, mst_parameters, mst_rho, plan_epsilon
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import ExponentialEvent, GaussianEvent
from tests.evaluation.test_aim import cdp_eps, cdp_rho, marginal_release


@pytest.mark.parametrize("epsilon,delta,m", [(1.0, 1e-7, 17), (0.3, 1e-6, 100), (4.0, 1e-5, 3)])
def test_plan_within_target_and_matches_cdp2adp(epsilon: float, delta: float, m: int) -> None:
    rho = mst_rho(epsilon, delta, m)
    s1, s2, eps = mst_parameters(rho, m)
    # the three parts cost rho/3 each in zCDP
    assert m / (2 * s1**2) == pytest.approx(rho / 3)
    assert (m - 1) * eps**2 / 8 == pytest.approx(rho / 3)
    assert (m - 1) / (2 * s2**2) == pytest.approx(rho / 3)
    acc = Accountant(delta=delta, budget_epsilon=epsilon)
    for event, count in mst_events(rho, m):
        acc.spend("mst", event, count=count)
    spent = acc.spent().epsilon
    assert spent <= epsilon and spent == pytest.approx(plan_epsilon(rho, m, delta))
    assert spent == pytest.approx(epsilon, rel=1e-6)  # the budget is used, not wasted
    # dpgm's RDP of the exponential mechanism is at most rho's zCDP, so rho may only be larger
    assert rho >= cdp_rho(epsilon, delta) * (1 - 5e-3)
    assert spent == pytest.approx(cdp_eps(rho, delta), rel=1e-2)


def test_refuses_a_plan_over_budget() -> None:  # checked before mbi is even imported
    from dpgm.errors import PrivacyBudgetError
    from dpgm.evaluation.mst import mst

    x = np.zeros((10, 3), dtype=np.uint8)
    acc = Accountant(delta=1e-6, budget_epsilon=1.0)
    with pytest.raises(PrivacyBudgetError):
        mst(x, rho=1.0, accountant=acc, rng=np.random.default_rng(0))
    assert acc.ledger.entries == []  # nothing was charged or released


def test_mst_run_spanning_tree_and_ledger() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.mst import fit_mst
    from dpgm.evaluation.pgm import synthesize

    rng = np.random.default_rng(0)
    n, m = 3000, 5
    z = rng.random(n)
    x = (rng.random((n, m)) < 0.2 + 0.6 * z[:, None]).astype(np.uint8)
    acc = Accountant(delta=1e-6, budget_epsilon=2.0)
    res = fit_mst(
        x, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(1), accountant=acc, iters=200
    )
    assert acc.spent().epsilon <= 2.0
    (one_way, _), (select, _), (two_way, _) = mst_events(res.rho, m)  # the plan
    assert isinstance(one_way, GaussianEvent) and isinstance(select, ExponentialEvent)
    assert isinstance(two_way, GaussianEvent)
    # each marginal is charged as the exact discrete Gaussian at the plan's multiplier (2 cells for
    # an item, 4 for a pair); the selections all come first; equal consecutive releases: one entry
    assert [(e.event, e.count) for e in acc.ledger.entries] == [
        (marginal_release(one_way.noise_multiplier, 2)[0], m),
        (select, m - 1),
        (marginal_release(two_way.noise_multiplier, 4)[0], m - 1),
    ]
    pairs = res.measured[m:]
    assert len(pairs) == m - 1
    reach = {0}
    for _ in range(m):  # the pairs connect every item: a spanning tree
        reach |= {j for p in pairs if set(p) & reach for j in p}
    assert reach == set(range(m))
    assert res.n_noisy == pytest.approx(n, rel=0.1)
    syn = synthesize(fit_mst, x, 2.0, 1e-6, np.random.default_rng(1), n_out=40, iters=100)
    assert syn.shape == (40, m) and set(np.unique(syn)) <= {0, 1}
