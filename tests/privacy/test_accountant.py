"""The accountant against Opacus, dp_accounting (RDP and PLD), golden values and budgets."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy import rdp as R
from dpgm.privacy.accountant import Accountant, epsilon_from_rdp, ledger_rdp, rdp_curve
from dpgm.privacy.calibrate import steps_for_epochs
from dpgm.privacy.events import (
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    Neighbouring,
    PureDpEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
)
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger

opacus_rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
OPACUS_ORDERS = tuple(float(a) for a in pytest.importorskip("opacus.accountants").RDPAccountant.DEFAULT_ALPHAS)

SWEEP = [(q, s, n) for q in (0.001, 0.0017, 0.01, 0.05, 0.2) for s in (0.6, 1.0, 2.5) for n in (1, 100, 5000)]


def _ours(q: float, sigma: float, steps: int, delta: float, orders=R.DEFAULT_ORDERS) -> tuple[float, float]:
    spent = epsilon_from_rdp(steps * rdp_curve(SampledGaussianEvent(sampling_rate=q, noise_multiplier=sigma), orders),
                             delta, orders)
    return spent.epsilon, spent.order


@pytest.mark.parametrize(("q", "sigma", "steps"), SWEEP)
def test_same_epsilon_as_opacus_with_its_orders(q: float, sigma: float, steps: int) -> None:
    rdp = opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=list(OPACUS_ORDERS))
    eps_opacus, order_opacus = opacus_rdp.get_privacy_spent(orders=list(OPACUS_ORDERS), rdp=rdp, delta=1e-5)
    eps, order = _ours(q, sigma, steps, 1e-5, OPACUS_ORDERS)
    assert eps == pytest.approx(eps_opacus, rel=1e-6)
    assert order == order_opacus


def test_opacus_golden_value() -> None:
    """Opacus's own test pins 7.32911117143 for sigma=1.5, q=0.04, 2,250 steps, delta=1e-5."""
    eps, order = _ours(0.04, 1.5, 2250, 1e-5, OPACUS_ORDERS)
    assert eps == pytest.approx(7.32911117143, abs=1e-9)
    assert order == 3.9
    assert _ours(0.04, 1.5, 2250, 1e-5)[0] <= eps  # our larger grid can only help


def test_paper_plan_epsilon_equals_opacus() -> None:
    """The issue's check: q=0.0017, sigma=1, 20 epochs (ceil(1/q) steps each), delta=1e-5."""
    steps = steps_for_epochs(20, 0.0017)
    rdp = opacus_rdp.compute_rdp(q=0.0017, noise_multiplier=1.0, steps=steps, orders=list(OPACUS_ORDERS))
    eps_opacus, _ = opacus_rdp.get_privacy_spent(orders=list(OPACUS_ORDERS), rdp=rdp, delta=1e-5)
    assert _ours(0.0017, 1.0, steps, 1e-5)[0] == pytest.approx(eps_opacus, rel=1e-9)


@pytest.fixture(scope="module")
def dpa():
    logging.getLogger("absl").setLevel(logging.ERROR)  # its fractional series warns on our sweep
    return pytest.importorskip("dp_accounting")


def _dpa_event(dpa, q: float, sigma: float, steps: int):
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)


@pytest.mark.parametrize(("q", "sigma"), [(0.001, 1.0), (0.0017, 0.6), (0.01, 2.5), (0.05, 1.0), (0.2, 0.6), (0.2, 2.5)])
def test_dp_accounting_rdp_same_at_integer_orders_never_lower_overall(dpa, q: float, sigma: float) -> None:
    """Integer orders: identical. Fractional orders: dp_accounting 0.6's series adds |binom(a, i)|
    for i > a (drops the sign), so its RDP there is larger and its epsilon never smaller."""
    from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

    integer_orders = [float(a) for a in range(2, 257)]
    theirs_int = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, integer_orders)
    theirs_all = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, list(R.DEFAULT_ORDERS))
    np.testing.assert_allclose(R.sampled_gaussian_rdp(integer_orders, q, sigma), theirs_int, rtol=1e-9)
    for steps in (1, 100, 5000):  # their accountant multiplies the per-step curve the same way
        eps_int, _ = dpa_rdp.compute_epsilon(integer_orders, steps * theirs_int, 1e-5)
        assert _ours(q, sigma, steps, 1e-5, integer_orders)[0] == pytest.approx(eps_int, rel=1e-6)
        ours, (theirs, _) = _ours(q, sigma, steps, 1e-5)[0], dpa_rdp.compute_epsilon(R.DEFAULT_ORDERS, steps * theirs_all, 1e-5)
        assert ours <= theirs * (1 + 1e-9)
        if theirs < 10:  # the regime anyone trains in: within 1%; beyond it their series blows up
            assert ours == pytest.approx(theirs, rel=1e-2)


def test_dp_accounting_accountant_object_agrees(dpa) -> None:
    """Same plan through dp_accounting's public RdpAccountant and DpEvents."""
    acc = dpa.rdp.RdpAccountant(list(R.DEFAULT_ORDERS))
    acc.compose(_dpa_event(dpa, 0.0017, 1.0, 11780))
    assert _ours(0.0017, 1.0, 11780, 1e-5)[0] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)


def test_dp_accounting_fractional_series_overestimates(dpa) -> None:
    """The documented difference: numerical integration sides with us, not with dp_accounting."""
    from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

    theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(0.2, 2.0, [1.5])[0]
    ours = R.sampled_gaussian_rdp([1.5], 0.2, 2.0)[0]
    assert ours == pytest.approx(R.sampled_gaussian_rdp_integrated(1.5, 0.2, 2.0), rel=1e-8)
    assert theirs > 1.5 * ours


@pytest.mark.parametrize(("q", "sigma", "steps"), [(0.0017, 1.0, 11780), (0.01, 1.0, 1000), (0.2, 2.0, 50),
                                                   (0.05, 0.8, 1), (1.0, 5.0, 1)])
def test_never_below_the_pld_accountant(dpa, q: float, sigma: float, steps: int) -> None:
    """PLD accounting is (nearly) tight; an RDP epsilon below it would be understated."""
    pld = dpa.pld.PLDAccountant(value_discretization_interval=1e-3)
    pld.compose(_dpa_event(dpa, q, sigma, steps))
    eps_pld = pld.get_epsilon(1e-5)
    eps = _ours(q, sigma, steps, 1e-5)[0]
    assert eps >= eps_pld
    assert eps < 1.5 * eps_pld  # and not absurdly loose


def test_paper_mnist_plan_joint_and_holder() -> None:
    """Paper's MNIST plan (README figures): k-means 20 iterations x 2 Gaussian releases at
    sigma_K=40, then 20 epochs of DP-SGD with a DPNorm histogram (sigma_C=4) per step."""
    steps = steps_for_epochs(20, 0.0017)
    event = SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, 1.0))
    headline = {}
    for bound in ("joint", "holder"):
        acc = Accountant(delta=1e-5, bound=bound)
        acc.spend("kmeans", GaussianEvent(noise_multiplier=40.0), count=40)
        acc.spend("sgd", event, count=steps)
        report = acc.report()
        assert report["dependent_bound"] == bound
        headline[bound] = report["epsilon"]
        # every bound is reported from the same ledger, whichever one the accountant budgets with
        assert report["epsilon_by_bound"]["joint"] == pytest.approx(1.33867, abs=1e-5)
        assert report["epsilon_by_bound"]["holder"] == pytest.approx(1.45922, abs=1e-5)
    assert headline["joint"] == pytest.approx(1.33867, abs=1e-5)
    assert headline["holder"] == pytest.approx(1.45922, abs=1e-5)


def test_spend_is_all_or_none_for_several_events() -> None:
    acc = Accountant(delta=1e-5, budget_epsilon=1.0)
    cheap, dear = GaussianEvent(noise_multiplier=50.0), GaussianEvent(noise_multiplier=0.5)
    assert acc.can_afford(cheap) and not acc.can_afford(cheap, dear)
    with pytest.raises(PrivacyBudgetError, match="'both'"):
        acc.spend("both", cheap, dear)
    assert acc.ledger.entries == [] and acc.spent().epsilon == 0.0
    acc.spend("both", cheap, cheap, count=2)
    assert acc.ledger.count("both") == 4


def test_charge_refused_leaves_ledger_unchanged() -> None:
    acc = Accountant(delta=1e-5, budget_epsilon=3.0)
    event = SampledGaussianEvent(sampling_rate=0.01, noise_multiplier=1.0)
    acc.spend("sgd", event, count=100)
    before_entries, before_rdp, before_eps = list(acc.ledger.entries), acc.rdp(), acc.spent().epsilon
    assert acc.epsilon_if(event, count=100_000) > 3.0
    with pytest.raises(PrivacyBudgetError, match="above the budget"):
        acc.spend("sgd", event, count=100_000)
    assert acc.ledger.entries == before_entries
    np.testing.assert_array_equal(acc.rdp(), before_rdp)
    assert acc.spent().epsilon == before_eps


def test_charge_within_budget_accumulates_and_matches_epsilon_if() -> None:
    acc = Accountant(delta=1e-5, budget_epsilon=10.0)
    event = SampledGaussianEvent(sampling_rate=0.01, noise_multiplier=1.0)
    predicted = acc.epsilon_if(event, count=500)
    for _ in range(5):
        acc.spend("sgd", event, count=100)
    assert acc.spent().epsilon == pytest.approx(predicted, rel=1e-12)
    assert acc.ledger.count("sgd") == 500


def test_stage_epsilons_and_composition() -> None:
    acc = Accountant(delta=1e-5)
    acc.spend("kmeans", GaussianEvent(noise_multiplier=40.0), count=40)
    acc.spend("sgd", SampledGaussianEvent(sampling_rate=0.0017, noise_multiplier=1.0), count=1000)
    stages = acc.stage_epsilons()
    assert list(stages) == ["kmeans", "sgd"]
    assert max(stages.values()) < acc.spent().epsilon < sum(stages.values())
    np.testing.assert_allclose(acc.rdp(), ledger_rdp(acc.ledger.entries))


def test_pure_and_exponential_events_use_their_bounds() -> None:
    orders = R.DEFAULT_ORDERS
    np.testing.assert_array_equal(rdp_curve(LaplaceEvent(epsilon=0.5), orders), R.laplace_rdp(orders, 0.5))
    np.testing.assert_array_equal(rdp_curve(PureDpEvent(epsilon=0.5), orders), R.pure_dp_rdp(orders, 0.5))
    np.testing.assert_array_equal(rdp_curve(ExponentialEvent(epsilon=0.5), orders), R.exponential_rdp(orders, 0.5))



def test_pure_releases_also_compose_by_addition() -> None:
    """A few pure releases: basic composition (sum) beats the RDP conversion and is reported;
    many small ones: RDP wins. A budget equal to the sum is therefore never refused."""
    acc = Accountant(delta=1e-5, budget_epsilon=1.0)
    acc.spend("mwem", LaplaceEvent(epsilon=0.25), count=2)
    assert acc.epsilon_if(ExponentialEvent(epsilon=0.25), count=2) == pytest.approx(1.0)
    acc.spend("mwem", ExponentialEvent(epsilon=0.25), count=2)
    spent = acc.spent()
    assert spent.epsilon == pytest.approx(1.0) and spent.conversion == "pure composition"
    assert spent.to_dict()["order"] is None
    many = Accountant(delta=1e-5, ledger=PrivacyLedger([LedgerEntry("m", LaplaceEvent(epsilon=0.01), 1000)]))
    assert many.spent().epsilon < 5.0 and many.spent().conversion == "tight"
    mixed = Accountant(delta=1e-5)
    mixed.spend("m", PureDpEvent(epsilon=0.1))
    mixed.spend("g", GaussianEvent(noise_multiplier=100.0))
    assert mixed.spent().conversion == "tight" and mixed.spent().epsilon > 0.1


def test_rdp_curve_is_read_only() -> None:
    curve = rdp_curve(GaussianEvent(noise_multiplier=2.0))
    with pytest.raises(ValueError):
        curve[0] = 0.0


def test_replace_one_ledgers_are_refused() -> None:
    ledger = PrivacyLedger(neighbouring=Neighbouring.REPLACE_ONE)
    with pytest.raises(ValueError, match="add/remove"):
        Accountant(ledger, delta=1e-5)


@pytest.mark.parametrize("kwargs", [{"delta": 0.0}, {"delta": 1.0}, {"delta": 1e-5, "budget_epsilon": -1.0},
                                    {"delta": 1e-5, "budget_epsilon": math.inf}])
def test_bad_accountant_arguments(kwargs) -> None:
    with pytest.raises(ValueError):
        Accountant(**kwargs)


def test_a_ledger_gives_the_same_epsilon_however_it_was_built() -> None:
    """Step by step, or saved and reloaded half way (a resumed run): the same bits."""
    event = SampledGaussianEvent(sampling_rate=0.01, noise_multiplier=1.1)
    whole = Accountant(delta=1e-6)
    whole.spend("partition", GaussianEvent(noise_multiplier=20.0), count=21)
    for _ in range(1000):
        whole.spend("training", event)
    half = Accountant(delta=1e-6)
    half.spend("partition", GaussianEvent(noise_multiplier=20.0), count=21)
    for _ in range(437):
        half.spend("training", event)
    resumed = Accountant(PrivacyLedger.from_json(half.ledger.to_json()), delta=1e-6)
    for _ in range(563):
        resumed.spend("training", event)
    assert resumed.spent().epsilon == whole.spent().epsilon  # exactly, not approximately
    assert resumed.ledger.entries == whole.ledger.entries
    assert [e.count for e in whole.ledger.entries] == [21, 1000]
