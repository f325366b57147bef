"""The projection and the partitioner of ``partition.method: sketch``."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.clustering import make_partitioner
from dpgm.clustering.sketch import SketchOperator, SketchPartitioner, make_projection
from dpgm.config import PartitionConfig
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteLaplaceEvent
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon
from tests.clustering._fixtures import block_dataset


def test_projection_folds_into_the_frequencies():
    rng = np.random.default_rng(16)
    public = (rng.random((200, 30)) < 0.3).astype(float)
    proj = make_projection(30, 5, public, rng)
    op = SketchOperator.draw(5, 40, sigma2=0.5, rng=rng)
    x = (rng.random((60, 30)) < 0.3).astype(np.uint8)
    raw = proj.sketch_operator(op).sum(x, rng, dtype=np.float64)
    projected = op.sum(proj.apply(x), rng, dtype=np.float64)
    np.testing.assert_allclose(raw.re, projected.re, atol=1e-8)
    y = proj.apply(public)
    assert (y >= proj.lower).all() and (y <= proj.upper).all()
    rand = make_projection(30, 5, None, rng)
    y = rand.apply(x)
    assert (y >= rand.lower - 1e-12).all() and (y <= rand.upper + 1e-12).all()


@pytest.mark.parametrize("sparse", [False, True])
def test_partitioner_recovers_block_clusters_with_one_charged_release(sparse):
    data = block_dataset(n=900, k=3, sparse=sparse, seed=1)
    public = block_dataset(n=300, k=3, seed=2)
    part = SketchPartitioner(k=3, sketch_size=200, target_epsilon=2.0, decodes=2, public=public)
    acc = Accountant(delta=1e-5)
    result = part.fit(data, acc, np.random.default_rng(17))
    assert len(acc.ledger.entries) == 2 and acc.spent().epsilon <= 2.0 + 1e-9
    assert result.centres.shape == (3, 30) and ((result.centres >= 0) & (result.centres <= 1)).all()
    assert result.noisy_sizes.sum() == pytest.approx(result.info["released_count"])
    contingency = np.zeros((3, 3))
    np.add.at(contingency, (result.assignments, data.labels), 1)
    assert contingency.max(axis=0).sum() / 900 > 0.95  # each label lands (almost) in one part
    np.testing.assert_array_equal(part.assign(data.records), result.assignments)


def test_make_partitioner_builds_the_sketch_partitioner_from_config():
    cfg = PartitionConfig(method="sketch", k=3, target_epsilon=1.0,
                          options={"size": 64, "mechanism": "laplace", "decodes": 1, "projection": None})
    part = make_partitioner(cfg)
    assert isinstance(part, SketchPartitioner) and part.mechanism == "laplace"
    data = block_dataset(n=300, k=3, block=4, seed=3)
    acc = Accountant(delta=1e-5)
    result = part.fit(data, acc, np.random.default_rng(18))
    assert result.info["stage_epsilon"] == pytest.approx(1.0)  # the plan
    # The exact discrete Laplace releases (sketch, count) are charged the matched epsilon' <
    # epsilon of their shares of the plan (0.95, 0.05), with more noise: the stage spends less
    # than its plan of 1, by pure composition.
    assert all(isinstance(e.event, DiscreteLaplaceEvent) for e in acc.ledger.entries)
    matched = [matched_discrete_laplace_epsilon(share) for share in (0.95, 0.05)]
    assert [e.event.epsilon for e in acc.ledger.entries] == pytest.approx(matched, rel=1e-12)
    assert acc.spent().epsilon == pytest.approx(sum(matched)) and 0.85 < sum(matched) < 1.0
    assert result.info["projection"] == "none" and result.assignments.shape == (300,)


def test_partitioner_on_real_mnist(shared_data_dir):
    if not (shared_data_dir / "mnist").is_dir():
        pytest.skip("no mnist/ in DPGM_DATA_DIR")
    from dpgm.data import load_mnist
    from dpgm.evaluation.metrics import clustering_accuracy

    train = load_mnist("train", directory=shared_data_dir / "mnist", limit=20000)
    test = load_mnist("test", directory=shared_data_dir / "mnist", limit=3000)
    part = SketchPartitioner(k=10, sketch_size=500, decodes=1, public=test)  # Gaussian, sigma 40
    result = part.fit(train, Accountant(delta=1e-5), np.random.default_rng(19))
    assert clustering_accuracy(train.labels, result.assignments) > 0.3  # chance: 0.11


@pytest.mark.parametrize(("options", "words"), [({"size": 0}, "size"), ({"mechanism": "uniform"}, "mechanism"),
                                                 ({"size": 10, "measurements": 11}, "measurements"),
                                                 ({"sketch_size": 10}, "unknown option 'sketch_size'")])
def test_bad_sketch_options_are_one_line_config_errors(options, words):
    from dpgm.errors import ConfigError

    with pytest.raises(ConfigError, match=words) as info:
        make_partitioner(PartitionConfig(method="sketch", k=3, options=options))
    assert "\n" not in str(info.value)
