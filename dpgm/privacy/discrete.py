"""Exact integer noise for released statistics: the discrete Gaussian and the discrete Laplace;
and the exponential mechanism's exact draw (``noisy_max_index``).

Canonne, Kamath and Steinke (NeurIPS 2020), "The Discrete Gaussian for Differential Privacy":
Algorithm 1 (Bernoulli(exp(-gamma))), Algorithm 2 (discrete Laplace) and Algorithm 3 (discrete
Gaussian) use only integer comparisons of uniform random integers, so no floating-point value
decides a draw (the textbook float samplers leak through their low-order bits: Mironov, CCS
2012; Jin et al., S&P 2022). ``scale`` is the distribution's parameter: N_Z(0, s^2) has
P(x) ~ exp(-x^2 / (2 s^2)), Lap_Z(s) has P(x) ~ exp(-|x| / s), x in Z.

Two sources of randomness, chosen by the caller's generator (``is_secure``):
  * OpenDP's implementation of the same algorithms, fed by the operating system's CSPRNG, for a
    generator seeded from OS entropy (a private run: ``np.random.default_rng()``, or 128 bits
    from ``secrets`` as the run does) or a ``SecureGenerator``; the generator is never used.
  * for a generator built from an explicit integer seed below 2^64 (an experiment or a test),
    this module's implementation, fed by ``random.Random`` seeded with 256 bits drawn from the
    generator, so a seeded run repeats exactly (a seeded run is not private anyway: whoever
    holds the seed replays it). A private run's 128-bit OS seed is below 2^64 with chance 2^-64.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np

#: Bits drawn from an experiment's generator to seed the reproducible sampler.
_SEED_BITS = 256
#: A generator whose seed is an integer below this is an experiment's (reproducible noise).
EXPERIMENT_SEED_LIMIT = 2**64


class SecureGenerator(np.random.Generator):
    """A numpy generator seeded from the OS CSPRNG that also marks its run as private: released
    noise is then drawn by OpenDP from the OS CSPRNG, never from this generator's PCG64 stream."""


def secure_generator(entropy: int | None = None) -> SecureGenerator:
    """A ``SecureGenerator`` (PCG64 seeded with ``entropy``, default 128 bits from ``secrets``, for
    non-noise draws)."""
    return SecureGenerator(np.random.PCG64(secrets.randbits(128) if entropy is None else entropy))


def is_secure(rng: np.random.Generator | None) -> bool:
    """True unless ``rng`` was built from an explicit integer seed below 2^64 (an experiment):
    noise for its run then comes from the OS CSPRNG. None and ``SecureGenerator`` are secure."""
    if rng is None or isinstance(rng, SecureGenerator):
        return True
    seed_seq = getattr(getattr(rng, "bit_generator", None), "seed_seq", None)
    entropy = getattr(seed_seq, "entropy", None)
    return not (isinstance(entropy, (int, np.integer)) and 0 <= entropy < EXPERIMENT_SEED_LIMIT)


def discrete_gaussian(
    shape: int | Sequence[int], scale: float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """int64 draws of N_Z(0, scale^2) (CKS 2020, Algorithm 3), from the source ``rng`` selects."""
    return _draw("gaussian", shape, scale, rng)


def discrete_laplace(
    shape: int | Sequence[int], scale: float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """int64 draws of Lap_Z(scale), P(x) ~ exp(-|x| / scale) (CKS 2020, Algorithm 2)."""
    return _draw("laplace", shape, scale, rng)


def noisy_max_index(scores: np.ndarray, scale: float, rng: np.random.Generator | None = None) -> int:
    """argmax_i (scores_i + Gumbel(scale)): index i with probability ~ exp(scores_i / scale), the
    exponential mechanism drawn as report-noisy-max (Gumbel-max). A private run: OpenDP's exact
    sampler over the OS CSPRNG; an experiment's seeded generator: the inverse CDF at one uniform
    from it (reproducible; a seeded run is not private anyway)."""
    values = np.asarray(scores, dtype=np.float64)
    scale = float(scale)
    if not (values.size and np.isfinite(values).all() and np.isfinite(scale) and scale > 0):
        raise ValueError("noisy max needs finite scores and a finite scale > 0")
    if is_secure(rng):
        return int(_opendp_noisy_max(scale)(values.tolist()))
    weights = np.exp((values - values.max()) / scale)
    cdf = np.cumsum(weights)
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), values.size - 1))


@lru_cache(maxsize=64)
def _opendp_noisy_max(scale: float) -> Any:
    """OpenDP's exact report-noisy-max with Gumbel noise (its zCDP measure: the exponential mechanism)."""
    dp = opendp()
    space = dp.domains.vector_domain(dp.domains.atom_domain(T=float, nan=False)), dp.metrics.linf_distance(T=float)
    return dp.measurements.make_noisy_max(*space, dp.measures.zero_concentrated_divergence(), scale=scale)


def _draw(
    kind: str, shape: int | Sequence[int], scale: float, rng: np.random.Generator | None
) -> np.ndarray:
    size = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    scale = float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"the noise scale must be finite and > 0, got {scale!r}")
    n = int(np.prod(size, dtype=np.int64))
    if n == 0:
        return np.zeros(size, dtype=np.int64)
    if is_secure(rng):
        draws = _opendp_measurement(kind, scale)([0] * n)
    else:
        source = random.Random(int.from_bytes(rng.bytes(_SEED_BITS // 8), "little"))
        sample = _gaussian_one if kind == "gaussian" else _laplace_one
        exact = Fraction(scale)  # a float is an exact rational
        draws = [sample(exact, source) for _ in range(n)]
    return np.asarray(draws, dtype=np.int64).reshape(size)


@lru_cache(maxsize=1)
def opendp() -> SimpleNamespace:
    """OpenDP's domains, metrics, measures and measurements, its contrib features on. Not ``opendp.prelude``:
    its extras import scikit-learn and polars, seconds of every process's start."""
    from opendp import domains, measurements, measures, metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    return SimpleNamespace(domains=domains, metrics=metrics, measures=measures, measurements=measurements)


@lru_cache(maxsize=256)
def _opendp_measurement(kind: str, scale: float) -> Any:
    """OpenDP's exact sampler on int64 vectors (its noise alone: the input is a zero vector)."""
    dp = opendp()
    domain = dp.domains.vector_domain(dp.domains.atom_domain(T="i64"))
    if kind == "gaussian":
        return dp.measurements.make_gaussian(domain, dp.metrics.l2_distance(T="i64"), scale=scale)
    return dp.measurements.make_laplace(domain, dp.metrics.l1_distance(T="i64"), scale=scale)


# ----------------------------------------------- CKS 2020 Algorithms 1-3, exact rationals
def _bernoulli_exp(num: int, den: int, source: random.Random) -> bool:
    """Bernoulli(exp(-num / den)) for integers num >= 0, den >= 1 (CKS 2020, Algorithm 1):
    exp(-g) = exp(-1)^floor(g) exp(-frac(g)); for g <= 1, K = the first k with Bernoulli(g / k)
    false, and the draw is K odd."""
    while num > den:
        if not _bernoulli_exp(1, 1, source):
            return False
        num -= den
    k = 1
    while source.randrange(den * k) < num:
        k += 1
    return k % 2 == 1


def _laplace_int(t: int, s: int, source: random.Random) -> int:
    """One draw of Lap_Z(t / s) for integers t, s >= 1 (CKS 2020, Algorithm 2)."""
    while True:
        u = source.randrange(t)
        if not _bernoulli_exp(u, t, source):
            continue
        v = 0
        while _bernoulli_exp(1, 1, source):
            v += 1
        y = (u + t * v) // s
        negative = source.randrange(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _laplace_one(scale: Fraction, source: random.Random) -> int:
    """One draw of Lap_Z(scale), scale = t / s in lowest terms."""
    return _laplace_int(scale.numerator, scale.denominator, source)


def _gaussian_one(scale: Fraction, source: random.Random) -> int:
    """One draw of N_Z(0, scale^2) (CKS 2020, Algorithm 3): proposals y ~ Lap_Z(t), t =
    floor(scale) + 1, kept with probability exp(-(|y| - scale^2 / t)^2 / (2 scale^2)), which for
    scale = p / q is exp(-(|y| q^2 t - p^2)^2 / (2 p^2 q^2 t^2)) (integers only)."""
    p, q = scale.numerator, scale.denominator
    t = p // q + 1
    while True:
        y = _laplace_int(t, 1, source)
        if _bernoulli_exp((abs(y) * q * q * t - p * p) ** 2, 2 * (p * q * t) ** 2, source):
            return y
