"""The sampled Gaussian mechanism's RDP (Mironov, Talwar, Zhang 2019): the exact integer-order formula and
the fractional series, each for every order of a call at once, a cache per (q, sigma, order), and a check by
numerical integration of the DPGM paper's E1 and E2. ``rdp.sampled_gaussian_rdp`` is the entry point."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

#: Integer orders up to this are summed together (``_log_a_ints``: one padded row each); larger ones one by one.
_INTEGER_BLOCK_MAX_ORDER = 256
#: Orders above this use the integer formula at ceil(order): RDP is non-decreasing in the
#: order, so this is a valid (never smaller) upper bound and keeps huge orders cheap.
_FRACTIONAL_SERIES_MAX_ORDER = 64.0


@lru_cache(maxsize=100_000)
def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    """log E_{mu0}[(mu1/mu0)^alpha] for integer alpha (Mironov, Talwar, Zhang 2019, eq. 3)."""
    return float(_log_a_ints(q, sigma, [alpha])[0])


def _log_a_ints(q: float, sigma: float, alphas: list[int]) -> np.ndarray:
    """``_log_a_int`` at every integer alpha at once: one row of the binomial sum's terms per alpha, padded
    with -inf."""
    alpha = np.asarray(alphas, dtype=float)[:, None]
    k = np.arange(int(alpha.max()) + 1, dtype=float)[None, :]
    within = k <= alpha
    # log C(alpha, k) as a running sum of log((alpha - i + 1) / i): no scipy import on the CLI path
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.where(within[:, 1:], np.log(alpha - k[:, 1:] + 1.0) - np.log(k[:, 1:]), 0.0)
    log_binom = np.concatenate([np.zeros_like(alpha), np.cumsum(steps, axis=1)], axis=1)
    log_terms = np.where(within, log_binom + k * math.log(q) + (alpha - k) * math.log1p(-q)
                         + (k * k - k) / (2 * sigma**2), -np.inf)
    top = log_terms.max(axis=1)
    return top + np.log(np.exp(log_terms - top[:, None]).sum(axis=1))  # scipy's logsumexp is 10x slower


def _log_erfc(x: float) -> float:
    """log(erfc(x)); beyond x = 25 (erfc < 1e-273) the asymptotic series, error < 1e-10."""
    if x < 25.0:
        return math.log(math.erfc(x))
    u = 1.0 / (2.0 * x * x)
    series = 1.0 - u + 3.0 * u * u - 15.0 * u**3 + 105.0 * u**4
    return -x * x - math.log(x) - 0.5 * math.log(math.pi) + math.log(series)


def _log_sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(exp(a) - exp(b)) elementwise for a >= b (-inf where a == b, nan where a < b)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        diff = a + np.log(-np.expm1(b - a))
    return np.where(b == -np.inf, a, np.where(a > b, diff, np.where(a == b, -np.inf, np.nan)))


#: Terms of the fractional series computed at once per order (``_log_a_frac``) at first; each block after the
#: second is as long as all before it (a series of a few terms costs a few, a long one few blocks).
_SERIES_BLOCK = 8


def _log_a_frac(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_alpha for fractional alphas: the series of Mironov, Talwar, Zhang (2019), section 3.3.

    The same series Opacus and TF-Privacy use; checked against numerical integration. Each alpha's
    series stops at its first term pair below e^-30, as the scalar series does. All alphas and a block
    of terms run at once; the positive and the negative terms (C(alpha, i) changes sign past alpha) are
    summed apart and subtracted once at the end.
    """
    alphas = np.asarray(alphas, dtype=float)
    sums = np.full((2, 2, alphas.size), -np.inf)  # [A_0 or A_1][positive or negative terms][alpha]
    log_coef = np.zeros(alphas.size)  # log |C(alpha, i)| at the block's first i
    sign = np.ones(alphas.size)  # its sign
    live, first = np.arange(alphas.size), 0
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    root = math.sqrt(2) * sigma
    while live.size:
        block = max(_SERIES_BLOCK, first)
        i = np.arange(first, first + block, dtype=float)
        a = alphas[live][:, None]
        j = a - i  # [live, block]
        # C(alpha, i + 1) = C(alpha, i) (alpha - i) / (i + 1); alpha is not an integer here
        steps = np.log(np.abs(j)) - np.log(i + 1.0)
        coef = log_coef[live][:, None] + np.cumsum(steps, axis=1) - steps
        signs = np.cumprod(np.sign(j), axis=1)
        positive = (sign[live][:, None] * signs / np.sign(j)) > 0
        log_e0 = math.log(0.5) + _log_erfc_all((i - z0) / root)
        log_e1 = math.log(0.5) + _log_erfc_all((z0 - j) / root)
        log_s0 = coef + i * math.log(q) + j * math.log1p(-q) + (i * i - i) / (2 * sigma**2) + log_e0
        log_s1 = coef + j * math.log(q) + i * math.log1p(-q) + (j * j - j) / (2 * sigma**2) + log_e1
        small = np.maximum(log_s0, log_s1) < -30
        stop = np.where(small.any(axis=1), small.argmax(axis=1), block)  # the last term taken, or none
        taken = np.arange(block) <= stop[:, None]
        for k, log_s in enumerate((log_s0, log_s1)):
            for m, part in enumerate((positive, ~positive)):
                terms = np.where(taken & part, log_s, -np.inf)
                sums[k, m, live] = np.logaddexp(sums[k, m, live], _log_sum_rows(terms))
        log_coef[live] = coef[:, -1] + steps[:, -1]
        sign[live] *= signs[:, -1]
        live, first = live[stop == block], first + block
    return np.logaddexp(_log_sub(sums[0, 0], sums[0, 1]), _log_sub(sums[1, 0], sums[1, 1]))


def _log_erfc_all(x: np.ndarray) -> np.ndarray:
    """``_log_erfc`` elementwise."""
    return np.array([_log_erfc(v) for v in x.ravel().tolist()]).reshape(x.shape)


def _log_sum_rows(log_terms: np.ndarray) -> np.ndarray:
    """log of each row's sum of exp(log_terms) (-inf for a row of -inf)."""
    top = log_terms.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(log_terms - safe[:, None]).sum(axis=1))


#: (q, sigma, order) -> sampled Gaussian RDP; the rules and the reports ask for the same curves again and again.
SAMPLED_CACHE: dict[tuple[float, float, float], float] = {}
_CACHE_MAX = 200_000


def sampled_gaussian_at(q: float, sigma: float, orders: list[float]) -> list[float]:
    """RDP at orders not yet cached: closed form at q = 1, the integer formula at integer orders and
    (rounded up, a valid bound) above ``_FRACTIONAL_SERIES_MAX_ORDER``, the series at the others at once."""
    if q == 1.0:
        return [order / (2.0 * sigma**2) for order in orders]
    out: dict[float, float] = {}
    fractional, integer = [], {}
    for order in orders:
        if abs(order - round(order)) < 1e-9:
            integer[order] = round(order)
        elif order > _FRACTIONAL_SERIES_MAX_ORDER:
            integer[order] = math.ceil(order)
        else:
            fractional.append(order)
    if integer:
        alphas = sorted(set(integer.values()))
        small = [a for a in alphas if a <= _INTEGER_BLOCK_MAX_ORDER]
        log_a = dict(zip(small, _log_a_ints(q, sigma, small).tolist())) if small else {}
        log_a.update({a: _log_a_int(q, sigma, a) for a in alphas if a > _INTEGER_BLOCK_MAX_ORDER})
        out.update({order: log_a[up] / (up - 1.0) for order, up in integer.items()})
    if fractional:
        alphas = np.array(fractional)
        out.update(zip(fractional, (_log_a_frac(q, sigma, alphas) / (alphas - 1.0)).tolist()))
    return [out[order] for order in orders]


def _log_integral(log_f) -> float:
    """log of the integral over the real line of exp(log_f(x)), stabilised around the peak."""
    from scipy import integrate, optimize  # slow to import; only the cross-checks need them

    res = optimize.minimize_scalar(lambda x: -log_f(x))
    x_max = float(res.x)
    f_max = float(log_f(x_max))

    def f(x: float) -> float:
        return math.exp(min(log_f(x) - f_max, 700.0))

    left, _ = integrate.quad(f, -np.inf, x_max, limit=200, epsabs=0, epsrel=1e-10)
    right, _ = integrate.quad(f, x_max, np.inf, limit=200, epsabs=0, epsrel=1e-10)
    return f_max + math.log(left + right)


def sampled_gaussian_rdp_integrated(order: float, sampling_rate: float, noise_multiplier: float) -> float:
    """The same RDP by numerical integration of the DPGM paper's E1 and E2 (section 5).

    With mu0 = N(0, sigma^2), mu1 = (1-q) mu0 + q N(1, sigma^2) and lambda = order - 1:
    E1 = int mu0 (mu0/mu1)^lambda, E2 = int mu1 (mu1/mu0)^lambda, and
    rdp(order) = log max(E1, E2) / lambda. Valid for any real order > 1; slow, used to check.
    """
    q, s, lam = float(sampling_rate), float(noise_multiplier), float(order) - 1.0
    if lam <= 0:
        raise ValueError("order must be > 1")
    log_norm = -0.5 * math.log(2 * math.pi * s * s)

    def log_ratio(x: float) -> float:  # log(mu1(x) / mu0(x))
        return float(np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * s * s)))

    def log_e2(x: float) -> float:  # mu0 * (mu1/mu0)^(lam+1)
        return log_norm - x * x / (2 * s * s) + (lam + 1) * log_ratio(x)

    def log_e1(x: float) -> float:  # mu1 * (mu0/mu1)^(lam+1) = mu0 * (mu0/mu1)^lam
        return log_norm - x * x / (2 * s * s) - lam * log_ratio(x)

    return max(_log_integral(log_e1), _log_integral(log_e2)) / lam


def cached_rdp(q: float, sigma: float, orders: list[float]) -> list[float]:
    """RDP at ``orders`` (each > 1), through the cache: the orders not yet in it computed in one call."""
    new = [o for o in dict.fromkeys(orders) if (q, sigma, o) not in SAMPLED_CACHE]
    if new:
        if len(SAMPLED_CACHE) > _CACHE_MAX:
            SAMPLED_CACHE.clear()
        SAMPLED_CACHE.update(zip(((q, sigma, o) for o in new), sampled_gaussian_at(q, sigma, new)))
    return [SAMPLED_CACHE[(q, sigma, o)] for o in orders]
