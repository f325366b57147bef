"""Epsilon lower bounds from one training run (Steinke, Nasr and Jagielski, NeurIPS 2023).

m canaries are each included independently with probability 1/2; after training, an auditor
guesses "in" or "out" for r of them (abstaining on the rest) and gets v right. If training is
(epsilon, delta)-DP under add/remove-one-record, then (their Theorem 5.2 / Corollary 5.4,
computed as in their Appendix D code)

    P[W >= v] <= f(v) + 2 m delta max_{i=1..v} (f(v - i) - f(v)) / i,
    f(v) = P[Binomial(r, e^eps / (1 + e^eps)) >= v],

and with delta = 0 the bound is f(v) alone (Theorem 3.1). An observed v whose bound is below
1 - confidence rejects "(epsilon, delta)-DP"; the lower bound is the largest such epsilon.

The bound can never exceed its "cap", the lower bound when all r guesses are right: about
log(r / 3) at 95% confidence, so 100 guesses cannot refute any claim above 3.49. ``audit_size``
picks the guesses (and canaries) from the claim, so that the cap clears it by a margin.
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
#: ``audit_size`` gives up beyond this many guesses.
_MAX_GUESSES = 2**30


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


def epsilon_cap(m: int, r: int, delta: float = 0.0, confidence: float = 0.95) -> float:
    """The largest lower bound r guesses (m canaries) can give: all r right. No claim above it
    can be refuted, however much the run leaks."""
    return epsilon_lower_bound(m, r, r, delta, confidence)


def canaries_for_guesses(r: int, shortfall: float = 1e-4) -> int:
    """Fewest canaries m whose included and excluded counts (each Binomial(m, 1/2)) both reach
    ceil(r / 2), except with probability <= shortfall: r/2 "in" and r/2 "out" guesses can then
    all be right. Fewer forces wrong guesses however well the scores separate."""
    if not 0 < shortfall < 1:
        raise ValueError(f"shortfall must be in (0, 1), got {shortfall!r}")
    k = math.ceil(r / 2)
    if k <= 0:
        return max(r, 0)

    def short(m: int) -> bool:  # P[included < k] + P[excluded < k] > shortfall
        return 2.0 * float(stats.binom.cdf(k - 1, m, 0.5)) > shortfall

    lo, hi = 2 * k - 1, 2 * k  # short(lo) holds whenever k >= 1
    while short(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if short(mid) else (lo, mid)
    return hi


@dataclass(frozen=True)
class AuditSize:
    """Guesses (half "in", half "out"), canaries and the cap they give (``epsilon_cap``)."""

    guesses: int
    canaries: int
    cap: float


def _size(r: int, delta: float, confidence: float) -> AuditSize:
    m = canaries_for_guesses(r)
    return AuditSize(guesses=r, canaries=m, cap=epsilon_cap(m, r, delta, confidence))


def audit_size(
    claim: float,
    delta: float,
    confidence: float = 0.95,
    margin: float = 1.0,
    min_guesses: int = 2,
) -> AuditSize:
    """Fewest even guesses r (>= min_guesses) whose cap is >= claim + margin, and their canaries.

    Without it an audit cannot refute the claim even when the run has no noise at all. The cap
    rises like log r until the 2 m delta term of Thm 5.2 takes over: a claim beyond the peak
    raises ValueError (no audit of this design can refute it at this delta).
    """
    if not (math.isfinite(claim) and claim >= 0 and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"need a finite claim and margin >= 0, got {claim!r}, {margin!r}")
    target = claim + margin
    lo = max(2, min_guesses + min_guesses % 2)  # even
    best = _size(lo, delta, confidence)
    if best.cap >= target:
        return best
    hi = lo
    while True:  # double until the cap clears the target, or stops rising
        hi *= 2
        size = _size(hi, delta, confidence)
        if size.cap >= target:
            best = size
            break
        if size.cap < best.cap or hi > _MAX_GUESSES:  # past the peak (below it: 0 or rising)
            raise ValueError(
                f"no number of guesses reaches epsilon {target:.4g} at delta={delta:g}: the cap "
                f"peaks near {best.cap:.4g} ({best.guesses} guesses)"
            )
        lo, best = hi, size
    while hi - lo > 2:  # invariant: cap(lo) < target <= cap(hi); both even
        mid = (lo + hi) // 4 * 2
        size = _size(mid, delta, confidence)
        if size.cap >= target:
            hi, best = mid, size
        else:
            lo = mid
    return best


@dataclass(frozen=True)
class AuditOutcome:
    """The guesses' tally, the bound they give and its cap (JSON-ready via ``to_dict``)."""

    m: int
    guesses_in: int
    guesses_out: int
    correct: int
    delta: float
    confidence: float
    epsilon_lower_bound: float
    epsilon_cap: float

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
    r = k_in + k_out
    bound = epsilon_lower_bound(m, r, correct, delta, confidence)
    return AuditOutcome(
        m=m,
        guesses_in=k_in,
        guesses_out=k_out,
        correct=correct,
        delta=float(delta),
        confidence=float(confidence),
        epsilon_lower_bound=bound,
        epsilon_cap=epsilon_cap(m, r, delta, confidence),
    )


def distinguishing_lower_bound(false_pos: int, n_null: int, false_neg: int, n_alt: int, delta: float,
                               confidence: float = 0.95) -> float:
    """Epsilon lower bound from a threshold test between two neighbours run many times (Jagielski,
    Ullman and Oprea 2020): with FPR and FNR bounded above by Clopper-Pearson at ``confidence`` (each
    side at half the error), an (epsilon, delta)-DP mechanism has epsilon >= log((1 - delta - FNR) /
    FPR) and >= log((1 - delta - FPR) / FNR). 0 when neither is positive. The threshold must be
    chosen on other runs than the counted ones."""
    if not (0 <= false_pos <= n_null and 0 <= false_neg <= n_alt and n_null > 0 and n_alt > 0):
        raise ValueError(f"need 0 <= errors <= runs, got {false_pos}/{n_null}, {false_neg}/{n_alt}")
    _check_delta(delta)
    alpha = (1.0 - confidence) / 2.0
    fpr, fnr = (_clopper_pearson_upper(k, n, alpha) for k, n in ((false_pos, n_null), (false_neg, n_alt)))
    bounds = [math.log(num / den) for num, den in ((1 - delta - fnr, fpr), (1 - delta - fpr, fnr))
              if num > 0 and den > 0]
    return max([0.0, *bounds])


def _clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """Upper end of the one-sided Clopper-Pearson interval for k successes in n at level 1 - alpha."""
    return 1.0 if k >= n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))


def best_threshold(null: np.ndarray, alt: np.ndarray, delta: float, confidence: float = 0.95) -> float:
    """The threshold (score > t: "the canary is in") whose ``distinguishing_lower_bound`` is largest on these
    runs: chosen on runs that are then not counted."""
    cuts = np.unique(np.concatenate([null, alt]))
    null_sorted, alt_sorted = np.sort(null), np.sort(alt)
    false_pos = len(null) - np.searchsorted(null_sorted, cuts, side="right")
    false_neg = np.searchsorted(alt_sorted, cuts, side="right")
    values = [distinguishing_lower_bound(int(a), len(null), int(b), len(alt), delta, confidence)
              for a, b in zip(false_pos, false_neg)]
    return float(cuts[int(np.argmax(values))])
