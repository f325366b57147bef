"""The RDP formulas (dpgm/privacy/rdp.py) against closed forms and numerical integration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpgm.privacy import rdp as R
from dpgm.privacy import sampled_gaussian as SG


def _gaussian_log_moment_by_integration(lam: float, sigma: float) -> float:
    """log E_{x ~ N(0, s^2)}[exp(lam L(x))], L = log N(x; 0, s^2) / N(x; 1, s^2) (DPGM eq. 2)."""

    def log_f(x: np.ndarray | float) -> np.ndarray | float:
        loss = (1.0 - 2.0 * x) / (2.0 * sigma**2)
        return -x * x / (2 * sigma**2) + lam * loss - 0.5 * math.log(2 * math.pi * sigma**2)

    grid = np.linspace(-500.0, 500.0, 200_001)  # locate the peak, then integrate around it
    x0 = float(grid[np.argmax(log_f(grid))])
    top = log_f(x0)
    parts = [integrate.quad(lambda x: math.exp(log_f(x) - top), lo, hi, epsabs=0, epsrel=1e-12)[0]
             for lo, hi in [(-np.inf, x0), (x0, np.inf)]]
    return top + math.log(sum(parts))


@pytest.mark.parametrize("sigma", [0.7, 1.0, 4.0, 40.0])
@pytest.mark.parametrize("lam", [1, 2, 5, 31])
def test_gaussian_log_moment_is_lambda_sq_plus_lambda_over_2_sigma_sq(lam: int, sigma: float) -> None:
    """alpha(l) = l rdp(l + 1) = (l^2 + l) / (2 sigma^2): fails if Lemma 1's /(4 sigma^2) returns."""
    numeric = _gaussian_log_moment_by_integration(lam, sigma)
    ours = lam * R.gaussian_rdp([lam + 1.0], sigma)[0]
    paper_lemma_1 = (lam**2 + lam) / (4 * sigma**2)
    assert ours == pytest.approx(numeric, rel=1e-7)
    assert ours == pytest.approx((lam**2 + lam) / (2 * sigma**2), rel=1e-12)
    assert abs(paper_lemma_1 - numeric) > 0.4 * numeric  # the paper's constant is off by 2x


def test_gaussian_rdp_closed_form_over_the_grid() -> None:
    orders = np.array(R.DEFAULT_ORDERS)
    np.testing.assert_allclose(R.gaussian_rdp(orders, 1.7), orders / (2 * 1.7**2), rtol=1e-15)


def test_default_orders_cover_fractional_and_integers_to_256() -> None:
    orders = np.array(R.DEFAULT_ORDERS)
    assert orders.min() == pytest.approx(1.1)
    assert set(range(2, 257)) <= set(orders.tolist())
    assert np.any(orders != np.round(orders))
    assert np.all(np.diff(orders) > 0)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 0.8), (0.2, 2.0), (0.0017, 4.0)])
@pytest.mark.parametrize("order", [2.0, 3.0, 8.0, 1.5, 2.5, 6.7])
def test_sampled_gaussian_matches_numerical_integration_of_e1_e2(q: float, sigma: float, order: float) -> None:
    """Exact integer formula and the fractional series agree with integrating E1/E2 (DPGM s. 5)."""
    exact = R.sampled_gaussian_rdp([order], q, sigma)[0]
    numeric = R.sampled_gaussian_rdp_integrated(order, q, sigma)
    assert exact == pytest.approx(numeric, rel=1e-6)


def test_fractional_orders_at_once_equal_each_on_its_own() -> None:
    """The series runs every fractional order of a call together, each stopping at its own last term: a
    batch's values are those of the orders asked one by one (fresh parameters, nothing cached)."""
    orders = [1.05, 1.5, 2.25, 7.7, 33.3, 63.9, 3.0]
    batch = R.sampled_gaussian_rdp(orders, 0.0123, 1.37)
    SG.SAMPLED_CACHE.clear()
    single = [R.sampled_gaussian_rdp([o], 0.0123, 1.37)[0] for o in orders]
    np.testing.assert_allclose(batch, single, rtol=1e-13)


def test_integer_orders_at_once_equal_each_on_its_own() -> None:
    """The integer orders of a call are summed together, one padded row each: each equals its own row alone."""
    alphas = list(range(2, 257))
    for q, sigma in [(0.0123, 1.37), (0.3, 0.6), (1e-5, 5.0)]:
        together = SG._log_a_ints(q, sigma, alphas)
        np.testing.assert_allclose(together, [SG._log_a_int(q, sigma, a) for a in alphas], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("q", "sigma"), [(0.1, 0.5), (0.3, 0.7), (0.0017, 1.0), (0.05, 20.0)])
def test_fractional_series_matches_opacus_s_term_by_term_one(q: float, sigma: float) -> None:
    """The blocked series (positive and negative terms summed apart) against Opacus's term-by-term series,
    where a series needs one block and where it needs hundreds of terms."""
    opacus_rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
    orders = [1.1, 1.5, 2.5, 10.5, 33.3, 63.9]
    ours = SG._log_a_frac(q, sigma, np.array(orders))
    theirs = [opacus_rdp._compute_log_a_for_frac_alpha(q, sigma, a) for a in orders]
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-14)


def test_sampled_gaussian_limits() -> None:
    orders = [2.0, 5.5, 32.0]
    np.testing.assert_allclose(R.sampled_gaussian_rdp(orders, 1.0, 1.3), R.gaussian_rdp(orders, 1.3))
    # subsampling only helps, and RDP grows with the order
    curve = R.sampled_gaussian_rdp(R.DEFAULT_ORDERS, 0.05, 1.1)
    assert np.all(curve <= R.gaussian_rdp(R.DEFAULT_ORDERS, 1.1) + 1e-12)
    assert np.all(np.diff(curve) >= 0)


def test_sampled_gaussian_order_2_closed_form() -> None:
    """Order 2: log(1 + q^2 (exp(1/sigma^2) - 1)) (Mironov, Talwar, Zhang 2019)."""
    q, sigma = 0.03, 0.9
    expected = math.log1p(q * q * math.expm1(1 / sigma**2))
    assert R.sampled_gaussian_rdp([2.0], q, sigma)[0] == pytest.approx(expected, rel=1e-12)


def _renyi_laplace_by_integration(order: float, epsilon: float) -> float:
    """D_order(Lap(0, 1/eps) || Lap(1, 1/eps)) by quadrature over the three linear pieces."""
    b = 1.0 / epsilon

    def integrand(x: float) -> float:
        return math.exp(order * (-abs(x) / b) + (1 - order) * (-abs(x - 1) / b)) / (2 * b)

    total = sum(integrate.quad(integrand, lo, hi, epsabs=0, epsrel=1e-12)[0]
                for lo, hi in [(-np.inf, 0.0), (0.0, 1.0), (1.0, np.inf)])
    return math.log(total) / (order - 1)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("order", [1.5, 2.0, 10.0, 64.0])
def test_laplace_rdp_matches_integration(order: float, epsilon: float) -> None:
    assert R.laplace_rdp([order], epsilon)[0] == pytest.approx(_renyi_laplace_by_integration(order, epsilon), rel=1e-7)


def test_laplace_agrees_with_dp_accounting() -> None:
    dpa = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    for eps in (0.05, 0.5, 2.0):
        theirs = [dpa._laplace_rdp(eps, a) for a in R.DEFAULT_ORDERS]
        np.testing.assert_allclose(R.laplace_rdp(R.DEFAULT_ORDERS, eps), theirs, rtol=1e-9)


def _renyi_discrete(order: float, p: np.ndarray, q: np.ndarray) -> float:
    log_terms = order * np.log(p) + (1 - order) * np.log(q)
    top = float(log_terms.max())
    return (top + math.log(float(np.exp(log_terms - top).sum()))) / (order - 1)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_pure_dp_bound_holds_for_randomized_response_and_laplace(epsilon: float) -> None:
    """Randomized response is the worst eps-DP pair; its exact RDP must sit under the bound."""
    orders = np.array(R.DEFAULT_ORDERS)
    bound = R.pure_dp_rdp(orders, epsilon)
    hi = math.exp(epsilon) / (1 + math.exp(epsilon))
    rr = np.array([_renyi_discrete(a, np.array([hi, 1 - hi]), np.array([1 - hi, hi])) for a in orders])
    assert np.all(rr <= bound + 1e-12)
    assert np.all(bound <= epsilon)
    assert np.all(R.laplace_rdp(orders, epsilon) <= bound + 1e-12)


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 4.0])
def test_exponential_mechanism_bound_holds_on_random_utilities(epsilon: float) -> None:
    """exp(eps u / 2) with |u - u'| <= 1 per outcome: Renyi divergences stay under the bound."""
    rng = np.random.default_rng(0)
    orders = np.array([1.1, 2.0, 5.0, 20.0, 256.0])
    bound = R.exponential_rdp(orders, epsilon)
    assert np.all(bound <= R.pure_dp_rdp(orders, epsilon) + 1e-15)
    worst = np.zeros(len(orders))
    for trial in range(300):
        k = 2 + trial % 7
        u = rng.uniform(-3, 3, size=k)
        d = rng.choice([-1.0, 1.0], size=k) if trial % 2 else rng.uniform(-1, 1, size=k)
        p = np.exp(epsilon * u / 2)
        q = np.exp(epsilon * (u + d) / 2)
        p, q = p / p.sum(), q / q.sum()
        worst = np.maximum(worst, [_renyi_discrete(a, p, q) for a in orders])
    assert np.all(worst <= bound + 1e-12)


def test_joint_noise_multiplier() -> None:
    assert R.joint_noise_multiplier([4.0, 1.0]) == pytest.approx((1 / 16 + 1) ** -0.5)
    assert R.joint_noise_multiplier([2.0]) == pytest.approx(2.0)


def _joint_renyi_2d(order: float, q: float, s1: float, s2: float) -> float:
    """D_order((1-q) P0 + q P1 || P0), P0 = N(0, diag(s1^2, s2^2)), P1 = P0 shifted by (1, 1).

    Computed on a 2-D grid with expm1/log1p so the tiny excess over 1 keeps full precision:
    an independent check that the pair of releases is exactly the joint sampled Gaussian.
    """
    x = np.linspace(-12 * s1, 12 * s1 + 1, 1501)
    y = np.linspace(-12 * s2, 12 * s2 + 1, 1501)
    gx = np.exp(-x**2 / (2 * s1**2)) / math.sqrt(2 * math.pi * s1**2)
    gy = np.exp(-y**2 / (2 * s2**2)) / math.sqrt(2 * math.pi * s2**2)
    lx = (2 * x - 1) / (2 * s1**2)
    ly = (2 * y - 1) / (2 * s2**2)
    ratio_m1 = np.expm1(lx[:, None] + ly[None, :])  # P1/P0 - 1
    excess = np.expm1(order * np.log1p(q * ratio_m1))  # (mixture / P0)^order - 1
    inner = np.trapezoid(excess * gy[None, :], y, axis=1)
    return math.log1p(float(np.trapezoid(inner * gx, x))) / (order - 1)


def test_joint_bound_is_the_exact_rdp_of_the_pair() -> None:
    q, sigmas = 0.05, (4.0, 1.0)
    for order in (1.1, 2.0, 3.5):
        exact_2d = _joint_renyi_2d(order, q, *sigmas)
        assert R.joint_sampled_rdp([order], q, sigmas)[0] == pytest.approx(exact_2d, rel=1e-6)


def test_paper_theorem_3_undercuts_the_exact_rdp_so_holder_takes_the_max() -> None:
    """DPGM Theorem 3 applies Hoelder to marginal losses of releases sharing one batch; that
    is not a bound on their joint loss. At a small order it falls below the exact value."""
    q, sigmas = 0.0017, (4.0, 1.0)
    split = R.holder_split_rdp([1.1], q, sigmas, grid_steps=400)[0]
    exact = R.joint_sampled_rdp([1.1], q, sigmas)[0]
    assert split < 0.99 * _joint_renyi_2d(1.1, q, *sigmas)  # the paper's bound is invalid here ...
    assert R.holder_sampled_rdp([1.1], q, sigmas)[0] >= exact  # ... so ours never uses it there


@pytest.mark.parametrize(("q", "sigmas"), [(0.0017, (4.0, 1.0)), (0.05, (2.0, 1.2)), (0.3, (1.0, 1.0, 3.0))])
def test_joint_below_holder_and_both_above_each_single_mechanism(q: float, sigmas: tuple[float, ...]) -> None:
    orders = [1.1, 1.5, 2.0, 3.3, 8.0, 12.0, 32.0, 100.0]
    joint = R.joint_sampled_rdp(orders, q, sigmas)
    holder = R.holder_sampled_rdp(orders, q, sigmas, grid_steps=20)
    assert np.all(joint <= holder)
    for s in sigmas:
        single = R.sampled_gaussian_rdp(orders, q, s)
        assert np.all(single <= joint + 1e-15)
        assert np.all(single <= holder + 1e-15)


def test_holder_is_a_strictly_looser_bound_at_working_orders() -> None:
    """Where the paper's split is valid it is still looser than the joint bound (docs/paper.md, note 6)."""
    orders = [8.0, 12.0, 32.0]
    joint = R.joint_sampled_rdp(orders, 0.0017, (4.0, 1.0))
    holder = R.holder_sampled_rdp(orders, 0.0017, (4.0, 1.0))
    assert np.all(holder > 1.05 * joint)


def test_conversions() -> None:
    orders = np.array(R.DEFAULT_ORDERS)
    rdp = 11780 * R.sampled_gaussian_rdp(orders, 0.0017, 1.0)
    tight, a_tight = R.rdp_to_epsilon(orders, rdp, 1e-5, method="tight")
    classical, a_classical = R.rdp_to_epsilon(orders, rdp, 1e-5, method="classical")
    assert tight < classical
    i = list(orders).index(a_classical)
    assert classical == pytest.approx(rdp[i] + math.log(1e5) / (a_classical - 1))
    j = list(orders).index(a_tight)
    assert tight == pytest.approx(rdp[j] + math.log1p(-1 / a_tight) - (math.log(1e-5) + math.log(a_tight)) / (a_tight - 1))
    with pytest.raises(ValueError, match="delta"):
        R.rdp_to_epsilon(orders, rdp, 0.0)
    with pytest.raises(ValueError, match="method"):
        R.rdp_to_epsilon(orders, rdp, 1e-5, method="magic")
    assert R.rdp_to_epsilon([2.0, 3.0], [np.inf, np.inf], 1e-5)[0] == np.inf


def test_bad_orders_are_rejected() -> None:
    for bad in ([1.0], [0.5, 2.0], [np.nan]):
        with pytest.raises(ValueError, match="orders"):
            R.gaussian_rdp(bad, 1.0)
