"""The subspace partitioner: its ledger, the Gibbs refusal, and training through the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.clustering import PARTITIONERS, make_partitioner
from dpgm.clustering.base import STAGE
from dpgm.clustering.subspace import DPSubspaceClustering, SubspaceOptions
from dpgm.config import PartitionConfig
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import (
    AsymptoticExponentialEvent,
    DiscreteGaussianEvent,
    ExponentialEvent,
    SmoothSensitivityGaussianEvent,
)
from dpgm.privacy.rdp import gaussian_rdp
from tests.clustering._fixtures import block_dataset


def float_dataset(rows: np.ndarray) -> BinaryDataset:
    return BinaryDataset(records=rows, item_names=[f"x{j}" for j in range(rows.shape[1])], name="union")


def kinds(acc: Accountant) -> list[tuple[str, int]]:
    assert all(e.stage == STAGE for e in acc.ledger.entries)
    return [(e.event.kind, e.count) for e in acc.ledger.entries]


def test_sulq_charges_two_gaussian_releases_per_iteration_plus_the_sizes():
    acc = Accountant(delta=1e-6)
    model = DPSubspaceClustering(k=3, options=SubspaceOptions(solver="sulq", dim=1, radius=4.0, iterations=3),
                                 noise_multiplier=2.0)
    model.fit(block_dataset(n=90), acc, np.random.default_rng(0))
    charged = [e.event for e in acc.ledger.entries for _ in range(e.count)]
    assert len(charged) == 2 * 3 + 1
    assert all(isinstance(e, DiscreteGaussianEvent) and e.noise_multiplier == 2.0 for e in charged)
    moments = [e for e in charged if e.dim == 3 * 30 * 30]
    assert len(moments) == 3 and all(e.grid < 16.0 * 2**-9 for e in moments)  # sensitivity r^2 = 16 on a fine grid


def test_gibbs_charges_one_asymptotic_exponential_event_and_the_sizes():
    acc = Accountant(delta=1e-6)
    opts = SubspaceOptions(solver="gibbs", dim=1, radius=4.0, iterations=3, epsilon=2.0, gibbs_asymptotic_ok=True)
    DPSubspaceClustering(k=3, options=opts).fit(block_dataset(n=90), acc, np.random.default_rng(0))
    assert kinds(acc) == [("asymptotic_exponential", 1), ("discrete_gaussian", 1)]
    assert acc.ledger.entries[0].event.epsilon == pytest.approx(2.0 * 0.9)
    assert acc.spent().epsilon <= 2.0 + 1e-9


def test_sample_aggregate_charges_one_smooth_sensitivity_release_and_the_sizes():
    acc = Accountant(delta=1e-6)
    opts = SubspaceOptions(solver="sample_aggregate", dim=1, radius=4.0, epsilon=5.0, blocks=5)
    DPSubspaceClustering(k=3, options=opts).fit(block_dataset(n=150), acc, np.random.default_rng(0))
    assert kinds(acc) == [("smooth_sensitivity_gaussian", 1), ("discrete_gaussian", 1)]
    assert acc.ledger.entries[0].event.dim == 3 * 30 * 30
    assert Accountant(delta=1e-6).epsilon_if(acc.ledger.entries[0].event) <= 4.5 * (1 + 1e-6)


def test_gibbs_is_refused_without_the_asymptotic_opt_in():
    with pytest.raises(ConfigError, match="gibbs_asymptotic_ok"):
        DPSubspaceClustering(k=3, options=SubspaceOptions(solver="gibbs", epsilon=1.0))
    cfg = PartitionConfig(method="subspace", k=3, options={"solver": "gibbs", "epsilon": 1.0})
    with pytest.raises(ConfigError, match="gibbs_asymptotic_ok"):
        make_partitioner(cfg)
    with pytest.raises(ConfigError, match="solver"):
        make_partitioner(PartitionConfig(method="subspace", k=3, options={"solver": "ssc"}))


def test_the_asymptotic_event_says_so_and_costs_what_an_exponential_one_does():
    event = AsymptoticExponentialEvent(epsilon=1.5)
    assert "only asymptotically private: exact only in the limit of the Gibbs chain" in event.description
    acc = Accountant(delta=1e-6)
    assert np.array_equal(acc.curve(event), acc.curve(ExponentialEvent(epsilon=1.5)))
    assert acc.epsilon_if(event) == pytest.approx(1.5)


def test_smooth_sensitivity_rdp_tends_to_the_gaussian_and_diverges_at_high_orders():
    acc = Accountant(delta=1e-6)
    near = acc.curve(SmoothSensitivityGaussianEvent(noise_multiplier=3.0, beta=1e-9, dim=20))
    assert near == pytest.approx(gaussian_rdp(acc.orders, 3.0), rel=1e-4)
    wide = acc.curve(SmoothSensitivityGaussianEvent(noise_multiplier=3.0, beta=0.2, dim=20))
    limit = 1.0 / (1.0 - math.exp(-0.4))
    orders = np.array(acc.orders)
    assert np.all(np.isinf(wide[orders >= limit])) and np.all(np.isfinite(wide[orders < limit]))
    assert np.all(wide[orders < limit] > near[orders < limit])


def test_training_through_the_registry_fits_and_assigns():
    assert "subspace" in PARTITIONERS.names()
    data = block_dataset(n=300)
    cfg = PartitionConfig(method="subspace", k=3,
                          options={"solver": "sulq", "dim": 1, "radius": 4.0, "iterations": 8, "epsilon": 20.0})
    model = make_partitioner(cfg)
    part = model.fit(data, Accountant(delta=1e-6), np.random.default_rng(1))
    assert part.k == 3 and part.centres.shape == (3, 30, 1)
    assert clustering_accuracy(data.labels, part.assignments) > 0.9
    assert np.array_equal(model.assign(data.records), part.assignments)
    assert part.info["solver"] == "sulq" and part.info["target_epsilon"] == 20.0


def test_the_new_event_kinds_round_trip_through_json():
    from dpgm.privacy.events import event_from_dict

    for event in (AsymptoticExponentialEvent(epsilon=0.7),
                  SmoothSensitivityGaussianEvent(noise_multiplier=2.0, beta=0.01, dim=75)):
        assert event_from_dict(event.to_dict()) == event
