"""make_partitioner: partition.method selects and configures the partitioner."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering import ByLabel, DPKernelKMeans, DPLloyd, SinglePart, make_partitioner
from dpgm.config import PartitionConfig
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon
from tests.clustering._fixtures import block_dataset


def test_dispatch_and_options():
    cfg = PartitionConfig(
        method="kernel_kmeans",
        k=4,
        iterations=3,
        noise_multiplier=7.0,
        features=12,
        feature_map="cosine",
        gamma=0.2,
        init="random",
    )
    p = make_partitioner(cfg)
    assert type(p) is DPKernelKMeans
    assert (p.k, p.iterations, p.noise_multiplier, p.features, p.feature_map, p.gamma) == (
        4,
        3,
        7.0,
        12,
        "cosine",
        0.2,
    )
    lloyd = make_partitioner(
        PartitionConfig(method="lloyd", clip_norm=3.0, target_epsilon=2.0, init="random")
    )
    assert type(lloyd) is DPLloyd and lloyd.clip_norm == 3.0 and lloyd.target_epsilon == 2.0
    assert type(make_partitioner(PartitionConfig(method="label", k=5))) is ByLabel
    single = make_partitioner(PartitionConfig(method="none", k=7))
    assert type(single) is SinglePart and single.k == 1


def test_public_init_without_public_sample_is_a_config_error():
    with pytest.raises(ConfigError, match="public"):
        make_partitioner(PartitionConfig(method="kernel_kmeans", init="public"))
    public = block_dataset(n=30)
    p = make_partitioner(
        PartitionConfig(method="lloyd", init="public", k=3, iterations=2), public=public
    )
    part = p.fit(block_dataset(), Accountant(delta=1e-5), np.random.default_rng(0))
    assert part.k == 3


def test_sketch_method_builds_the_sketch_partitioner_from_the_config():
    from dpgm.clustering.sketch import SketchPartitioner

    cfg = PartitionConfig(method="sketch", k=3, noise_multiplier=2.0,
                          options={"size": 50, "mechanism": "laplace", "decodes": 1, "projection": None})
    p = make_partitioner(cfg)
    assert isinstance(p, SketchPartitioner) and p.k == 3
    acc = Accountant(delta=1e-5)
    part = p.fit(block_dataset(n=60, k=3), acc, np.random.default_rng(0))
    # laplace: the plan is eps = 1 / noise_multiplier = 0.5, split 0.95 / 0.05 between the sketch
    # and the count; each exact discrete Laplace is charged the matched epsilon' < its share (more
    # noise), so the stage spends less than the plan, by pure composition
    matched = [matched_discrete_laplace_epsilon(share * 0.5) for share in (0.95, 0.05)]
    assert part.k == 3 and part.info["stage_epsilon"] == pytest.approx(0.5)
    assert [e.event.epsilon for e in acc.ledger.entries] == pytest.approx(matched, rel=1e-12)
    assert acc.spent().epsilon == pytest.approx(sum(matched)) and 0.9 * 0.5 < sum(matched) < 0.5
