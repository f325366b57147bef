"""The one-run audit bound (Steinke, Nasr and Jagielski 2023) on hand-checkable cases and an
independent evaluation of their Theorem 5.2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from dpgm.privacy.one_run_audit import (
    audit_scores,
    epsilon_lower_bound,
    guess_accuracy,
    guess_and_count,
    p_value,
)


def _theorem_5_2_by_tails(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """f(v) + 2 m delta max_i (f(v - i) - f(v)) / i, f(k) = P[Binomial(r, q) >= k], term by term."""
    q = 1.0 / (1.0 + math.exp(-eps))

    def f(k: int) -> float:
        return float(stats.binom.sf(k - 1, r, q))

    slack = max(((f(v - i) - f(v)) / i for i in range(1, v + 1)), default=0.0)
    return min(1.0, f(v) + 2 * m * delta * slack)


def _lower_bound_by_brentq(m: int, r: int, v: int, delta: float, significance: float) -> float:
    def excess(eps: float) -> float:
        return significance - _theorem_5_2_by_tails(m, r, v, eps, delta)

    if excess(0.0) <= 0:
        return 0.0
    return optimize.brentq(excess, 0.0, 50.0, xtol=1e-12)


@pytest.mark.parametrize("r", [1, 10, 50, 100, 1000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_all_guesses_right_pure_dp_is_the_closed_form_binomial_tail(
    r: int, confidence: float
) -> None:
    """delta = 0, v = r: P[W >= r] = q^r, so the bound solves q^r = 1 - confidence:
    eps = logit((1-c)^(1/r)), or 0 when that is negative (one guess can never reject eps = 0)."""
    q = (1 - confidence) ** (1 / r)
    closed_form = max(0.0, math.log(q / (1 - q)))
    assert epsilon_lower_bound(2 * r, r, r, 0.0, confidence) == pytest.approx(closed_form, abs=1e-9)


def test_a_hand_computed_value() -> None:
    """100 of 100 right at 95%: logit(0.05^(1/100)) = 3.4929...; 1000 of 1000: 5.8090..."""
    assert epsilon_lower_bound(1000, 100, 100) == pytest.approx(3.49296543, abs=1e-6)
    assert epsilon_lower_bound(1000, 1000, 1000) == pytest.approx(5.80906834, abs=1e-6)


@pytest.mark.parametrize(
    ("m", "r", "v"), [(100, 20, 17), (1000, 100, 80), (1000, 200, 200), (5000, 500, 300)]
)
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 6.0])
@pytest.mark.parametrize("delta", [0.0, 1e-5, 1e-3])
def test_p_value_matches_theorem_5_2_term_by_term(
    m: int, r: int, v: int, eps: float, delta: float
) -> None:
    assert p_value(m, r, v, eps, delta) == pytest.approx(
        _theorem_5_2_by_tails(m, r, v, eps, delta), rel=1e-9, abs=1e-14
    )


@pytest.mark.parametrize(
    ("m", "r", "v"),
    [(100, 20, 17), (1000, 100, 80), (1000, 200, 200), (5000, 500, 300), (1000, 40, 40)],
)
@pytest.mark.parametrize("delta", [0.0, 1e-5, 1e-4])
def test_lower_bound_matches_an_independent_root_find(m: int, r: int, v: int, delta: float) -> None:
    ours = epsilon_lower_bound(m, r, v, delta, 0.95)
    assert ours == pytest.approx(_lower_bound_by_brentq(m, r, v, delta, 0.05), abs=1e-7)


def test_pure_dp_p_value_is_the_scipy_binomial_tail() -> None:
    q = special.expit(1.3)
    assert p_value(500, 60, 45, 1.3) == pytest.approx(1 - stats.binom.cdf(44, 60, q), rel=1e-12)


def test_bound_is_the_rejection_threshold() -> None:
    m, r, v, delta = 1000, 100, 85, 1e-5
    eps = epsilon_lower_bound(m, r, v, delta)
    assert p_value(m, r, v, eps - 1e-6, delta) < 0.05 <= p_value(m, r, v, eps + 1e-6, delta)


def test_monotonic_in_correct_guesses() -> None:
    bounds = [epsilon_lower_bound(1000, 100, v, 1e-5) for v in range(101)]
    assert all(b2 >= b1 for b1, b2 in itertools.pairwise(bounds))
    assert bounds[-1] > 3.0


def test_monotonic_in_delta_and_confidence() -> None:
    by_delta = [epsilon_lower_bound(1000, 100, 90, d) for d in (0.0, 1e-6, 1e-5, 1e-4, 1e-3)]
    assert all(b2 <= b1 for b1, b2 in itertools.pairwise(by_delta))
    by_confidence = [epsilon_lower_bound(1000, 100, 90, 1e-5, c) for c in (0.5, 0.9, 0.95, 0.99)]
    assert all(b2 <= b1 for b1, b2 in itertools.pairwise(by_confidence))


@pytest.mark.parametrize(
    ("r", "v"), [(100, 50), (100, 40), (100, 55), (1000, 510), (10, 0), (0, 0)]
)
def test_zero_at_chance(r: int, v: int) -> None:
    assert epsilon_lower_bound(1000, r, v, 1e-5) == 0.0


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("r", [20, 200])
def test_sound_for_randomised_response(eps: float, r: int) -> None:
    """For eps-DP randomised response W ~ Binomial(r, e^eps/(1+e^eps)) exactly; the bound may exceed
    eps with probability at most 1 - confidence (summed exactly over the outcomes)."""
    q = guess_accuracy(eps)
    outcomes = np.arange(r + 1)
    refuted = np.array([epsilon_lower_bound(2 * r, r, int(v), 0.0) > eps for v in outcomes])
    assert float(stats.binom.pmf(outcomes[refuted], r, q).sum()) <= 0.05 + 1e-12


def test_guessing_counts_top_in_and_bottom_out() -> None:
    scores = np.array([5.0, 1.0, 4.0, 0.0, 3.0, 2.0])
    included = np.array([True, False, False, False, True, True])
    # top 2: indices 0 (in), 2 (out) -> 1 right; bottom 2: indices 3 (out), 1 (out) -> 2 right
    assert guess_and_count(scores, included, 2, 2) == 3
    assert guess_and_count(scores, included, 0, 1) == 1
    assert guess_and_count(scores, included, 6, 0) == 3


def test_audit_scores_perfect_separation() -> None:
    rng = np.random.default_rng(0)
    included = rng.random(400) < 0.5
    outcome = audit_scores(included.astype(float) + 0.01 * rng.random(400), included, 40, 40, 0.0)
    assert outcome.correct == 80 and outcome.guesses == 80
    assert outcome.epsilon_lower_bound == pytest.approx(epsilon_lower_bound(400, 80, 80))
    assert outcome.to_dict()["guesses"] == 80


@pytest.mark.parametrize(("m", "r", "v"), [(10, 11, 0), (10, 5, 6), (10, -1, 0)])
def test_bad_counts_are_rejected(m: int, r: int, v: int) -> None:
    with pytest.raises(ValueError):
        epsilon_lower_bound(m, r, v)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        epsilon_lower_bound(10, 5, 5, delta=-0.1)
    with pytest.raises(ValueError):
        epsilon_lower_bound(10, 5, 5, confidence=1.0)
    with pytest.raises(ValueError):
        guess_and_count(np.zeros(3), np.zeros(3, dtype=bool), 2, 2)
