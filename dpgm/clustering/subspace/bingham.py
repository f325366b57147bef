"""Sampling the matrix Bingham density exp(tr(U^T A U)) on the Stiefel manifold (paper Eq. 12, App. D).

Column by column as Hoff (2009): given the other columns, column j is N z with N an orthonormal
basis of their orthogonal complement and z drawn from the vector Bingham exp(z^T N^T A N z). Each
vector draw is exact: rejection from an angular central Gaussian envelope (Kent, Ganeiber and
Mardia 2018), whose acceptance rate stays bounded as the concentration grows. In the Gibbs sampler A
is a private second moment: these proposals are the chain's randomness, which gibbs.py charges as a
whole through ``mechanisms.asymptotic_exponential_chain``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import brentq

from dpgm.clustering.subspace.distance import random_bases

#: Give up on a vector draw after this many proposals (never reached in practice: acceptance >= ~20%).
MAX_PROPOSALS = 100_000


def _envelope_b(lams: np.ndarray) -> float:
    """The b in (0, p] with sum_i 1 / (b + 2 lambda_i) = 1 (Kent et al. 2018, Eq. 3.5)."""
    p = lams.size
    if np.all(lams <= 1e-12):
        return float(p)
    return float(brentq(lambda b: np.sum(1.0 / (b + 2.0 * lams)) - 1.0, 1e-12, float(p), xtol=1e-12))


def sample_vector_bingham(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One exact draw x on the unit sphere of R^p with density proportional to exp(x^T A x)."""
    a = 0.5 * (np.asarray(a, dtype=np.float64) + np.asarray(a, dtype=np.float64).T)
    evals, evecs = np.linalg.eigh(a)
    lams = evals[-1] - evals  # exp(x^T A x) ~ exp(-x^T Lambda x), Lambda >= 0, min 0
    p = lams.size
    b = _envelope_b(lams)
    omega = 1.0 + 2.0 * lams / b
    log_m = -(p - b) / 2.0 + (p / 2.0) * np.log(p / b)  # log bound of f*/g*
    for _ in range(MAX_PROPOSALS):
        y = rng.normal(size=p) / np.sqrt(omega)
        x = y / np.linalg.norm(y)
        log_ratio = -np.sum(lams * x * x) + (p / 2.0) * np.log(np.sum(omega * x * x)) - log_m
        if np.log(rng.random()) < log_ratio:
            return evecs @ x
    raise RuntimeError("vector Bingham sampler: no proposal accepted")


def gibbs_sweep(a: np.ndarray, basis: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Gibbs sweep over the q columns of ``basis`` (d, q) targeting exp(tr(U^T A U)) (Hoff 2009)."""
    u = np.array(basis, dtype=np.float64, copy=True)
    d, q = u.shape
    for j in rng.permutation(q):
        others = np.delete(u, j, axis=1)
        comp = null_space(others.T) if q > 1 else np.eye(d)
        z = sample_vector_bingham(comp.T @ a @ comp, rng)
        u[:, j] = comp @ z
    return u


def sample_matrix_bingham(
    a: np.ndarray, q: int, rng: np.random.Generator, *, sweeps: int = 50, start: np.ndarray | None = None
) -> np.ndarray:
    """A (d, q) frame after ``sweeps`` Gibbs sweeps from ``start`` (default: a uniformly random frame)."""
    d = a.shape[0]
    u = random_bases(1, d, q, rng)[0] if start is None else np.asarray(start, dtype=np.float64)
    for _ in range(sweeps):
        u = gibbs_sweep(a, u, rng)
    return u
