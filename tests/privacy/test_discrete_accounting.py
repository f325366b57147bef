"""The discrete events' RDP (rdp.discrete_gaussian_rdp, rdp.randomized_response_rdp) against exact
Renyi divergences summed over the pmfs, dp_accounting's PLD and OpenDP's privacy maps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.privacy import rdp as R
from dpgm.privacy.accountant import Accountant, rdp_curve
from dpgm.privacy.events import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    event_from_dict,
)

ORDERS = (1.5, 2.0, 3.5, 8.0, 32.0)


def _log_pmf(kind: str, scale: float, support: np.ndarray) -> np.ndarray:
    """log P(x) of N_Z(0, scale^2) or Lap_Z(scale) on ``support`` (wide enough to hold all mass)."""
    log_w = -(support**2) / (2 * scale**2) if kind == "gaussian" else -np.abs(support) / scale
    return log_w - np.logaddexp.reduce(log_w)


def renyi(kind: str, scale: float, shift: tuple[int, ...], order: float) -> float:
    """D_order(x + Y || Y), Y iid per coordinate: the per-coordinate divergences (pmf sums) add."""
    support = np.arange(-4000, 4001)
    log_q = _log_pmf(kind, scale, support)
    total = 0.0
    for m in shift:
        log_p = np.interp(support - m, support, log_q, left=-np.inf, right=-np.inf)  # P(x - m)
        total += np.logaddexp.reduce(order * log_p + (1 - order) * log_q) / (order - 1)
    return total


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("shift", [(1,), (2,), (3,), (1, 1, 1), (2, -1)])
def test_discrete_gaussian_curve_bounds_the_exact_divergence(
    scale: float, shift: tuple[int, ...]
) -> None:
    """D_a <= a ||m||^2 / (2 s^2) for every integer shift m (CKS 2020 Thm. 4, coordinates adding),
    tight once the discrete Gaussian is wide, and strictly below it at scale 0.5 and order 1.5."""
    l2 = math.sqrt(sum(m * m for m in shift))
    event = DiscreteGaussianEvent(noise_multiplier=scale / l2, sensitivity=l2, dim=len(shift))
    ours = rdp_curve(event, ORDERS)
    exact = np.array([renyi("gaussian", scale, shift, a) for a in ORDERS])
    assert np.all(exact <= ours * (1 + 1e-9))
    if scale >= 3.0:
        np.testing.assert_allclose(exact, ours, rtol=1e-6)
    if scale == 0.5 and shift == (1,):
        assert exact[0] < 0.99 * ours[0]


def test_discrete_gaussian_rho_is_openDP_s() -> None:
    """OpenDP's integer-vector discrete Gaussian maps L2 sensitivity D to rho = (D / s)^2 / 2."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64")
    for scale, sens in [(0.7, 1), (3.0, 2), (40.0, 5)]:
        rho = dp.m.make_gaussian(*space, scale=scale).map(sens)
        ours = rdp_curve(
            DiscreteGaussianEvent(noise_multiplier=scale / sens, sensitivity=sens, dim=9), ORDERS
        )
        np.testing.assert_allclose(ours / np.array(ORDERS), rho, rtol=1e-12)


@pytest.mark.parametrize(
    ("scale", "sens", "count"), [(0.8, 1, 1), (2.0, 1, 10), (5.0, 3, 4), (20.0, 1, 100)]
)
def test_never_below_dp_accountings_pld_and_equal_to_the_continuous_gaussian(
    scale: float, sens: int, count: int
) -> None:
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    delta = 1e-6
    theirs = pld.from_discrete_gaussian_mechanism(
        scale, sensitivity=sens, value_discretization_interval=1e-4
    )
    eps_pld = theirs.self_compose(count).get_epsilon_for_delta(delta)
    event = DiscreteGaussianEvent(noise_multiplier=scale / sens, sensitivity=sens, dim=1)
    ours = Accountant(delta=delta).epsilon_if(event, count=count)
    continuous = Accountant(delta=delta).epsilon_if(
        GaussianEvent(noise_multiplier=scale / sens), count=count
    )
    assert ours >= eps_pld
    assert ours == pytest.approx(continuous, rel=1e-12)
    assert ours < 1.6 * eps_pld  # RDP's conversion is loose, not absurd


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_randomized_response_curve_is_the_discrete_laplace_at_unit_sensitivity(
    epsilon: float,
) -> None:
    """Equal for a shift of 1 (the loss is +-epsilon only), an upper bound for wider shifts at the
    same epsilon (L1 sensitivity 2, 3, and (1, 1)), above the continuous Laplace's, below pure
    DP's."""
    ours = R.randomized_response_rdp(ORDERS, epsilon)
    unit = np.array([renyi("laplace", 1.0 / epsilon, (1,), a) for a in ORDERS])
    np.testing.assert_allclose(unit, ours, rtol=1e-9)
    for shift in [(2,), (3,), (1, 1), (2, 1)]:
        wide = np.array(
            [renyi("laplace", sum(map(abs, shift)) / epsilon, shift, a) for a in ORDERS]
        )
        assert np.all(wide <= ours * (1 + 1e-9))
    assert np.all(R.laplace_rdp(ORDERS, epsilon) <= ours)
    assert np.all(ours <= R.pure_dp_rdp(ORDERS, epsilon))


@pytest.mark.parametrize(("epsilon", "count"), [(0.2, 1), (0.5, 20), (2.0, 3)])
def test_discrete_laplace_never_below_dp_accountings_pld(epsilon: float, count: int) -> None:
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    delta = 1e-6
    theirs = pld.from_discrete_laplace_mechanism(
        epsilon, sensitivity=1, value_discretization_interval=1e-4
    )
    eps_pld = theirs.self_compose(count).get_epsilon_for_delta(delta)
    ours = Accountant(delta=delta).epsilon_if(
        DiscreteLaplaceEvent(epsilon=epsilon, sensitivity=1.0, dim=1), count=count
    )
    assert eps_pld <= ours <= count * epsilon * (1 + 1e-12)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 4.0])
def test_matched_discrete_laplace_fits_under_the_continuous_plan(epsilon: float) -> None:
    """A plan for a continuous Laplace release holds for the charged discrete one: its curve is
    below at every accountant order (and near 1), its pure epsilon smaller; e' is the largest."""
    matched = R.matched_discrete_laplace_epsilon(epsilon)
    orders = (*R.DEFAULT_ORDERS, 1.0 + 1e-5, 1e4)
    assert 0.8 * epsilon < matched < epsilon
    assert np.all(R.randomized_response_rdp(orders, matched) <= R.laplace_rdp(orders, epsilon))
    assert np.any(
        R.randomized_response_rdp(orders, matched * 1.001) > R.laplace_rdp(orders, epsilon)
    )
    plan = Accountant(delta=1e-6).epsilon_if(
        GaussianEvent(noise_multiplier=3.0), LaplaceEvent(epsilon=epsilon)
    )
    event = DiscreteLaplaceEvent(epsilon=matched, sensitivity=1.0, dim=1)
    assert Accountant(delta=1e-6).epsilon_if(GaussianEvent(noise_multiplier=3.0), event) <= plan


def test_a_ledger_mixing_releases_costs_more_with_discrete_laplace() -> None:
    """The documented cost: with RDP events beside it, a discrete Laplace weighs randomised
    response's curve, above the continuous Laplace's (pure ledgers add epsilons either way)."""
    gaussian = GaussianEvent(noise_multiplier=2.0)
    discrete = Accountant(delta=1e-6).epsilon_if(
        gaussian, DiscreteLaplaceEvent(epsilon=0.5, sensitivity=1.0, dim=1)
    )
    continuous = Accountant(delta=1e-6).epsilon_if(gaussian, LaplaceEvent(epsilon=0.5))
    assert discrete > continuous


def test_discrete_events_round_trip_and_validate() -> None:
    for event in (
        DiscreteGaussianEvent(noise_multiplier=1.5, sensitivity=3.25, dim=40, grid=2.0**-12),
        DiscreteLaplaceEvent(epsilon=0.3, sensitivity=1.0, dim=1),
    ):
        assert event_from_dict(event.to_dict()) == event
    for bad in (
        {"dim": 0},
        {"sensitivity": 0.0},
        {"grid": -1.0},
        {"noise_multiplier": math.nan},
        {"dim": 1.5},
    ):
        args = {"noise_multiplier": 1.0, "sensitivity": 1.0, "dim": 1, **bad}
        with pytest.raises(ValueError):
            DiscreteGaussianEvent(**args)
