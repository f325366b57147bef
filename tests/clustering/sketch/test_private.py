"""The private release: charged first, noise of the stated scale, refused over budget; merged sums
of several holders released once; merged releases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.clustering.base import STAGE
from dpgm.clustering.sketch import (
    OperatorMismatch,
    PrivateSketch,
    SketchNoise,
    l1_sensitivity,
    l2_sensitivity,
    merge_sums,
    plan_noise,
    release_sketch,
)
from dpgm.errors import DataError, PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, DiscreteLaplaceEvent
from dpgm.privacy.mechanisms import SNAP_SHARE
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon
from tests.clustering.sketch._helpers import operator


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_release_charges_first_then_adds_noise_of_the_stated_scale(mechanism):
    op = operator(2, 4000, "exp", 1000)
    rng = np.random.default_rng(11)
    total = op.sum(rng.normal(size=(50, 2)), rng)
    acc = Accountant(delta=1e-6)
    noise = plan_noise(mechanism, target_epsilon=1.0, noise_multiplier=1.0, delta=acc.delta)
    out = release_sketch(total, op, noise, accountant=acc, rng=rng)
    entries = acc.ledger.entries
    assert [e.stage for e in entries] == [STAGE, STAGE]
    sketch_event, count_event = (e.event for e in entries)
    assert (sketch_event.dim, count_event.dim) == (2 * 4000, 1)  # re and im; the count
    assert count_event.grid == 1.0  # the record count is an integer: not snapped
    if mechanism == "laplace":
        sensitivity = l1_sensitivity("exp", 1000)
        assert all(isinstance(e.event, DiscreteLaplaceEvent) for e in entries)
        # Each exact discrete Laplace is charged the matched epsilon' < epsilon of its share of
        # the plan (0.95 and 0.05 of epsilon 1), with more noise: the stage spends less than
        # planned, by pure composition.
        matched = [matched_discrete_laplace_epsilon(e.epsilon) for e in noise.events()]
        assert [e.event.epsilon for e in entries] == matched
        assert acc.spent().epsilon == pytest.approx(sum(matched)) and sum(matched) < 1.0
        # Lap_Z(b) has variance ~ 2 b^2, b = L1 sensitivity (grid units) / epsilon'
        expected_std = math.sqrt(2) * sketch_event.sensitivity / sketch_event.epsilon
    else:
        sensitivity = l2_sensitivity("exp", 1000)
        assert all(isinstance(e.event, DiscreteGaussianEvent) for e in entries)
        # the pair costs what the continuous Gaussians at the same multipliers would: the plan
        assert [e.event.noise_multiplier for e in entries] == [
            e.noise_multiplier for e in noise.events()
        ]
        continuous = Accountant(delta=1e-6).epsilon_if(*noise.events())
        assert acc.spent().epsilon == pytest.approx(continuous, rel=1e-12)
        assert acc.spent().epsilon == pytest.approx(1.0, rel=1e-4)
        expected_std = sketch_event.noise_multiplier * sketch_event.sensitivity
    expected_std *= sketch_event.grid  # back in the sketch's units
    # the sensitivity in grid units stands for the sketch's, raised at most SNAP_SHARE by snapping
    snapped = sketch_event.sensitivity * sketch_event.grid
    assert sensitivity <= snapped <= sensitivity * (1 + SNAP_SHARE) * (1 + 1e-12)
    noise_re = np.concatenate([out.re - total.re, out.im - total.im])
    assert noise_re.std() == pytest.approx(expected_std, rel=0.05)
    assert out.privacy["neighbouring"] == "add_remove"


def test_release_over_budget_refuses_without_charging():
    op = operator(2, 16)
    rng = np.random.default_rng(12)
    total = op.sum(rng.normal(size=(10, 2)), rng)
    acc = Accountant(delta=1e-6, budget_epsilon=0.5)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        release_sketch(total, op, SketchNoise("laplace", epsilon=0.6), accountant=acc, rng=rng)
    assert acc.ledger.entries == []
    assert rng.bit_generator.state == state  # no noise was drawn



def test_merged_private_sketches_are_the_count_weighted_average():
    op = operator(3, 20)
    rng = np.random.default_rng(15)
    acc = Accountant(delta=1e-6)
    shards = [
        release_sketch(
            op.sum(rng.normal(size=(n, 3)), rng),
            op,
            SketchNoise("laplace", epsilon=1.0),
            accountant=acc,
            rng=rng,
        )
        for n in (100, 300, 50)
    ]
    merged = PrivateSketch.merge(shards)
    weights = np.array([s.count for s in shards])
    expected = (weights[:, None] * np.array([s.normalised() for s in shards])).sum(
        0
    ) / weights.sum()
    np.testing.assert_allclose(merged.normalised(), expected, rtol=1e-12)
    assert merged.holders == 3
    other = operator(3, 20, seed=99)
    foreign = release_sketch(
        other.sum(rng.normal(size=(5, 3)), rng),
        other,
        SketchNoise("laplace", epsilon=1.0),
        accountant=acc,
        rng=rng,
    )
    with pytest.raises(ValueError, match="different sketch operators"):
        PrivateSketch.merge([shards[0], foreign])


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("r", [None, 3])
def test_merged_release_of_three_holders_equals_the_release_of_the_whole_data(mechanism, r):
    op = operator(4, 32, "exp", r)
    data = np.random.default_rng(20).normal(size=(300, 4))
    noise = plan_noise(mechanism, target_epsilon=1.0, noise_multiplier=1.0, delta=1e-6)
    masks = np.random.default_rng(21)  # holders one after the other draw the one-pass masks
    holders = [op.sum(part, masks, chunk_rows=100, dtype=np.float64) for part in np.split(data, 3)]
    whole = op.sum(data, np.random.default_rng(21), chunk_rows=100, dtype=np.float64)
    releases, ledgers = [], []
    for total in (merge_sums(holders), whole):
        acc = Accountant(delta=1e-6)
        releases.append(release_sketch(total, op, noise, accountant=acc, rng=np.random.default_rng(22)))
        ledgers.append(acc.ledger.entries)
    merged, one = releases
    np.testing.assert_allclose(merged.re + 1j * merged.im, one.re + 1j * one.im, atol=1e-9)
    assert merged.count == pytest.approx(one.count) and merged.fingerprint == one.fingerprint
    assert ledgers[0] == ledgers[1] and len(ledgers[0]) == 2  # one release: sketch + count


def test_merging_sums_of_different_operators_is_a_one_line_data_error():
    a, b = operator(3, 8), operator(3, 8, seed=5)
    x = np.ones((2, 3))
    rng = np.random.default_rng(23)
    with pytest.raises(OperatorMismatch, match="different sketch operators") as err:
        merge_sums([a.sum(x, rng), b.sum(x, rng)])
    assert isinstance(err.value, DataError) and "\n" not in str(err.value)
    with pytest.raises(DataError, match="no sketch sums"):
        merge_sums([])
    with pytest.raises(OperatorMismatch):
        release_sketch(a.sum(x, rng), b, SketchNoise("laplace", epsilon=1.0), accountant=Accountant(delta=1e-6), rng=rng)
