"""Thresholded histograms and DP quantiles (OpenDP's releases): charged before they draw, and accounted
with their delta_0 added to delta, against OpenDP's own accounting of the same mechanisms."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest
from opendp.mod import Measurement

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import Accountant, event_delta, rdp_curve
from dpgm.privacy.events import ChoiceEvent, ExponentialEvent, GaussianEvent, ThresholdGaussianEvent, event_from_dict
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.mechanisms import quantile_releases, thresholded_counts
from dpgm.privacy.rdp import DEFAULT_ORDERS, rdp_to_epsilon, threshold_delta

dp.enable_features("contrib")


def _threshold_measure(sigma: float, threshold: int) -> Measurement:
    return dp.m.make_gaussian_threshold(dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int)),
                                        dp.l02inf_distance(dp.absolute_distance(T=int)), scale=sigma,
                                        threshold=threshold)


def _exact_tail(sigma: float, m: int) -> float:
    k = np.arange(-20_000, 20_001, dtype=np.float64)
    w = np.exp(-k * k / (2 * sigma * sigma))
    return float(w[k >= m].sum() / w.sum())


@pytest.mark.parametrize(("sigma", "threshold"), [(0.5, 3), (2.0, 5), (2.0, 10), (10.0, 60), (50.0, 300)])
def test_threshold_delta_is_the_discrete_gaussian_tail_never_below_it(sigma: float, threshold: int) -> None:
    exact = _exact_tail(sigma, threshold - 1)
    assert exact <= threshold_delta(sigma, threshold) <= exact * 1.02


def test_a_key_held_by_one_record_passes_at_the_rate_delta_0_says() -> None:
    """20,000 keys of count 1 through OpenDP's own sampler: the share released is delta_0 (within 5 standard
    errors), the chance of a count of 1 plus its noise reaching the threshold."""
    sigma, threshold, keys = 2.0, 3, 20_000
    released = _threshold_measure(sigma, threshold)({f"k{i}": 1 for i in range(keys)})
    delta_0 = threshold_delta(sigma, threshold)
    assert abs(len(released) / keys - delta_0) < 5 * math.sqrt(delta_0 * (1 - delta_0) / keys)
    assert min(released.values()) >= threshold


@pytest.mark.parametrize(("sigma", "threshold", "delta"), [(5.0, 40, 1e-5), (2.0, 12, 1e-5), (1.0, 8, 1e-6)])
def test_the_event_is_accounted_as_opendp_accounts_the_same_measurement(sigma: float, threshold: int,
                                                                        delta: float) -> None:
    """Its curve is OpenDP's rho at every order, its delta_0 never below OpenDP's, and its epsilon at delta is
    OpenDP's zCDP-to-approximate-DP profile at delta - delta_0 (ours on a grid of orders: never below)."""
    measure = _threshold_measure(sigma, threshold)
    rho, opendp_delta = measure.map((1, 1, 1))
    event = ThresholdGaussianEvent(noise_multiplier=sigma, threshold=threshold)
    np.testing.assert_allclose(rdp_curve(event), rho * np.asarray(DEFAULT_ORDERS), rtol=1e-12)
    assert event_delta(event) >= opendp_delta
    acc = Accountant(delta=delta)
    acc.spend("histogram", event)
    spent = acc.spent()
    profile, _ = dp.c.make_zCDP_to_approxDP(measure).map((1, 1, 1))
    theirs = profile.epsilon(delta - event_delta(event))
    assert spent.delta == delta and spent.delta_0 == event_delta(event)
    assert theirs <= spent.epsilon <= theirs * 1.001


def test_delta_0_is_spent_from_delta_and_a_ledger_past_it_is_refused() -> None:
    gauss, event = GaussianEvent(noise_multiplier=3.0), ThresholdGaussianEvent(noise_multiplier=2.0, threshold=10)
    acc = Accountant(delta=1e-4, budget_epsilon=5.0)
    acc.spend("s", gauss, event, event)
    curve = rdp_curve(gauss) + 2 * rdp_curve(event)
    assert acc.spent().epsilon == rdp_to_epsilon(DEFAULT_ORDERS, curve, 1e-4 - 2 * event_delta(event))[0]
    assert acc.report()["delta_0"] == 2 * event_delta(event)
    loose = ThresholdGaussianEvent(noise_multiplier=2.0, threshold=2)  # delta_0 about 0.4: above any delta
    assert acc.epsilon_if(loose) == math.inf
    with pytest.raises(PrivacyBudgetError):
        acc.spend("s", loose)
    assert acc.ledger.count() == 3
    assert "delta_0" not in Accountant(delta=1e-4).report()  # a ledger without thresholds: reports as before


def test_the_event_round_trips_through_json_and_is_checked() -> None:
    event = ThresholdGaussianEvent(noise_multiplier=2.5, threshold=17)
    ledger = PrivacyLedger()
    Accountant(ledger, delta=1e-6).spend("s", event)
    assert PrivacyLedger.from_json(ledger.to_json()).entries[0].event == event
    assert event_from_dict(event.to_dict()) == event
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="threshold"):
            ThresholdGaussianEvent(noise_multiplier=1.0, threshold=bad)


def test_a_choice_adds_what_its_largest_branch_adds_to_delta() -> None:
    small, big = (ThresholdGaussianEvent(noise_multiplier=2.0, threshold=t) for t in (14, 9))
    choice = ChoiceEvent(branches=(((small, 1),), ((big, 2),)), taken=0)
    assert event_delta(choice) == pytest.approx(2 * event_delta(big) - event_delta(small), rel=1e-12)


def _failing_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenDP's measurements still give their privacy maps, but any draw fails."""
    def fail(self: Measurement, data: object) -> None:
        raise RuntimeError("drawn")
    monkeypatch.setattr(Measurement, "__call__", fail)


def test_the_histogram_is_charged_before_it_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_draws(monkeypatch)
    acc = Accountant(delta=1e-6)
    with pytest.raises(RuntimeError, match="drawn"):
        thresholded_counts(["a"] * 50, noise_multiplier=3.0, threshold=20, accountant=acc, stage="schema")
    assert [e.event for e in acc.ledger.entries] == [ThresholdGaussianEvent(noise_multiplier=3.0, threshold=20)]
    refusing = Accountant(delta=1e-6, budget_epsilon=0.1)
    with pytest.raises(PrivacyBudgetError):
        thresholded_counts(["a"] * 50, noise_multiplier=3.0, threshold=20, accountant=refusing, stage="schema")


def test_the_quantiles_are_charged_before_they_draw_at_opendps_epsilon(monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_draws(monkeypatch)
    acc = Accountant(delta=1e-6)
    with pytest.raises(RuntimeError, match="drawn"):
        quantile_releases(np.arange(100.0), np.linspace(0, 100, 11), [0.01, 0.99], epsilon=0.4, accountant=acc,
                          stage="schema")
    ((entry),) = acc.ledger.entries
    assert entry.count == 2 and isinstance(entry.event, ExponentialEvent)
    assert entry.event.epsilon == pytest.approx(0.4, rel=1e-12) and entry.event.epsilon >= 0.4


def test_opendps_quantile_is_the_exponential_mechanism_its_event_says() -> None:
    """OpenDP's zCDP map of the quantile at the charged scale is epsilon^2 / 8: the bounded-range curve that
    the ExponentialEvent is accounted by (rdp.exponential_rdp)."""
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    for alpha in (0.01, 0.5, 0.99):
        scale = 2 * max(alpha, 1 - alpha) / 0.7  # the exponential mechanism's 2 sensitivity / epsilon
        measure = dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.zero_concentrated_divergence(),
                                             candidates=[0.0, 1.0, 2.0], alpha=alpha, scale=scale)
        assert measure.map(1) == pytest.approx(0.7**2 / 8, rel=1e-9)


def test_quantiles_and_counts_come_out_near_the_truth_at_a_large_budget() -> None:
    acc = Accountant(delta=1e-6)
    values = np.random.default_rng(0).uniform(0, 100, 20_000)
    low, high = quantile_releases(values, np.linspace(0, 100, 101), [0.01, 0.99], epsilon=5.0, accountant=acc,
                                  stage="schema")
    assert abs(low - 1) <= 2 and abs(high - 99) <= 2
    counts = thresholded_counts(["a"] * 400 + ["b"] * 200 + ["rare"], noise_multiplier=2.0, threshold=30,
                                accountant=acc, stage="schema")
    assert set(counts) == {"a", "b"} and abs(counts["a"] - 400) < 20
