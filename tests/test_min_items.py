"""data.min_items: a declared public fact (every record holds at least this many items).

Records below it are dropped at load (a per-record rule: the privacy ledger does not change);
the release draws again every synthetic record below it, until it has the records asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm import release as rel
from dpgm.artifact import ReleasedMixture, load_release
from dpgm.config import DataConfig, config_from_dict
from dpgm.data import load_dataset
from dpgm.errors import ConfigError, DpgmError
from dpgm.models.independent import Independent
from dpgm.pipeline import run as run_mod

N_ITEMS = 17


def sparse_sessions(tmp_path: Path, n: int = 600) -> Path:
    """msnbc-like records: 1-3 of 17 items each, and every 10th line empty (a blank line)."""
    rng = np.random.default_rng(4)
    lines = [" ".join(map(str, sorted(set(rng.integers(0, N_ITEMS, rng.integers(1, 4)).tolist()))))
             for _ in range(n)]
    lines[::10] = [""] * len(lines[::10])
    path = tmp_path / "sessions.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp_path: Path, path: Path, name: str, min_items: int):
    return config_from_dict({
        "name": name, "seed": 7, "runs_dir": str(tmp_path / "runs"),
        "data": {"source": "transactions", "path": str(path), "n_items": N_ITEMS, "min_items": min_items},
        "privacy": {"delta": 1e-4},
        "partition": {"method": "lloyd", "k": 2, "iterations": 2, "noise_multiplier": 5.0},
        "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}, "calibrate": True},
        "training": {"epochs": 1, "sampling_rate": 0.1, "clipping": "fixed"},
    })


def test_loading_drops_the_records_below_min_items(tmp_path):
    path = sparse_sessions(tmp_path)
    every = load_dataset(DataConfig(source="transactions", path=str(path), n_items=N_ITEMS))
    kept = load_dataset(DataConfig(source="transactions", path=str(path), n_items=N_ITEMS, min_items=2))
    lengths = every.record_lengths()
    assert (lengths == 0).sum() == 60
    assert kept.n_records == (lengths >= 2).sum() and kept.record_lengths().min() == 2
    # No record holds 18 items: the result is empty, not an error (an error would be a release of
    # one bit about the private records, outside the ledger).
    assert load_dataset(DataConfig(source="transactions", path=str(path), n_items=N_ITEMS, min_items=18)).n_records == 0
    with pytest.raises(ConfigError, match="data.min_items: must be >= 0"):
        config(tmp_path, path, "bad", -1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[int, tuple[Path, dict]]:
    """The same run with min_items 0 and 1, on records a tenth of which are empty."""
    tmp = tmp_path_factory.mktemp("min_items")
    path = sparse_sessions(tmp)
    return {m: run_mod.train(config(tmp, path, f"min{m}", m), progress=False) for m in (0, 1)}


def test_the_option_leaves_the_ledger_and_epsilon_unchanged(runs):
    (dir0, report0), (dir1, report1) = runs[0], runs[1]
    assert report1["epsilon"] == report0["epsilon"] and report1["stage_epsilons"] == report0["stage_epsilons"]
    ledgers = [json.loads((d / "release" / "ledger.json").read_text()) for d in (dir0, dir1)]
    assert ledgers[0] == ledgers[1]


def test_a_release_with_min_items_has_no_empty_record(runs, tmp_path):
    run_dir = runs[1][0]
    out = tmp_path / "syn.txt"
    report = rel.release(run_dir, out, 3000, fmt="transactions", seed=0, progress=False)
    lines = out.read_text().splitlines()
    assert len(lines) == 3000 and all(line.strip() for line in lines)
    assert report["release"]["min_items"] == 1
    mixture = load_release(run_dir)  # the same models without the rule do draw empty records
    mixture.min_items = 0
    drawn = np.concatenate([r for r, _ in rel.sample_chunks(mixture, 3000, torch.Generator().manual_seed(0))])
    assert (drawn.sum(axis=1) == 0).any()


def test_a_model_that_almost_never_draws_valid_records_is_a_clear_error(runs):
    mixture = load_release(runs[1][0])
    mixture.min_items = N_ITEMS  # every item in one record: (almost) never drawn
    with pytest.raises(DpgmError, match=r"fewer than 1%\): the models almost never draw such records"):
        list(rel.sample_chunks(mixture, 50, torch.Generator().manual_seed(0), chunk_size=1000))


def test_a_run_whose_every_record_is_below_min_items_still_runs(runs, tmp_path):
    """Nothing is refused because of what the records hold: with data.min_items 4 over records of 1 to 3
    items the run goes on with no records and spends exactly what the same plan spends on any data."""
    run_dir, report = run_mod.train(config(tmp_path, sparse_sessions(tmp_path), "none_left", 4), progress=False)
    assert report["epsilon"] == runs[0][1]["epsilon"]
    assert (run_dir / "release" / "models.pt").is_file()


def test_redrawn_records_keep_their_part_so_part_shares_follow_the_noisy_sizes():
    """Part 0's model draws an empty record half the time, part 1's never: with min_items 1 each
    part still gives half the release (redrawing across parts would give part 0 a third)."""
    models = [Independent(3), Independent(3)]
    with torch.no_grad():
        models[0].output_bias().copy_(torch.tensor([0.0, -30.0, -30.0]))  # item 0 with p = 0.5, else empty
        models[1].output_bias().copy_(torch.tensor([-30.0, 30.0, -30.0]))  # always item 1
    mixture = ReleasedMixture(models=models, noisy_sizes=np.array([100.0, 100.0]), item_names=["a", "b", "c"],
                              image_shape=None, report={}, item_ids=[0, 1, 2], min_items=1)
    chunks = list(rel.sample_chunks(mixture, 20_000, torch.Generator().manual_seed(0), chunk_size=5000))
    records = np.concatenate([r for r, _ in chunks])
    parts = np.concatenate([p for _, p in chunks])
    assert len(records) == 20_000 and (records.sum(axis=1) >= 1).all()
    assert abs((parts == 0).mean() - 0.5) < 0.02 and (records[parts == 0, 0] == 1).all()


def test_a_part_that_almost_never_draws_valid_records_gives_its_slots_to_the_others():
    """Part 1's model is (almost) always empty: its slots go to part 0 instead of failing the release."""
    models = [Independent(3), Independent(3)]
    with torch.no_grad():
        models[0].output_bias().copy_(torch.tensor([30.0, -30.0, -30.0]))
        models[1].output_bias().fill_(-12.0)  # P(any item) ~ 2e-5
    mixture = ReleasedMixture(models=models, noisy_sizes=np.array([90.0, 10.0]), item_names=["a", "b", "c"],
                              image_shape=None, report={}, item_ids=[0, 1, 2], min_items=1)
    chunks = list(rel.sample_chunks(mixture, 3000, torch.Generator().manual_seed(0), chunk_size=1000))
    records = np.concatenate([r for r, _ in chunks])
    assert len(records) == 3000 and (records.sum(axis=1) >= 1).all()
