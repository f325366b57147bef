"""Gibbs sampler for the exponential mechanism over (assignments, subspaces) (paper Sec. 4, Eq. 10-12).

Target: p(S, z | X) ~ exp(-(epsilon / (2 r^2)) sum_i d^2(x_i, S_{z_i})) for rows clipped to norm r
(each term lies in [0, r^2]; the paper's Eq. 10 is r = 1). One sweep draws every z_i from its
categorical conditional (Eq. 11, Gumbel-max) and then every S_l from its matrix Bingham conditional
exp((epsilon / (2 r^2)) tr(U^T A_l U)) with A_l the part's second-moment sum (Eq. 12; bingham.py).
Only the final subspaces are released: an exact draw would be epsilon-DP (Prop. 4.1), a finite chain
is only asymptotically so, which the ledger records as an ``AsymptoticExponentialEvent``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.clustering.base import STAGE
from dpgm.clustering.subspace.bingham import gibbs_sweep
from dpgm.clustering.subspace.distance import residuals
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import asymptotic_exponential_chain


@dataclass
class GibbsResult:
    """The released subspaces (k, d, q) and the chain's last assignment (private: not released)."""

    bases: np.ndarray
    last_assignments: np.ndarray


def inverse_temperature(epsilon: float, radius: float) -> float:
    """epsilon / (2 r^2): the exponential mechanism's scale for a utility of sensitivity r^2 (Eq. 10)."""
    return float(epsilon) / (2.0 * float(radius) ** 2)


def sample_assignments(rows: np.ndarray, bases: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """z_i ~ Categorical(exp(-scale d^2(x_i, S_l))) for every row at once (Eq. 11, Gumbel-max)."""
    logits = -scale * residuals(rows, bases)
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)


def sample_subspaces(
    rows: np.ndarray, labels: np.ndarray, bases: np.ndarray, scale: float, rng: np.random.Generator
) -> np.ndarray:
    """One Gibbs sweep of each S_l from exp(scale tr(U^T A_l U)) given the assignment (Eq. 12)."""
    out = np.array(bases, copy=True)
    for j in range(bases.shape[0]):
        part = rows[labels == j]
        out[j] = gibbs_sweep(scale * (part.T @ part), out[j], rng)
    return out


def gibbs_subspaces(
    rows: np.ndarray,
    init: np.ndarray,
    *,
    epsilon: float,
    radius: float,
    sweeps: int,
    accountant: Accountant,
    rng: np.random.Generator,
) -> GibbsResult:
    """``sweeps`` Gibbs sweeps from ``init``; ONE AsymptoticExponentialEvent(epsilon) is charged first."""
    if sweeps < 1:
        raise ValueError(f"sweeps must be >= 1, got {sweeps}")
    scale = inverse_temperature(epsilon, radius)

    def chain() -> GibbsResult:
        bases = np.asarray(init, dtype=np.float64)
        labels = np.zeros(rows.shape[0], dtype=np.int64)
        for _ in range(sweeps):
            labels = sample_assignments(rows, bases, scale, rng)
            bases = sample_subspaces(rows, labels, bases, scale, rng)
        return GibbsResult(bases=bases, last_assignments=labels)

    return asymptotic_exponential_chain(chain, epsilon=epsilon, accountant=accountant, stage=STAGE)
