"""A choice between branches of releases (events.ChoiceEvent): the ledger's total is the pointwise
maximum of the branches' curves, checked against Opacus's curves, whichever branch was taken."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgm.privacy.accountant import Accountant, epsilon_from_rdp
from dpgm.privacy.calibrate import calibrate
from dpgm.privacy.events import ChoiceEvent, ExponentialEvent, GaussianEvent, SampledGaussianEvent, event_from_dict
from dpgm.privacy.ledger import PrivacyLedger

opacus_rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
ORDERS = tuple(float(a) for a in pytest.importorskip("opacus.accountants").RDPAccountant.DEFAULT_ALPHAS)

COMMON = GaussianEvent(noise_multiplier=8.0)
STEPS = 300
TREE = ((ExponentialEvent(epsilon=0.05), 16), (GaussianEvent(noise_multiplier=6.0), 1))


def _sgd(sigma: float) -> tuple[tuple[SampledGaussianEvent, int], ...]:
    return ((SampledGaussianEvent(sampling_rate=0.01, noise_multiplier=sigma), STEPS),)


def _ledger(taken: int, sigma: float) -> Accountant:
    """The common release, the choice, then the releases of the branch taken (as a run charges them)."""
    branches = (TREE, _sgd(sigma))
    acc = Accountant(delta=1e-5, orders=ORDERS)
    acc.spend("dependence", COMMON)
    acc.spend("choice", ChoiceEvent(branches=branches, taken=taken))
    for event, count in branches[taken]:
        acc.spend("branch", event, count=count)
    return acc


def _independent_max(sigma: float) -> np.ndarray:
    """common + max(tree, DP-SGD), each curve from Opacus's formulas or the textbook ones."""
    orders = np.array(ORDERS)
    tree = 16 * np.minimum(0.05, orders * 0.05 ** 2 / 8) + orders / (2 * 6.0 ** 2)
    sgd = np.array(opacus_rdp.compute_rdp(q=0.01, noise_multiplier=sigma, steps=STEPS, orders=list(ORDERS)))
    return orders / (2 * 8.0 ** 2) + np.maximum(tree, sgd)


@pytest.mark.parametrize("sigma", [0.7, 1.5, 3.0])
@pytest.mark.parametrize("taken", [0, 1])
def test_the_ledger_holds_the_maximum_of_the_branches_whichever_is_taken(taken: int, sigma: float) -> None:
    acc = _ledger(taken, sigma)
    np.testing.assert_allclose(acc.rdp(), _independent_max(sigma), rtol=1e-6)
    other = _ledger(1 - taken, sigma)
    assert abs(acc.spent().epsilon - other.spent().epsilon) < 1e-9


@pytest.mark.parametrize("sigma", [0.7, 1.5, 3.0])
def test_the_choice_costs_at_least_either_branch_alone(sigma: float) -> None:
    """Never understated: at least the epsilon of each branch run without the choice."""
    acc = _ledger(0, sigma)
    alone = []
    for branch in (TREE, _sgd(sigma)):
        plain = Accountant(delta=1e-5, orders=ORDERS)
        plain.spend("dependence", COMMON)
        for event, count in branch:
            plain.spend("branch", event, count=count)
        alone.append(plain.spent().epsilon)
    assert acc.spent().epsilon >= max(alone) - 1e-12


def test_the_branches_cross_and_the_maximum_is_pointwise() -> None:
    """At sigma 1.5 DP-SGD's curve is below the tree's at low orders and above it at high ones: the
    choice entry is positive in the one branch where the other dominates, zero where its own does."""
    entry = ChoiceEvent(branches=(TREE, _sgd(1.5)), taken=0)
    acc = Accountant(delta=1e-5, orders=ORDERS)
    excess = acc.curve(entry)
    assert np.all(excess >= 0)
    assert np.any(excess == 0) and np.any(excess > 0)


def test_calibrating_dp_sgd_with_the_choice_in_its_plan_meets_the_target_in_both_branches() -> None:
    """DP-SGD's noise calibrated on a plan holding the choice: both branches' ledgers end at the target."""
    common = np.array(ORDERS) / (2 * 8.0 ** 2)

    def plan(sigma: float) -> list:
        return [(ChoiceEvent(branches=(TREE, _sgd(sigma)), taken=1), 1), *_sgd(sigma)]

    sigma = calibrate(plan, target_epsilon=2.0, delta=1e-5, extra_rdp=common, orders=ORDERS)
    for taken in (0, 1):
        eps = _ledger(taken, sigma).spent().epsilon
        assert 2.0 - 1e-3 < eps <= 2.0
    # without the choice the same target would have allowed less noise: the choice is not free here
    alone = calibrate(lambda s: list(_sgd(s)), target_epsilon=2.0, delta=1e-5, extra_rdp=common, orders=ORDERS)
    assert alone <= sigma
    assert epsilon_from_rdp(_independent_max(sigma), 1e-5, ORDERS).epsilon <= 2.0 + 1e-9


def test_a_ledger_with_a_choice_reads_back_from_json_to_the_same_epsilon() -> None:
    acc = _ledger(1, 1.2)
    back = PrivacyLedger.from_json(json.loads(json.dumps(acc.ledger.to_json())))
    again = Accountant(back, delta=1e-5, orders=ORDERS)
    assert again.spent().epsilon == acc.spent().epsilon
    entry = ChoiceEvent(branches=(TREE, _sgd(1.2)), taken=1)
    assert event_from_dict(json.loads(json.dumps(entry.to_dict()))) == entry


@pytest.mark.parametrize(("branches", "taken", "message"), [
    ((TREE,), 0, "two branches"),
    ((TREE, TREE), 2, "taken"),
    ((TREE, ((COMMON, 0),)), 0, ">= 1"),
])
def test_a_malformed_choice_is_refused(branches, taken: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChoiceEvent(branches=branches, taken=taken)


def test_a_branch_may_release_nothing() -> None:
    """A branch with no release (one item: no pair to measure) costs nothing; the choice then costs the other."""
    entry = ChoiceEvent(branches=((), _sgd(1.0)), taken=0)
    expected = np.array(opacus_rdp.compute_rdp(q=0.01, noise_multiplier=1.0, steps=STEPS, orders=list(ORDERS)))
    np.testing.assert_allclose(Accountant(delta=1e-5, orders=ORDERS).curve(entry), expected, rtol=1e-6)
