"""Calibration: sigma for a target epsilon (never above it), steps for a budget, epochs -> steps."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy import rdp as R
from dpgm.privacy.accountant import rdp_curve
from dpgm.privacy.calibrate import (
    plan_epsilon,
    sigma_for_epsilon,
    steps_for_budget,
    steps_for_epochs,
)
from dpgm.privacy.events import (
    GaussianEvent,
    LaplaceEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
)


def _eps(q: float, sigma: float, steps: int, extra=None) -> float:
    event = SampledGaussianEvent(sampling_rate=q, noise_multiplier=sigma)
    return plan_epsilon(event, steps=steps, delta=1e-5, extra_rdp=extra)


@pytest.mark.parametrize(("q", "steps", "target"), [(0.0017, 11780, 1.0), (0.01, 1000, 3.0), (0.1, 10, 0.5)])
def test_sigma_round_trip_is_tight_and_never_above_target(q: float, steps: int, target: float) -> None:
    sigma = sigma_for_epsilon(sampling_rate=q, steps=steps, delta=1e-5, target_epsilon=target)
    assert _eps(q, sigma, steps) <= target
    assert _eps(q, sigma * (1 - 1e-4), steps) > target  # a slightly smaller sigma overshoots
    assert _eps(q, sigma, steps) == pytest.approx(target, rel=1e-4)


def test_extra_rdp_keeps_the_whole_pipeline_within_target() -> None:
    """train.py's use: k-means already spent 40 Gaussian releases at sigma_K = 40."""
    kmeans = 40 * rdp_curve(GaussianEvent(noise_multiplier=40.0))
    alone = sigma_for_epsilon(sampling_rate=0.0017, steps=11780, delta=1e-5, target_epsilon=1.5)
    sigma = sigma_for_epsilon(sampling_rate=0.0017, steps=11780, delta=1e-5, target_epsilon=1.5, extra_rdp=kmeans)
    assert sigma > alone
    assert _eps(0.0017, sigma, 11780, kmeans) <= 1.5
    assert _eps(0.0017, sigma * 0.999, 11780, kmeans) > 1.5


def test_event_factory_for_dpnorm_joint_release_and_for_kmeans() -> None:
    def joint(s: float) -> SampledJointGaussianEvent:
        return SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, s))

    sigma = sigma_for_epsilon(steps=11780, delta=1e-5, target_epsilon=1.5, event_factory=joint)
    assert plan_epsilon(joint(sigma), steps=11780, delta=1e-5) <= 1.5
    assert sigma > sigma_for_epsilon(sampling_rate=0.0017, steps=11780, delta=1e-5, target_epsilon=1.5)
    # k-means: 2 Gaussian releases per iteration, 20 iterations
    sigma_k = sigma_for_epsilon(steps=40, delta=1e-5, target_epsilon=0.5,
                                event_factory=lambda s: GaussianEvent(noise_multiplier=s))
    assert plan_epsilon(GaussianEvent(noise_multiplier=sigma_k), steps=40, delta=1e-5) <= 0.5
    assert plan_epsilon(GaussianEvent(noise_multiplier=sigma_k * 0.999), steps=40, delta=1e-5) > 0.5


def test_unreachable_targets_raise_budget_error() -> None:
    spent = 100 * rdp_curve(GaussianEvent(noise_multiplier=1.0))
    with pytest.raises(PrivacyBudgetError, match="out of reach"):
        sigma_for_epsilon(sampling_rate=0.01, steps=100, delta=1e-5, target_epsilon=1.0, extra_rdp=spent)
    with pytest.raises(PrivacyBudgetError, match="out of reach"):
        sigma_for_epsilon(sampling_rate=0.01, steps=100, delta=1e-5, target_epsilon=1e-6)
    with pytest.raises(PrivacyBudgetError, match="out of reach"):
        steps_for_budget(sampling_rate=0.01, noise_multiplier=1.0, delta=1e-5, target_epsilon=1.0, extra_rdp=spent)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"steps": 0}, {"steps": 1.5}, {"delta": 0.0}, {"delta": 1.0}, {"target_epsilon": 0.0},
        {"target_epsilon": float("nan")}, {"sampling_rate": None}, {"extra_rdp": [0.0, 1.0]},
        {"extra_rdp": -np.ones(len(R.DEFAULT_ORDERS))},
    ],
)
def test_bad_calibration_arguments(kwargs: dict) -> None:
    args = {"sampling_rate": 0.01, "steps": 100, "delta": 1e-5, "target_epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError):
        sigma_for_epsilon(**args)


def test_steps_for_budget_is_the_largest_affordable() -> None:
    steps = steps_for_budget(sampling_rate=0.0017, noise_multiplier=1.0, delta=1e-5, target_epsilon=1.0)
    assert _eps(0.0017, 1.0, steps) <= 1.0 < _eps(0.0017, 1.0, steps + 1)
    assert steps_for_budget(sampling_rate=0.5, noise_multiplier=0.3, delta=1e-5, target_epsilon=0.1) == 0


def test_plan_epsilon_of_pure_events_uses_basic_composition_when_smaller() -> None:
    assert plan_epsilon(LaplaceEvent(epsilon=0.1), steps=3, delta=1e-5) == pytest.approx(0.3)
    assert plan_epsilon(LaplaceEvent(epsilon=0.01), steps=10_000, delta=1e-5) < 100 * 0.5


def test_steps_for_epochs_is_ceil_of_one_over_q_per_epoch() -> None:
    assert steps_for_epochs(20, 0.0017) == 20 * 589
    assert steps_for_epochs(1, 0.01) == 100
    assert steps_for_epochs(1, 1 / 49) == 49  # 1/(1/49) is 49.00000000000001 in floating point
    assert steps_for_epochs(3, 0.3) == 12
    assert steps_for_epochs(2, 1.0) == 2
    assert steps_for_epochs(20.0, 0.0017) == 20 * 589  # configs hold epochs as floats
    assert steps_for_epochs(0.5, 0.01) == 50 and steps_for_epochs(0.1, 0.0017) == 59  # rounded up
    for bad in [(0, 0.1), (-1.0, 0.1), (float("nan"), 0.1), (True, 0.1), ("2", 0.1), (1, 0.0), (1, 1.5)]:
        with pytest.raises(ValueError):
            steps_for_epochs(*bad)


def test_default_delta_is_a_power_of_ten_below_one_over_ten_n():
    from dpgm.privacy.calibrate import default_delta

    assert default_delta(60_000) == pytest.approx(1e-6)
    assert default_delta(1_797) == pytest.approx(1e-5)
    for n in (1, 9, 10, 999, 1_000, 1_001, 9_999, 60_000, 989_818):
        assert default_delta(n) <= 1 / (10 * n)
    assert default_delta(0) == default_delta(1) == pytest.approx(0.01)  # no record left: no crash


def test_delta_and_n_magnitude_round_at_the_same_boundary():
    """Publishing N and the default delta together tells N and nothing finer: one added record
    changes neither unless it changes N (n = 999 -> 1,000), and then both change together."""
    from dpgm.privacy.calibrate import default_delta, records_magnitude

    pairs = {n: (records_magnitude(n), default_delta(n)) for n in (999, 1_000, 1_001, 9_999, 10_000)}
    assert pairs[999] == (100, pytest.approx(1e-4))
    assert pairs[1_000] == pairs[1_001] == pairs[9_999] == (1_000, pytest.approx(1e-5))
    assert pairs[10_000] == (10_000, pytest.approx(1e-6))
    for n in range(1, 20_000, 7):  # delta is a function of N alone
        assert default_delta(n) == default_delta(records_magnitude(n))
