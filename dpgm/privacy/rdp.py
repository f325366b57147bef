"""Pure math of Renyi differential privacy: RDP curves as functions of orders and parameters.

An RDP curve is an array ``rdp[i]`` = epsilon of order ``orders[i]`` (Mironov 2017). The
moments accountant's log moment (Abadi et al.; DPGM paper section 5) is
``alpha(lambda) = lambda * rdp(lambda + 1)``. Curves of independent mechanisms add.
No state here: the ledger and the accountant live in ledger.py and accountant.py.

All sensitivities are for add/remove neighbours (docs/privacy.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from dpgm.privacy import sampled_gaussian as SG
from dpgm.privacy.sampled_gaussian import sampled_gaussian_rdp_integrated  # noqa: F401 (the check lives beside its formula)

#: Fractional orders 1.1 .. 10.9, every integer 11 .. 256, then a few large orders for
#: very small epsilons. The accountant minimises over this grid.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)]
    + [float(a) for a in range(11, 257)]
    + [320.0, 384.0, 512.0, 768.0, 1024.0, 2048.0, 4096.0]
)


def _as_orders(orders: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(orders, dtype=float))
    if np.any(~np.isfinite(arr)) or np.any(arr <= 1.0):
        raise ValueError("RDP orders must be finite and > 1")
    return arr


def gaussian_rdp(orders: Sequence[float], noise_multiplier: float) -> np.ndarray:
    """Gaussian mechanism: rdp(a) = a / (2 sigma^2).

    The DPGM paper's Lemma 1 writes the log moment as (l^2 + l) / (4 sigma^2): half the
    true value (docs/paper.md, note 1). Here alpha(l) = l * rdp(l + 1) = (l^2 + l) / (2 sigma^2).
    """
    a = _as_orders(orders)
    return a / (2.0 * noise_multiplier**2)


def discrete_gaussian_rdp(orders: Sequence[float], noise_multiplier: float) -> np.ndarray:
    """Discrete Gaussian N_Z(0, s^2) per coordinate of an integer vector, neighbours at L2
    distance <= Delta, s = sigma Delta: rdp(a) = a / (2 sigma^2), the continuous Gaussian's.

    One coordinate, integer shift m: D_a <= a m^2 / (2 s^2) (Canonne, Kamath, Steinke, NeurIPS
    2020, Theorem 4: (Delta^2 / (2 s^2))-zCDP). Independent coordinates: Renyi divergences of
    product distributions add (the paper's multivariate statement; van Erven and Harremoes 2014,
    Thm. 28), so m in Z^d costs a ||m||^2 / (2 s^2), with no term in d. (The tau d term of Kairouz,
    Liu, Steinke, ICML 2021, Prop. 14 is for a SUM of n discrete Gaussians, not one draw.)
    """
    return gaussian_rdp(orders, noise_multiplier)


def threshold_delta(noise_multiplier: float, threshold: int) -> float:
    """P(1 + Z >= threshold) for Z ~ N_Z(0, s^2), s = noise_multiplier, rounded up: the chance that a key
    held by one record passes a discrete Gaussian histogram's threshold (events.ThresholdGaussianEvent).

    With m = threshold - 1 >= 0: P(Z >= m) = sum_{k >= m} e^(-k^2 / 2s^2) / S where S >= s sqrt(2 pi) (Poisson
    summation, every term of the dual sum positive). The sum runs term by term up to M = m + min(ceil(40 s),
    10^4) + 1; the terms beyond M are below the integral of e^(-x^2 / 2s^2) from M, s sqrt(2 pi) P(N(0, s^2) > M)."""
    s, m = float(noise_multiplier), int(threshold) - 1
    if m < 0:
        return 1.0
    top = m + min(math.ceil(40.0 * s), 10_000) + 1
    k = np.arange(m, top + 1, dtype=np.float64)
    head = float(np.exp(-k * k / (2.0 * s * s)).sum()) / (s * math.sqrt(2.0 * math.pi))
    rest = 0.5 * math.erfc(top / (s * math.sqrt(2.0)))
    return min(1.0, (head + rest) * (1.0 + 1e-9))


def randomized_response_rdp(orders: Sequence[float], epsilon: float) -> np.ndarray:
    """Any epsilon-DP mechanism: rdp(a) <= log((e^(a e) + e^((1 - a) e)) / (1 + e^e)) / (a - 1).

    Every pair of epsilon-DP output laws is a post-processing of binary randomised response's
    pair (Kairouz, Oh, Viswanath, ICML 2015, section 2), and Renyi divergence cannot grow under
    post-processing: randomised response's divergence bounds them all. The discrete Laplace with
    unit sensitivity attains it (its privacy loss is +-epsilon only); never above ``pure_dp_rdp``.
    """
    a = _as_orders(orders)
    e = float(epsilon)
    log_val = np.logaddexp(a * e, (1.0 - a) * e) - np.logaddexp(0.0, e)
    return np.minimum(log_val / (a - 1.0), pure_dp_rdp(a, e))


#: Orders on which a discrete Laplace is matched to a continuous one: the accountant's grid,
#: orders close to 1 (KL) and very large ones (pure epsilon).
_MATCH_ORDERS: tuple[float, ...] = tuple(sorted(
    {*DEFAULT_ORDERS, *(1.0 + 10.0**-k for k in range(1, 7)), *(2.0**k for k in range(13, 21))}
))


@lru_cache(maxsize=1024)
def matched_discrete_laplace_epsilon(epsilon: float) -> float:
    """The largest e' <= epsilon whose randomised-response curve (the discrete Laplace's) stays at
    or below the continuous Laplace's curve at epsilon on every order of ``_MATCH_ORDERS``.

    A plan made for a continuous Laplace release of epsilon (a calibration, a budget check) then
    holds for the exact discrete release at e', which costs e'/epsilon (< 1) more noise.
    """
    target = laplace_rdp(_MATCH_ORDERS, epsilon) * (1.0 - 1e-9)
    lo, hi = 0.0, float(epsilon)
    for _ in range(80):
        mid = (lo + hi) / 2
        if mid > 0 and np.all(randomized_response_rdp(_MATCH_ORDERS, mid) <= target):
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        raise ValueError(f"no discrete Laplace matches epsilon {epsilon!r}")
    return lo


def sampled_gaussian_rdp(orders: Sequence[float], sampling_rate: float, noise_multiplier: float) -> np.ndarray:
    """Poisson-sampled Gaussian mechanism (rate q, multiplier sigma), add/remove neighbours.

    Integer orders: the exact binomial formula. Fractional orders: the Mironov-Talwar-Zhang
    series (large fractional orders are rounded up, a valid upper bound).
    """
    return np.array(SG.cached_rdp(float(sampling_rate), float(noise_multiplier), _as_orders(orders).tolist()))


def laplace_rdp(orders: Sequence[float], epsilon: float) -> np.ndarray:
    """Laplace mechanism with scale sensitivity/epsilon (Mironov 2017, Proposition 6)."""
    a = _as_orders(orders)
    e = float(epsilon)
    log_val = np.logaddexp(np.log(a / (2 * a - 1)) + (a - 1) * e, np.log((a - 1) / (2 * a - 1)) - a * e)
    return np.minimum(log_val / (a - 1), e)


def pure_dp_rdp(orders: Sequence[float], epsilon: float) -> np.ndarray:
    """Any epsilon-DP mechanism: rdp(a) <= min(epsilon, a epsilon^2 / 2).

    epsilon-DP implies (epsilon^2/2)-zCDP (Bun and Steinke 2016, Prop. 1.4), and RDP of
    any order never exceeds the pure epsilon.
    """
    a = _as_orders(orders)
    e = float(epsilon)
    return np.minimum(e, a * e * e / 2.0)


def exponential_rdp(orders: Sequence[float], epsilon: float) -> np.ndarray:
    """Exponential mechanism that is epsilon-DP: min(pure-DP bound, a epsilon^2 / 8).

    Its log-probability ratio between neighbours spans an interval of width epsilon
    (epsilon-bounded range), hence (epsilon^2/8)-zCDP (Cesar and Rogers 2021).
    """
    a = _as_orders(orders)
    e = float(epsilon)
    return np.minimum(pure_dp_rdp(a, e), a * e * e / 8.0)


def joint_noise_multiplier(noise_multipliers: Sequence[float]) -> float:
    """Gaussian releases on the same data with multipliers s_i act as one with (sum s_i^-2)^-1/2.

    Stacking the releases, each scaled by 1/s_i, gives one Gaussian mechanism with unit
    noise and squared sensitivity sum 1/s_i^2 (docs/paper.md, note 6; Andrew et al. 2021).
    """
    return float(sum(float(s) ** -2 for s in noise_multipliers) ** -0.5)


def _simplex_grid(n: int, steps: int) -> np.ndarray:
    """All weight vectors with n positive entries that are multiples of 1/steps and sum to 1."""
    if n == 1:
        return np.ones((1, 1))
    rows = []
    for first in range(1, steps - n + 2):
        for rest in _simplex_grid(n - 1, steps - first) * (steps - first):
            rows.append([first, *rest])
    return np.array(rows, dtype=float) / steps


#: Orders above this are rounded up to ``_ROUNDING_STEPS`` points per doubling in ``holder_split_rdp``.
_ROUNDING_FROM = 256.0
_ROUNDING_STEPS = 16


def _rounded_up(orders: np.ndarray) -> np.ndarray:
    """``orders`` above ``_ROUNDING_FROM`` rounded up to a geometric grid: RDP is non-decreasing in the order,
    so each term only grows, and a split's thousands of distinct large orders become a few dozen."""
    top = _ROUNDING_FROM * 2.0 ** (np.ceil(np.log2(np.maximum(orders, _ROUNDING_FROM) / _ROUNDING_FROM)
                                           * _ROUNDING_STEPS - 1e-9) / _ROUNDING_STEPS)
    return np.where(orders > _ROUNDING_FROM, np.maximum(top, orders), orders)


def holder_split_rdp(
    orders: Sequence[float], sampling_rate: float, noise_multipliers: Sequence[float], grid_steps: int = 40
) -> np.ndarray:
    """The DPGM paper's Theorem 3 as written (Eq. 7), NOT a valid bound on its own.

    In log moments: alpha(l) <= sum_i j_i alpha_i(l / j_i) for j_i > 0 summing to 1, i.e.
    rdp(a) <= sum_i rdp_i(1 + (a - 1) / j_i), minimised per order over splits of step
    1/grid_steps. The proof applies Hoelder to the marginal losses of mechanisms that share
    one Poisson batch, but their joint loss is not the sum of the marginal ones: at small
    orders this falls BELOW the exact RDP of the pair (q=0.0017, sigmas (4, 1), order 1.1:
    2.919e-6 < 2.996e-6). Use ``holder_sampled_rdp``, which never is.
    """
    a = _as_orders(orders)
    sigmas = [float(s) for s in noise_multipliers]
    if len(sigmas) == 1:
        return sampled_gaussian_rdp(a, sampling_rate, sigmas[0])
    splits = _simplex_grid(len(sigmas), grid_steps)
    totals = np.zeros((len(a), len(splits)))
    for i, s in enumerate(sigmas):
        inner = _rounded_up(1.0 + (a[:, None] - 1.0) / splits[None, :, i])
        totals += sampled_gaussian_rdp(inner.ravel(), sampling_rate, s).reshape(inner.shape)
    return totals.min(axis=1)


def joint_sampled_rdp(orders: Sequence[float], sampling_rate: float, noise_multipliers: Sequence[float]) -> np.ndarray:
    """Exact RDP of Gaussian releases sharing one Poisson batch (docs/paper.md, note 6).

    The pair is dominated by one sampled Gaussian with the joint multiplier, also when a
    later release adapts to an earlier one (adaptive Gaussian composition is Gaussian).
    """
    return sampled_gaussian_rdp(orders, sampling_rate, joint_noise_multiplier(noise_multipliers))


def holder_sampled_rdp(
    orders: Sequence[float], sampling_rate: float, noise_multipliers: Sequence[float], grid_steps: int = 40
) -> np.ndarray:
    """DPGM Theorem 3 (Hoelder split) for sampled Gaussians sharing one batch, made valid.

    Per order: max(Hoelder split, exact joint RDP). The max is the paper's bound wherever
    that bound holds, and the exact joint value where it undercuts it (see holder_split_rdp).
    """
    split = holder_split_rdp(orders, sampling_rate, noise_multipliers, grid_steps)
    return np.maximum(split, joint_sampled_rdp(orders, sampling_rate, noise_multipliers))


def rdp_to_epsilon(
    orders: Sequence[float], rdp: Sequence[float], delta: float, method: str = "tight"
) -> tuple[float, float]:
    """Convert an RDP curve to (epsilon, best order) for the given delta.

    "classical" (Mironov 2017, Prop. 3): eps = rdp + log(1/delta) / (a - 1).
    "tight" (Balle et al. 2020, Thm. 21; the conversion Opacus and dp_accounting use):
    eps = rdp + log((a - 1) / a) - (log(delta) + log(a)) / (a - 1). Always <= classical.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    a = _as_orders(orders)
    r = np.asarray(rdp, dtype=float)
    if method == "classical":
        eps = r + math.log(1.0 / delta) / (a - 1.0)
    elif method == "tight":
        eps = r + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    else:
        raise ValueError(f"unknown conversion method {method!r}")
    if np.all(np.isnan(eps)):
        return float("inf"), float("nan")
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(a[i])


def smooth_gaussian_rdp(orders: Sequence[float], noise_multiplier: float, beta: float, dim: int) -> np.ndarray:
    """RDP of Gaussian noise scaled by a beta-smooth sensitivity bound S (std c S in ``dim`` coordinates).

    Neighbours' stds differ by r in [e^-beta, e^beta] and their means by <= min(S, S'); the Renyi
    divergence of two Gaussians (Gil et al. 2013) is bounded by its mean term at r = e^-beta plus the
    larger of its variance terms at the two ends; inf where a variance term diverges.
    """
    a = np.asarray(orders, dtype=np.float64)
    c2, e2b = float(noise_multiplier) ** 2, math.exp(2.0 * float(beta))
    mix = a - (a - 1.0) * e2b  # sigma_a^2 / sigma'^2 at r = e^-beta (std 1 -> e^-beta)
    safe = np.where(mix > 0, mix, 1.0)
    mean = a / (2.0 * c2 * safe)

    def variance_term(r2: float) -> np.ndarray:
        s_a = a * r2 + 1.0 - a
        ok = s_a > 0
        val = 0.5 * math.log(r2) + np.log(r2 / np.where(ok, s_a, 1.0)) / (2.0 * (a - 1.0))
        return np.where(ok, val, np.inf)

    var = dim * np.maximum(variance_term(1.0 / e2b), variance_term(e2b))
    return np.where(mix > 0, mean + var, np.inf)
