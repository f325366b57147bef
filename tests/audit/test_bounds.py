"""The one-run audit bound (Steinke, Nasr and Jagielski 2023) on hand-checkable cases and an
independent evaluation of their Theorem 5.2; the cap and the guesses sized to a claim."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from dpgm.audit.bounds import (
    audit_scores,
    audit_size,
    canaries_for_guesses,
    epsilon_cap,
    epsilon_lower_bound,
    guess_accuracy,
    guess_and_count,
    p_value,
)


def _theorem_5_2_by_tails(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """f(v) + 2 m delta max_i (f(v - i) - f(v)) / i, f(k) = P[Binomial(r, q) >= k], term by term."""
    q = 1.0 / (1.0 + math.exp(-eps))
    f = stats.binom.sf(np.arange(-1, v), r, q)  # f[k] = P[Binomial(r, q) >= k], k = 0 .. v
    slack = max(((f[v - i] - f[v]) / i for i in range(1, v + 1)), default=0.0)
    return min(1.0, float(f[v]) + 2 * m * delta * slack)


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
    assert outcome.epsilon_cap == outcome.epsilon_lower_bound  # every guess right: the cap
    assert outcome.to_dict()["guesses"] == 80


def test_the_cap_is_the_bound_of_all_guesses_right_and_caps_every_outcome() -> None:
    m, r, delta = 1000, 100, 1e-5
    cap = epsilon_cap(m, r, delta)
    assert cap == epsilon_lower_bound(m, r, r, delta)
    assert all(epsilon_lower_bound(m, r, v, delta) <= cap for v in range(r + 1))
    # 100 guesses cannot refute a claim of 3.5, let alone 5.71: the reason the cap is sized
    assert 3.4 < cap < 3.5


@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-5])
def test_the_cap_grows_with_the_guesses(delta: float) -> None:
    guesses = [2, 10, 50, 100, 200, 500, 1000, 2000, 4000]
    caps = [epsilon_cap(canaries_for_guesses(r), r, delta) for r in guesses]
    assert all(c2 > c1 for c1, c2 in itertools.pairwise(caps))
    assert caps[-1] > 7.0


def test_the_cap_stops_growing_when_m_delta_is_large() -> None:
    """The 2 m delta term of Thm 5.2: at delta = 1e-4 more canaries eventually lower the cap."""
    caps = [epsilon_cap(canaries_for_guesses(r), r, 1e-4) for r in (3000, 20000)]
    assert caps[1] < caps[0] < 6.0


@pytest.mark.parametrize("claim", [0.1, 0.5, 1.0, 2.0, 3.36, 5.71, 6.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-5])
def test_audit_size_gives_the_fewest_guesses_whose_cap_clears_the_claim(
    claim: float, delta: float
) -> None:
    size = audit_size(claim, delta, 0.95, margin=1.0, min_guesses=2)
    assert size.guesses % 2 == 0 and size.canaries >= size.guesses
    assert size.cap == epsilon_cap(size.canaries, size.guesses, delta, 0.95)
    assert size.cap >= claim + 1.0 > claim
    fewer = size.guesses - 2
    if fewer >= 2:
        assert epsilon_cap(canaries_for_guesses(fewer), fewer, delta, 0.95) < claim + 1.0


def test_audit_size_follows_the_claim_and_respects_the_floor() -> None:
    sizes = [audit_size(claim, 1e-5, min_guesses=200) for claim in (0.5, 1.0, 3.36, 5.71, 6.0)]
    assert sizes[0].guesses == sizes[1].guesses == 200  # the floor: cap 4.19 already clears 2
    assert [s.guesses for s in sizes[1:]] == sorted({s.guesses for s in sizes[1:]})
    assert 2000 < sizes[3].guesses < 3000  # 5.71 + 1 needs thousands of guesses, not 100
    assert audit_size(5.0, 1e-5, confidence=0.99).guesses > audit_size(5.0, 1e-5).guesses


def test_audit_size_refuses_a_claim_no_audit_can_refute() -> None:
    with pytest.raises(ValueError, match="peaks"):
        audit_size(7.0, 1e-4)
    with pytest.raises(ValueError):
        audit_size(-1.0, 1e-5)


@pytest.mark.parametrize("r", [2, 20, 200, 2000])
def test_canaries_for_guesses_is_the_fewest_with_both_halves_big_enough(r: int) -> None:
    m = canaries_for_guesses(r, shortfall=1e-4)

    def short(n: int) -> float:  # P[included < r/2] + P[excluded < r/2]
        return 2 * float(stats.binom.cdf(r // 2 - 1, n, 0.5))

    assert short(m) <= 1e-4 < short(m - 1)


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
