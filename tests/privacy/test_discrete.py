"""The exact samplers (dpgm/privacy/discrete.py) against the exact pmfs: chi-square goodness of fit
for both sources (OpenDP over the OS CSPRNG; the seeded CKS implementation), and the sources'
contracts (secure draws never touch the generator; seeded draws repeat)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpgm.privacy.discrete import (
    SecureGenerator,
    discrete_gaussian,
    discrete_laplace,
    is_secure,
    noisy_max_index,
    secure_generator,
)

DRAWS = 20_000
#: A correct sampler fails a test with this probability (the secure source is not seeded).
P_FLOOR = 1e-6


def gaussian_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    """P(x) = exp(-x^2 / (2 s^2)) / sum_k exp(-k^2 / (2 s^2)), the normaliser summed to 1e-30."""
    wide = np.arange(-int(40 * scale) - 40, int(40 * scale) + 41)
    return np.exp(-(support**2) / (2 * scale**2)) / np.exp(-(wide**2) / (2 * scale**2)).sum()


def laplace_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    """P(x) = (1 - r) / (1 + r) r^|x|, r = exp(-1 / scale)."""
    r = math.exp(-1.0 / scale)
    return (1 - r) / (1 + r) * r ** np.abs(support)


def chi_square_p(draws: np.ndarray, pmf) -> float:
    """Chi-square p-value of ``draws`` against ``pmf``, bins of expected count >= 5: each tail pooled into the
    outermost such bin (a tail bin of its own would expect far less than one draw, and one draw there would
    reject a correct sampler)."""
    lo, hi = int(draws.min()), int(draws.max())
    support = np.arange(lo - 200, hi + 201)
    expected = pmf(support) * len(draws)
    keep = expected >= 5
    first, last = support[keep][0], support[keep][-1]
    inner = np.arange(first + 1, last)
    observed = np.array(
        [np.count_nonzero(draws <= first)]
        + [np.count_nonzero(draws == x) for x in inner]
        + [np.count_nonzero(draws >= last)]
    )
    p_inner = pmf(inner)
    edge = (1.0 - p_inner.sum()) / 2  # both pmfs are symmetric: each end bin holds its value and its tail
    exp = np.concatenate([[edge], p_inner, [edge]]) * len(draws)
    return float(stats.chisquare(observed, exp * observed.sum() / exp.sum()).pvalue)


SOURCES = {"secure": lambda: secure_generator(), "seeded": lambda: np.random.default_rng(11)}


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("scale", [0.8, 6.0])
def test_discrete_gaussian_matches_its_pmf(source: str, scale: float) -> None:
    draws = discrete_gaussian(DRAWS, scale, SOURCES[source]())
    assert draws.dtype == np.int64 and draws.shape == (DRAWS,)
    assert chi_square_p(draws, lambda x: gaussian_pmf(scale, x)) > P_FLOOR


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("scale", [0.7, 4.0])
def test_discrete_laplace_matches_its_pmf(source: str, scale: float) -> None:
    draws = discrete_laplace(DRAWS, scale, SOURCES[source]())
    assert chi_square_p(draws, lambda x: laplace_pmf(scale, x)) > P_FLOOR


def test_the_test_rejects_a_rounded_continuous_gaussian() -> None:
    """rint(N(0, 0.8^2)) puts 0.468 on zero, the discrete Gaussian 0.498: the check must see it."""
    rounded = np.rint(np.random.default_rng(0).normal(0.0, 0.8, DRAWS)).astype(np.int64)
    assert chi_square_p(rounded, lambda x: gaussian_pmf(0.8, x)) < 1e-12


def test_a_non_integer_scale_is_exact_too() -> None:
    """scale = p / q with q > 1: the rational acceptance exp(-(|y| q^2 t - p^2)^2 / ...) is exact."""
    draws = discrete_gaussian(DRAWS, 2.5, np.random.default_rng(3))
    assert chi_square_p(draws, lambda x: gaussian_pmf(2.5, x)) > P_FLOOR


def test_large_scales_have_the_right_spread() -> None:
    """Grid-unit scales reach 1e5 and more: variance ~ scale^2 (exact within 1e-30 there)."""
    for rng in (secure_generator(), np.random.default_rng(4)):
        draws = discrete_gaussian((40, 50), 3.0e5, rng)
        assert draws.shape == (40, 50)
        assert draws.std() == pytest.approx(3.0e5, rel=0.06)


def test_secure_draws_never_use_the_generator() -> None:
    rng = secure_generator()
    state = rng.bit_generator.state
    a, b = discrete_gaussian(50, 10.0, rng), discrete_gaussian(50, 10.0, rng)
    assert rng.bit_generator.state == state
    assert not np.array_equal(a, b)
    assert is_secure(rng) and is_secure(None) and is_secure(np.random.default_rng())
    assert not is_secure(np.random.default_rng(0)) and is_secure(np.random.default_rng(2**64))
    assert isinstance(rng, np.random.Generator) and isinstance(rng, SecureGenerator)


def test_seeded_draws_repeat_and_advance_the_generator() -> None:
    a = discrete_gaussian(30, 5.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a, discrete_gaussian(30, 5.0, np.random.default_rng(7)))
    rng = np.random.default_rng(7)
    first, second = discrete_laplace(30, 5.0, rng), discrete_laplace(30, 5.0, rng)
    assert not np.array_equal(first, second)


def test_empty_shapes_and_bad_scales() -> None:
    assert discrete_gaussian((0, 3), 1.0, np.random.default_rng(0)).shape == (0, 3)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            discrete_gaussian(3, bad, np.random.default_rng(0))


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_noisy_max_is_the_exponential_mechanism(source: str) -> None:
    """P(i) ~ exp(u_i / scale): chi-square against the exponential mechanism's probabilities."""
    scores, scale = np.array([0.0, 1.0, 2.5, -1.0, 2.0]), 1.5
    rng = SOURCES[source]()
    draws = np.array([noisy_max_index(scores, scale, rng) for _ in range(6_000)])
    p = np.exp(scores / scale) / np.exp(scores / scale).sum()
    observed = np.bincount(draws, minlength=scores.size)
    assert stats.chisquare(observed, p * draws.size).pvalue > P_FLOOR


def test_noisy_max_sources_and_bad_inputs() -> None:
    rng = secure_generator()
    state = rng.bit_generator.state
    noisy_max_index(np.arange(4.0), 1.0, rng)
    assert rng.bit_generator.state == state  # the secure draw never touches the generator
    seeded = [noisy_max_index(np.arange(9.0), 2.0, np.random.default_rng(5)) for _ in range(3)]
    assert len(set(seeded)) == 1  # an experiment's draw repeats
    for scores, scale in ((np.array([]), 1.0), (np.array([1.0, math.nan]), 1.0), (np.arange(3.0), 0.0)):
        with pytest.raises(ValueError):
            noisy_max_index(scores, scale, np.random.default_rng(0))


def test_a_secure_draw_loads_opendp_without_its_prelude() -> None:
    """The secure samplers import OpenDP's own modules, not ``opendp.prelude``, whose extras (scikit-learn,
    polars) cost seconds of every run's start."""
    import subprocess
    import sys

    code = ("import sys; from dpgm.privacy.discrete import discrete_gaussian, secure_generator; "
            "discrete_gaussian(3, 2.0, secure_generator()); "
            "print(sorted(m for m in sys.modules if m in ('opendp.prelude', 'sklearn') or m.startswith('opendp.extras')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
