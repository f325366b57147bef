"""Public, data-independent frequencies Omega of the sketch (SPARS 2019, eq. 2)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dpgm.errors import ConfigError

FrequencyLaw = Literal["adapted_radius", "gaussian"]


def adapted_radius(count: int, rng: np.random.Generator, grid: int = 20001) -> np.ndarray:
    """Radii R with density ~ sqrt(R^2 + R^4/4) exp(-R^2/2) (Keriven et al. 2016), inverse CDF."""
    r = np.linspace(0.0, 12.0, grid)
    pdf = np.sqrt(r**2 + r**4 / 4.0) * np.exp(-(r**2) / 2.0)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (pdf[1:] + pdf[:-1]) * np.diff(r))])
    return np.interp(rng.random(count), cdf / cdf[-1], r)


def draw_frequencies(
    dim: int,
    m: int,
    *,
    sigma2: float,
    rng: np.random.Generator,
    law: FrequencyLaw = "adapted_radius",
) -> np.ndarray:
    """Omega (dim x m), data-independent: N(0, I / sigma2), or R / sigma on random directions."""
    if not (math.isfinite(sigma2) and sigma2 > 0):
        raise ConfigError(f"partition.options.sigma2: must be > 0, got {sigma2!r}")
    g = rng.normal(size=(dim, m))
    if law == "gaussian":
        return g / math.sqrt(sigma2)
    if law != "adapted_radius":
        raise ConfigError(f"partition.options.frequencies: unknown law {law!r}")
    return g / np.linalg.norm(g, axis=0) * adapted_radius(m, rng) / math.sqrt(sigma2)
