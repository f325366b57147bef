"""Poisson batches a window at a time from records in chunks; a whole run on them, and its resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm.config import config_from_dict
from dpgm.data.chunks import ChunkedRecords
from dpgm.errors import ConfigError
from dpgm.pipeline import run as run_mod
from dpgm.training.chunked_sampling import ChunkedPoissonBatches
from tests.data.test_shards import transaction_file
from tests.training.test_run import killed_run
from tests.training.test_run_privacy import assert_same_release, release_state


def batches(tmp_path: Path, n: int = 400, q: float = 0.1, window: int = 7, seed: int = 1,
            chunk_bytes: int = 200) -> ChunkedPoissonBatches:
    data = ChunkedRecords.open(transaction_file(tmp_path, n=n), chunk_bytes=chunk_bytes, n_items=40)
    # each record's part: its first item's parity (any per-record rule)
    return ChunkedPoissonBatches(data, lambda c: np.asarray(c.records[:, 1].toarray()).ravel().astype(np.int64),
                                 q, window, seed)


def test_every_record_joins_every_step_with_probability_q(tmp_path: Path) -> None:
    """Inclusions of 400 records over 300 steps: rate q per record, independent across steps."""
    (tmp_path / "a").mkdir()
    source = batches(tmp_path / "a", n=400, q=0.1, window=50)
    rows = torch.cat([source.batch(t)[0].dense() for t in range(300)])
    sizes = np.array([len(source.batch(t)[0]) for t in range(300)])
    assert abs(sizes.mean() - 40) < 3 * np.sqrt(400 * 0.1 * 0.9 / 300)  # E = q n, sd of the mean
    assert abs(sizes.var() - 36) < 12  # Binomial(400, 0.1): variance n q (1 - q) = 36
    assert rows.shape[1] == 40


def test_a_batch_is_the_same_however_the_windows_were_read_before(tmp_path: Path) -> None:
    """Window w comes from (seed, rank, w) alone: a resumed run draws the same batches."""
    source = batches(tmp_path)
    first = [source.batch(t) for t in range(20)]
    again = batches(tmp_path)
    for t in (13, 2, 19, 7):  # out of order, as after a resume
        x, part = again.batch(t)
        assert torch.equal(x.dense(), first[t][0].dense()) and torch.equal(part, first[t][1])
    other = batches(tmp_path, seed=2)
    assert not all(torch.equal(other.batch(t)[0].dense(), first[t][0].dense()) for t in range(20))


def test_parts_follow_the_rule_on_the_sampled_records(tmp_path: Path) -> None:
    source = batches(tmp_path, q=0.3)
    x, part = source.batch(0)
    assert torch.equal(part, x.dense()[:, 1].long())


def chunked_config(tmp_path: Path, path: Path, **over):
    data = {
        "name": "chunked", "seed": 3, "runs_dir": str(tmp_path / "runs"),
        "data": {"source": "transactions", "path": str(path), "n_items": 40, "chunk_mb": 0.001},
        "privacy": {"delta": 1e-4},
        "partition": {"method": "lloyd", "k": 3, "iterations": 2, "noise_multiplier": 5.0},
        "model": {"kind": "vae", "options": {"hidden": [16], "latent": 2}, "output_bias": "noisy_mean",
                  "length_noise_multiplier": 5.0},
        "training": {"epochs": 1, "sampling_rate": 0.05, "checkpoint_every": 4, "chunk_window": 6},
    }
    return config_from_dict(data, [f"{k}={v}" for k, v in over.items()])


#: Each partitioner's options here: the fewest decodes and iterations that still run every step (the runs compare
#: chunks with memory; the partitioners' quality has tests of its own).
QUICK = {"sketch": "{decodes: 1, size: 200}", "subspace": "{iterations: 4}"}


@pytest.mark.parametrize("method", ["lloyd", "kernel_kmeans", "sketch", "lsh_tree", "subspace", "none"])
def test_a_chunked_run_spends_what_the_run_in_memory_spends_and_resumes_exactly(tmp_path: Path, monkeypatch,
                                                                               method: str) -> None:
    path = transaction_file(tmp_path, n=300)
    k = {"partition.method": method, "partition.k": 1 if method == "none" else 3,
         **({"partition.options": QUICK[method]} if method in QUICK else {})}
    whole, report = run_mod.train(chunked_config(tmp_path, path, name="whole", **k), progress=False)
    _, memory = run_mod.train(chunked_config(tmp_path, path, name="memory", **{"data.chunk_mb": "null"}, **k),
                              progress=False)
    assert report["epsilon"] == memory["epsilon"] and report["noisy_part_sizes"] == memory["noisy_part_sizes"]
    ledger, ledger_memory = ((tmp_path / "runs" / n / "release" / "ledger.json").read_text() for n in
                             ("whole", "memory"))
    assert ledger == ledger_memory
    cut = killed_run(chunked_config(tmp_path, path, name="cut", **k), monkeypatch, at_step=9)  # mid-window
    run_mod.resume(cut, progress=False)
    assert_same_release(whole, cut)


def test_a_tree_with_item_totals_in_chunks_releases_what_it_releases_in_memory(tmp_path: Path) -> None:
    """The pair counts per part and the item totals are sums over chunks: the same ledger and trees."""
    path = transaction_file(tmp_path, n=300)
    over = {"model.kind": "tree", "model.options": "{select_epsilon: 0.5, pair_noise_multiplier: 4.0}",
            "model.totals_noise_multiplier": 6.0}
    runs = [run_mod.train(chunked_config(tmp_path, path, name=name, **over, **extra), progress=False)[0]
            for name, extra in (("chunks", {}), ("memory", {"data.chunk_mb": "null"}))]
    (chunks, ledger_c), (memory, ledger_m) = (release_state(r) for r in runs)
    assert ledger_c == ledger_m and {"item_pairs", "item_totals"} <= {e["stage"] for e in json.loads(ledger_c)["entries"]}
    assert torch.equal(chunks["noisy_sizes"], memory["noisy_sizes"])
    for a, b in zip(chunks["state_dicts"], memory["state_dicts"], strict=True):
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=1e-9, atol=1e-9)


def test_a_stage_or_partitioner_that_needs_memory_is_refused(tmp_path: Path) -> None:
    from dpgm.pipeline.plan import check_plan
    from dpgm.stages.base import Stage

    class InMemory(Stage):
        name, line = "in_memory", "a stage that reads the records in memory"

    path = transaction_file(tmp_path)
    chunked = ChunkedRecords.open(path, chunk_bytes=100, n_items=40)
    with pytest.raises(ConfigError, match="in_memory need the records in memory"):
        check_plan(chunked_config(tmp_path, path), chunked, [InMemory])
    gibbs = "{solver: gibbs, gibbs_asymptotic_ok: true, epsilon: 1.0}"
    with pytest.raises(ConfigError, match="'subspace' needs the records"):
        run_mod.train(chunked_config(tmp_path, path, **{"partition.method": "subspace", "partition.options": gibbs}),
                      progress=False)
    assert not (tmp_path / "runs" / "chunked").exists()


def test_the_generic_config_runs_in_chunks(tmp_path: Path) -> None:
    """rules: public chooses stages that all read chunks: the shipped generic config with data.chunk_mb."""
    from dpgm.config import load_config

    path = transaction_file(tmp_path, n=500)
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "transactions.yaml",
                      [f"data.path={path}", "data.n_items=40", "data.chunk_mb=0.002", f"runs_dir={tmp_path}/runs",
                       "seed=1", "training.epochs=0.5"])
    _, report = run_mod.train(cfg, progress=False)
    assert report["epsilon"] <= 1.0 + 1e-9 and report["noisy_part_sizes"]


@pytest.mark.parametrize("source", ["csv", "parquet"])
def test_a_csv_or_parquet_run_in_chunks_releases_what_the_run_in_memory_releases(tmp_path: Path, source: str) -> None:
    """The statistics stages agree bit for bit: the same part sizes and the same ledger."""
    from tests.data.test_chunks import csv_file, parquet_file

    path = csv_file(tmp_path, n=300, label=False) if source == "csv" else parquet_file(tmp_path, n=300)
    over = {"data.source": source, "data.path": str(path), "data.n_items": "null", "model.options": "{hidden: [8]}",
            "training.epochs": 0.5, **({"data.label_column": "digit"} if source == "parquet" else {})}
    _, chunks = run_mod.train(chunked_config(tmp_path, path, name="chunks", **over), progress=False)
    _, memory = run_mod.train(chunked_config(tmp_path, path, name="memory", **over, **{"data.chunk_mb": "null"}),
                              progress=False)
    assert chunks["noisy_part_sizes"] == memory["noisy_part_sizes"] and chunks["epsilon"] == memory["epsilon"]
