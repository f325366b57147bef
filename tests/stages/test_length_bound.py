"""The private length bound: a quantile of a noisy length histogram sets the clip of the means."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.pipeline.run import TrainingRun
from dpgm.privacy.events import DiscreteGaussianEvent
from dpgm.stages.length_bound import STAGE, quantile_length


def test_quantile_length_is_the_smallest_length_reaching_the_share() -> None:
    shares = np.array([0.0, 0.5, 0.3, 0.15, 0.05])
    assert [quantile_length(shares, q) for q in (0.4, 0.5, 0.8, 0.9, 0.95, 1.0)] == [1, 1, 2, 3, 3, 4]
    assert quantile_length(np.array([1.0, 0.0, 0.0]), 0.9) == 1  # at least one item: a bound of 0 clips all


def one_item_per_attribute(n: int, attributes: int, values: int, seed: int = 0) -> BinaryDataset:
    """A categorical table as attribute=value items: every record holds exactly ``attributes`` items."""
    rng = np.random.default_rng(seed)
    cols = np.arange(attributes) * values + rng.integers(0, values, (n, attributes))
    records = sp.csr_matrix((np.ones(n * attributes, dtype=np.uint8), cols.ravel(),
                             np.arange(0, n * attributes + 1, attributes)), shape=(n, attributes * values))
    return BinaryDataset(records=records, item_names=[str(i) for i in range(attributes * values)])


@pytest.mark.parametrize("quantile", [None, 0.9])
def test_long_records_keep_unbiased_means_with_the_private_bound(tmp_path, quantile) -> None:
    data = one_item_per_attribute(4_000, attributes=20, values=2)
    over = {"model": {"kind": "independent", "mean_clip": 3.0, "mean_noise_multiplier": 1.0,
                      "mean_clip_quantile": quantile, "length_bound_noise_multiplier": 2.0},
            "partition": {"method": "none", "noise_multiplier": 5.0}}
    cfg = config_from_dict({"runs_dir": str(tmp_path), "privacy": {"delta": 1e-6}, "seed": 1, **over})
    run = TrainingRun(cfg, tmp_path / "r", data=data, progress=False)
    run.start()
    means = run.output("part_means")[0]
    if quantile is None:  # a clip of 3 for records of norm sqrt(20): every mean shrinks to 3 / sqrt(20) of it
        assert means.mean() == pytest.approx(0.5 * 3 / np.sqrt(20), abs=0.02)
        assert STAGE not in {e.stage for e in run.accountant.ledger.entries}
        return
    assert run.output(STAGE) == 20  # every record holds 20 items
    assert means.mean() == pytest.approx(0.5, abs=0.02)
    [entry] = [e for e in run.accountant.ledger.entries if e.stage == STAGE]
    assert isinstance(entry.event, DiscreteGaussianEvent) and entry.event.noise_multiplier == 2.0
