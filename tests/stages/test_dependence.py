"""The items' dependence: the heaviest tree of pairs' distances from independence, its bound on what one
record moves, one charged release, and the partition's merge below ``partition.merge_below``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.pipeline.run import train
from dpgm.privacy.events import DiscreteGaussianEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.report import summary_markdown
from dpgm.stages.dependence import (
    STAGE,
    heaviest_tree,
    independence_distances,
    merges,
    plain_counts,
    tree_sensitivity,
)
from tests.stages.test_item_pairs import _chain_records


def _tree_total(x: np.ndarray) -> float:
    return heaviest_tree(independence_distances(plain_counts(x)))


def _brute_force_total(x: np.ndarray) -> float:
    """Every spanning tree of the m items, each pair's 2 x 2 table against the product of its margins."""
    n, m = x.shape
    def distance(i: int, j: int) -> float:
        return sum(abs(np.sum((x[:, i] == a) & (x[:, j] == b)) - np.sum(x[:, i] == a) * np.sum(x[:, j] == b) / n)
                   for a in (0, 1) for b in (0, 1))
    best = 0.0
    for edges in itertools.combinations(itertools.combinations(range(m), 2), m - 1):
        rows, cols = zip(*edges, strict=True)
        graph = sp.coo_matrix((np.ones(m - 1), (rows, cols)), shape=(m, m))
        if connected_components(graph, directed=False)[0] == 1:  # m - 1 edges joining all m items: a tree
            best = max(best, sum(distance(i, j) for i, j in edges))
    return best


def test_the_tree_total_is_the_heaviest_spanning_tree_of_the_tables_distances_from_independence() -> None:
    x = (np.random.default_rng(0).random((300, 5)) < [0.2, 0.5, 0.4, 0.7, 0.1]).astype(np.uint8)
    x[:, 1] = x[:, 0] | x[:, 1]  # a dependent pair
    assert _tree_total(x) == pytest.approx(_brute_force_total(x), rel=1e-9)


def test_one_record_moves_the_tree_total_by_less_than_the_stated_bound() -> None:
    """Every possible record added to (and so removed from) a few data sets, exhaustively over 2^m records."""
    m = 5
    for seed in range(4):
        x = (np.random.default_rng(seed).random((50, m)) < 0.3 + 0.1 * seed).astype(np.uint8)
        x[:, 2] = x[:, 1] if seed % 2 else x[:, 2]
        base = _tree_total(x)
        moves = [abs(_tree_total(np.vstack([x, np.array(r, dtype=np.uint8)])) - base)
                 for r in itertools.product((0, 1), repeat=m)]
        assert max(moves) < tree_sensitivity(m)
        assert max(moves) > 0.25 * tree_sensitivity(m) / (m - 1)  # a bound not far from what records do


def _config(tmp_path, name: str, merge_below: float):
    return config_from_dict({
        "runs_dir": str(tmp_path), "name": name, "privacy": {"delta": 1e-6, "target_epsilon": 8.0}, "seed": 4,
        "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}, "mean_noise_multiplier": 2.0},
        "training": {"epochs": 0.5, "sampling_rate": 0.05, "clipping": "fixed"},
        "partition": {"method": "lloyd", "k": 3, "iterations": 2, "noise_multiplier": 4.0,
                      "dependence_noise_multiplier": 3.0, "merge_below": merge_below}})


def _zcdp(ledger: PrivacyLedger, stages: set[str]) -> float:
    """The zCDP cost of the ledger's Gaussian releases in ``stages``: count / (2 sigma^2) each."""
    return sum(e.count / (2 * e.event.noise_multiplier ** 2) for e in ledger.entries if e.stage in stages)


def test_below_the_threshold_one_group_takes_the_partitions_budget_and_epsilon_is_the_same(tmp_path) -> None:
    x = _chain_records(4_000, 6, np.random.default_rng(5))
    data = BinaryDataset(records=x, item_names=[f"i{j}" for j in range(6)])
    exact = _tree_total(x) / (len(x) * 5)
    kept_dir, kept = train(_config(tmp_path, "kept", merge_below=exact / 2), data=data, progress=False)
    merged_dir, merged = train(_config(tmp_path, "merged", merge_below=exact * 2), data=data, progress=False)
    assert kept["dependence"]["per_record_and_edge"] == pytest.approx(exact, rel=0.05)  # little noise at n = 4,000
    assert not kept["dependence"]["parts_merged"] and len(kept["noisy_part_sizes"]) == 3
    assert merged["dependence"]["parts_merged"] and len(merged["noisy_part_sizes"]) == 1
    assert merged["noisy_part_sizes"][0] == pytest.approx(len(x), abs=30)  # one noisy count, multiplier 4
    assert merged["plan"]["partition"].startswith("none: the items") and STAGE in merged["stage_lines"]
    summary = summary_markdown(merged, dataset="chain", version="0", commit="x")
    assert "split the records into one group (none: the items' dependence is below merge_below)" in summary
    assert f"dependence was {merged['dependence']['per_record_and_edge']:.4f} per record and edge (noisy), below" in summary
    assert "not below merge_below" in summary_markdown(kept, dataset="chain", version="0", commit="x")
    ledgers = {name: PrivacyLedger.load(d / "release" / "ledger.json") for name, d in
               (("kept", kept_dir), ("merged", merged_dir))}
    partition = {name: [(e.event.noise_multiplier, e.count) for e in ledger.entries if e.stage == "partition"]
                 for name, ledger in ledgers.items()}
    assert partition == {"kept": [(4.0, 1)] * 5, "merged": [(4.0, 1)]}  # 2 T + 1 Lloyd releases, or the one count
    (means,) = [e.event.noise_multiplier for e in ledgers["merged"].entries if e.stage == "part_means"]
    assert means == pytest.approx((1 / 2.0 ** 2 + 4 / 4.0 ** 2) ** -0.5, rel=1e-12)  # the 4 other releases' budget
    spent = {name: _zcdp(ledger, {"dependence", "partition", "part_means"}) for name, ledger in ledgers.items()}
    assert spent["merged"] == pytest.approx(spent["kept"], rel=1e-12)
    steps = {name: [e.event for e in ledger.entries if e.stage == "training"] for name, ledger in ledgers.items()}
    assert steps["merged"] == steps["kept"] and steps["kept"]  # DP-SGD calibrated to the same noise
    assert merged["epsilon"] == pytest.approx(kept["epsilon"], rel=1e-9) and kept["epsilon"] <= 8.0
    (entry,) = [e for e in ledgers["kept"].entries if e.stage == STAGE]
    assert isinstance(entry.event, DiscreteGaussianEvent) and entry.count == 1
    assert entry.event.noise_multiplier == 3.0 and entry.event.dim == 2  # the tree's total and the scaled count
    assert entry.event.sensitivity * entry.event.grid >= tree_sensitivity(6) * np.sqrt(2)


def test_a_threshold_of_zero_never_merges_even_a_measurement_below_zero() -> None:
    """A noisy measurement can fall below 0; merge_below 0 means never, and a threshold compares strictly."""
    cfg = config_from_dict({"partition": {"method": "lloyd", "dependence_noise_multiplier": 1.0}})
    assert not merges(cfg, -0.01) and not merges(cfg, None)
    cfg.partition.merge_below = 0.02
    assert merges(cfg, -0.01) and merges(cfg, 0.0199) and not merges(cfg, 0.02) and not merges(cfg, None)
