"""Each DP solver recovers three well-separated subspaces at a large epsilon.

SuLQ and Gibbs start from random subspaces, and k-plane-like iterations from a random start can stop
in a local optimum (two planes sharing one part): the seeds below give starts that lead to the union.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering.noisy_lloyd import lloyd_event, resolve_sigma
from dpgm.clustering.subspace.distance import nearest_subspace, random_bases, wasserstein_distance
from dpgm.clustering.subspace.gibbs import gibbs_subspaces
from dpgm.clustering.subspace.sample_aggregate import sample_aggregate
from dpgm.clustering.subspace.sulq import sulq_k_plane, sulq_releases
from dpgm.clustering.subspace.tsc import tsc
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant
from tests.clustering.subspace._synthetic import coordinate_union


def check_recovered(rows, truth, labels, bases) -> None:
    assert wasserstein_distance(bases, truth) < 0.3
    assert clustering_accuracy(labels, nearest_subspace(rows, bases)) > 0.95


def test_tsc_recovers_the_union_without_privacy():
    rows, truth, labels = coordinate_union()
    check_recovered(rows, truth, labels, tsc(rows, 3, 2, np.random.default_rng(0)))


def test_sulq_recovers_at_large_epsilon_and_not_at_tiny_epsilon():
    rows, truth, labels = coordinate_union()
    for eps, ok in [(200.0, True), (0.05, False)]:
        rng = np.random.default_rng(0)
        sigma = resolve_sigma(1.0, eps, lloyd_event, sulq_releases(10), 1e-6)
        result = sulq_k_plane(rows, random_bases(3, 6, 2, rng), iterations=10, sigma=sigma, radius=1.0,
                              accountant=Accountant(delta=1e-6), rng=rng)
        if ok:
            check_recovered(rows, truth, labels, result.bases)
        else:
            assert wasserstein_distance(result.bases, truth) > 0.5


def test_gibbs_recovers_at_large_epsilon():
    rows, truth, labels = coordinate_union()
    rng = np.random.default_rng(0)
    result = gibbs_subspaces(rows, random_bases(3, 6, 2, rng), epsilon=2000.0, radius=1.0, sweeps=30,
                             accountant=Accountant(delta=1e-6), rng=rng)
    check_recovered(rows, truth, labels, result.bases)


@pytest.mark.parametrize(("eps", "ok"), [(3000.0, True), (1.0, False)])
def test_sample_aggregate_recovers_only_at_very_large_epsilon(eps, ok):
    rows, truth, labels = coordinate_union(n=5000)
    result = sample_aggregate(rows, k=3, q=2, blocks=50, epsilon=eps, accountant=Accountant(delta=1e-6),
                              rng=np.random.default_rng(0))
    distance = wasserstein_distance(result.bases, truth)
    accuracy = clustering_accuracy(labels, nearest_subspace(rows, result.bases))
    if ok:  # the smooth bound keeps the noise large: close, not exact
        assert distance < 0.5 and accuracy > 0.95
    else:
        assert distance > 1.5 and accuracy < 0.8
