"""Epsilon lower bounds from one training run (Steinke, Nasr and Jagielski, NeurIPS 2023).

m canaries are each included independently with probability 1/2; after training, an auditor
guesses "in" or "out" for r of them (abstaining on the rest) and gets v right. If training is
(epsilon, delta)-DP under add/remove-one-record, then (their Theorem 5.2 / Corollary 5.4,
computed as in their Appendix D code)

    P[W >= v] <= f(v) + 2 m delta max_{i=1..v} (f(v - i) - f(v)) / i,
    f(v) = P[Binomial(r, e^eps / (1 + e^eps)) >= v],

and with delta = 0 the bound is f(v) alone (Theorem 3.1). An observed v whose bound is below
1 - confidence rejects "(epsilon, delta)-DP"; the lower bound is the largest such epsilon.
Pure numpy/scipy: this module knows nothing about training.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import special, stats

#: Bisection steps on epsilon (the bracket starts at width <= 2^k; 60 halvings reach ~1e-15).
_BISECTION_STEPS = 60
_EPS_CAP = 1024.0


def _check_counts(m: int, r: int, v: int) -> None:
    if not (
        isinstance(m, (int, np.integer))
        and isinstance(r, (int, np.integer))
        and isinstance(v, (int, np.integer))
    ):
        raise TypeError(f"m, r and v must be integers, got {m!r}, {r!r}, {v!r}")
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")


def _check_delta(delta: float) -> None:
    if not (math.isfinite(delta) and 0 <= delta <= 1):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")


def guess_accuracy(epsilon: float) -> float:
    """e^eps / (1 + e^eps): the best per-guess accuracy under eps-DP (randomised response)."""
    return float(special.expit(epsilon))


def p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """Upper bound on P[>= v of r guesses correct] for an (epsilon, delta)-DP run with m canaries.

    Theorem 5.2 of Steinke, Nasr and Jagielski (2023) (Theorem 3.1 when delta = 0).
    """
    _check_counts(m, r, v)
    _check_delta(delta)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    q = guess_accuracy(epsilon)
    tail = float(stats.binom.sf(v - 1, r, q))  # f(v) = P[Binomial(r, q) >= v]
    if delta == 0 or v == 0:
        return min(tail, 1.0)
    i = np.arange(1, v + 1)
    # f(v - i) - f(v) = P[v - i <= Binomial(r, q) < v], the pmf summed from v - 1 down to v - i.
    window = np.cumsum(stats.binom.pmf(v - i, r, q))
    return min(tail + 2.0 * m * delta * float(np.max(window / i)), 1.0)


def epsilon_lower_bound(
    m: int, r: int, v: int, delta: float = 0.0, confidence: float = 0.95
) -> float:
    """Largest epsilon that v correct out of r guesses (m canaries) rejects at ``confidence``.

    Every (epsilon', delta)-DP claim with epsilon' below the returned value is refuted with
    probability of error at most 1 - confidence (Steinke, Nasr and Jagielski 2023, Thm 5.2;
    the guesses must be fixed before looking at which canaries were included). 0 when even
    epsilon = 0 cannot be rejected. Always finite: the bound tends to 1 as epsilon grows.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    significance = 1.0 - confidence
    if p_value(m, r, v, 0.0, delta) >= significance:
        return 0.0
    lo, hi = 0.0, 1.0  # invariant: p_value(lo) < significance <= p_value(hi)
    while p_value(m, r, v, hi, delta) < significance:
        lo, hi = hi, 2.0 * hi
        if hi > _EPS_CAP:  # unreachable in floating point (expit(40) == 1.0): a safety stop
            return lo
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if p_value(m, r, v, mid, delta) < significance:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class AuditOutcome:
    """The guesses' tally and the bound they give (JSON-ready via ``to_dict``)."""

    m: int
    guesses_in: int
    guesses_out: int
    correct: int
    delta: float
    confidence: float
    epsilon_lower_bound: float

    @property
    def guesses(self) -> int:
        return self.guesses_in + self.guesses_out

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["guesses"] = self.guesses
        return out


def guess_and_count(scores: np.ndarray, included: np.ndarray, k_in: int, k_out: int) -> int:
    """Guess "in" for the k_in highest scores, "out" for the k_out lowest; return the number right.

    Ties are broken by index (a stable sort), never by the inclusion bits.
    """
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise ValueError("scores and included must be 1-d arrays of one length")
    if k_in < 0 or k_out < 0 or k_in + k_out > len(scores):
        raise ValueError(
            f"need k_in, k_out >= 0 and k_in + k_out <= m, got {k_in}, {k_out}, m={len(scores)}"
        )
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    order = np.argsort(-scores, kind="stable")  # highest first
    guessed_in = order[:k_in]
    guessed_out = order[len(order) - k_out :] if k_out else order[:0]
    return int(included[guessed_in].sum() + (~included[guessed_out]).sum())


def audit_scores(
    scores: np.ndarray,
    included: np.ndarray,
    k_in: int,
    k_out: int,
    delta: float,
    confidence: float = 0.95,
) -> AuditOutcome:
    """Guess from ``scores`` (higher = more likely included), count, and bound epsilon (Thm 5.2).

    k_in and k_out must be chosen without looking at ``included`` (else the bound is invalid).
    """
    m = len(scores)
    correct = guess_and_count(scores, included, k_in, k_out)
    bound = epsilon_lower_bound(m, k_in + k_out, correct, delta, confidence)
    return AuditOutcome(
        m=m,
        guesses_in=k_in,
        guesses_out=k_out,
        correct=correct,
        delta=float(delta),
        confidence=float(confidence),
        epsilon_lower_bound=bound,
    )
