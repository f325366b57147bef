"""One tree of item pairs over all records: private edges, one charged release of pair counts, and a
release whose item and pair frequencies follow them (post-processing of the models' draws)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.artifact import load_release
from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.tilt import feature_means
from dpgm.pipeline.run import TrainingRun, train
from dpgm.privacy.events import DiscreteGaussianEvent, ExponentialEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import sample_dataset
from dpgm.stages.release_pairs import STAGE, ReleasePairsStage, global_means
from tests.stages.test_item_pairs import _chain_records


def _config(tmp_path, name: str, **model):
    over = {"model": {"kind": "independent", "mean_noise_multiplier": 2.0, "pairs_select_epsilon": 2.0, **model},
            "partition": {"method": "none", "noise_multiplier": 5.0}}
    return config_from_dict({"runs_dir": str(tmp_path), "name": name, "privacy": {"delta": 1e-6}, "seed": 2, **over})


def _chain(n: int = 20_000, m: int = 6, empty: int = 0) -> BinaryDataset:
    x = _chain_records(n, m, np.random.default_rng(3))
    x = x[x.sum(axis=1) > 0]  # no empty record but those added below
    x = np.vstack([x, np.zeros((empty, m), dtype=np.uint8)])
    return BinaryDataset(records=x, item_names=[f"i{j}" for j in range(m)])


def test_a_run_charges_the_selections_and_one_release_and_draws_the_measured_pairs(tmp_path) -> None:
    """Independent items per part know no pair; with the global tree the release holds the chain's pairs."""
    data, m = _chain(), 6
    run_dir, report = train(_config(tmp_path, "pairs", pairs_noise_multiplier=1.0), data=data, progress=False)
    ledger = PrivacyLedger.load(run_dir / "release" / "ledger.json")
    entries = [e for e in ledger.entries if e.stage == STAGE]
    assert [(e.event, e.count) for e in entries[:-1]] == [(ExponentialEvent(epsilon=2.0), m - 1)]
    assert isinstance(entries[-1].event, DiscreteGaussianEvent) and entries[-1].event.noise_multiplier == 1.0
    assert entries[-1].event.dim == m - 1 and entries[-1].count == 1
    assert STAGE in report["stage_lines"]
    mixture = load_release(run_dir)
    edges, targets = mixture.pair_edges, mixture.pair_targets
    assert sorted(map(tuple, np.sort(edges, axis=1).tolist())) == [(j, j + 1) for j in range(m - 1)]  # the chain
    real = feature_means(data.records, edges)
    assert targets == pytest.approx(real, abs=0.01)  # noisy, but close at this noise
    n = 30_000
    drawn = sample_dataset(run_dir, n, seed=0)
    assert drawn.n_records == n  # no record added or lost
    freqs = feature_means(drawn.records, edges)
    assert np.abs(freqs - targets).max() < 5 * np.sqrt(0.25 / n)  # within sampling error
    # the same run without the tree: independent items, pairs far below the chain's
    plain_dir, _ = train(_config(tmp_path, "plain"), data=data, progress=False)
    plain = feature_means(sample_dataset(plain_dir, n, seed=0).records, edges)
    assert np.all(plain[m:] < real[m:] - 0.05)


def test_with_empty_records_apart_the_targets_hold_over_every_record_drawn(tmp_path) -> None:
    data = _chain(n=12_000, empty=4_000)
    cfg = _config(tmp_path, "empty", pairs_noise_multiplier=1.0)
    cfg.partition.empty_part_noise_multiplier = 1.0
    run_dir, _ = train(cfg, data=data, progress=False)
    mixture = load_release(run_dir)
    nonempty = data.records[data.records.sum(axis=1) > 0]
    assert mixture.pair_targets == pytest.approx(feature_means(nonempty, mixture.pair_edges), abs=0.01)
    n = 30_000
    drawn = sample_dataset(run_dir, n, seed=1).records.toarray()
    share = 1 - 4_000 / data.n_records
    assert (drawn.sum(axis=1) == 0).mean() == pytest.approx(1 - share, abs=0.02)
    real = feature_means(data.records, mixture.pair_edges)
    assert feature_means(drawn, mixture.pair_edges) == pytest.approx(real, abs=0.02)


def test_global_means_weigh_the_parts_by_their_noisy_sizes() -> None:
    means = np.array([[0.1, 0.5], [0.3, 0.9]])
    assert global_means(means, np.array([100.0, 300.0])) == pytest.approx([0.25, 0.8])
    assert global_means(means, np.array([100.0, -5.0])) == pytest.approx([0.1, 0.5])  # a negative size counts 0


@pytest.mark.parametrize("over, words", [
    ({"pairs_noise_multiplier": 0.0}, "must be > 0"),
    ({"pairs_noise_multiplier": 1.0, "length_noise_multiplier": 1.0}, "does not go with length_noise_multiplier"),
    ({"pairs_noise_multiplier": 1.0, "output_bias": "default", "kind": "vae"}, "needs output_bias: noisy_mean"),
    ({"pairs_select_epsilon": 0.0}, "must be > 0"),
    ({"pairs_pool": 0}, "must be >= 1"),
    ({"pairs_item_weight": 0.0}, "must be > 0"),
])
def test_bad_pair_options_are_one_line_errors(tmp_path, over, words) -> None:
    with pytest.raises(ConfigError, match=words):
        _config(tmp_path, "bad", **over)


def test_the_stage_state_round_trips() -> None:
    stage = ReleasePairsStage(config_from_dict({}))
    stage.output = {"edges": np.array([[0, 1], [1, 2]]), "targets": np.array([0.1, 0.2, 0.3, 0.05, 0.1])}
    again = ReleasePairsStage(config_from_dict({}))
    again.load_state_dict(stage.state_dict())
    assert all(np.array_equal(again.output[k], stage.output[k]) for k in stage.output)


def test_with_a_balanced_clip_the_stage_measures_the_items_too_and_keeps_their_frequencies(tmp_path) -> None:
    """Half the records hold items 0 and 1, half all 6. The part means, very noisy, keep the 40% quantile of the
    noisy lengths (2 items) as their clip, which would shrink items 2-5 to 0.5 sqrt(2 / 6) = 0.29; the one
    global release, at little noise, balances to the whole length 6, and the items measured beside the pairs
    keep the data's frequencies."""
    m = 6
    records = np.zeros((10_000, m), dtype=np.uint8)
    records[:, :2] = 1
    records[5_000:] = 1
    data = BinaryDataset(records=records, item_names=[f"i{j}" for j in range(m)])
    cfg = _config(tmp_path, "own", pairs_clip="balanced", pairs_noise_multiplier=1.0, mean_noise_multiplier=2_000.0,
                  mean_clip_quantile=0.4, mean_clip_balance=1.0, length_bound_noise_multiplier=1.0)
    run = TrainingRun(cfg, tmp_path / "own", data=data, progress=False)
    run.start()
    assert run.output("length_bound") == 2
    release = [e for e in run.accountant.ledger.entries if e.stage == STAGE][-1]
    assert release.event.dim == m + m - 1  # the items and the tree's pairs, one release
    out = run.output(STAGE)
    assert out["targets"] == pytest.approx(feature_means(data.records, out["edges"]), abs=0.01)


def test_a_balanced_clip_needs_the_balanced_length_bound(tmp_path) -> None:
    with pytest.raises(ConfigError, match="balanced needs mean_clip_quantile and mean_clip_balance"):
        _config(tmp_path, "bad", pairs_noise_multiplier=1.0, pairs_clip="balanced")


def test_one_record_moves_the_weighted_items_and_a_tree_s_pairs_by_less_than_sqrt_w2_plus_1_times_the_bound() -> None:
    """The sensitivity the balanced release is charged, any record, tree, bound and ``model.pairs_item_weight`` w
    (w = 1: sqrt(2)): the items' half is at most the bound, the pairs' half below it."""
    from dpgm.stages.item_pairs import weighted_pair_counts

    rng = np.random.default_rng(8)
    m = 12
    for _ in range(300):
        record = (rng.random((1, m)) < rng.random()).astype(np.uint8)
        order = rng.permutation(m)
        edges = np.array([(order[j], order[rng.integers(j)]) for j in range(1, m)])
        bound, weight = float(rng.uniform(0.5, 4.0)), float(rng.choice([1.0, rng.uniform(0.1, 5.0)]))
        counts = weighted_pair_counts(record, bound)
        vector = np.concatenate([weight * np.diag(counts), counts[edges[:, 0], edges[:, 1]]])
        assert np.linalg.norm(vector) < np.sqrt(weight ** 2 + 1.0) * bound


def test_a_heavier_item_weight_moves_noise_from_the_items_to_the_pairs(tmp_path) -> None:
    """Same release cost (one Gaussian of the same multiplier): with w = 4 the items' noise is
    sqrt(17) / 4 / sqrt(2) = 0.73 of w = 1's and the pairs' sqrt(17 / 2) = 2.9 times."""
    m = 6
    records = np.zeros((10_000, m), dtype=np.uint8)
    records[:, :2] = 1
    records[5_000:] = 1
    data = BinaryDataset(records=records, item_names=[f"i{j}" for j in range(m)])
    errors = {}
    for weight in (1.0, 4.0):
        items, pairs = [], []
        for seed in range(8):
            cfg = _config(tmp_path, f"w{weight}_{seed}", pairs_clip="balanced", pairs_noise_multiplier=20.0,
                          mean_clip_quantile=0.9, mean_clip_balance=1.0, length_bound_noise_multiplier=1.0,
                          pairs_item_weight=weight)
            cfg.seed = seed
            run = TrainingRun(cfg, tmp_path / f"w{weight}_{seed}", data=data, progress=False)
            run.start()
            out = run.output(STAGE)
            diff = out["targets"] - feature_means(data.records, out["edges"])
            items.append(diff[:m])
            pairs.append(diff[m:])
        errors[weight] = (np.sqrt(np.mean(np.square(items))), np.sqrt(np.mean(np.square(pairs))))
    assert errors[4.0][0] < 0.85 * errors[1.0][0]
    assert errors[4.0][1] > 1.2 * errors[1.0][1]  # less than 2.9: the projection onto what the items allow
