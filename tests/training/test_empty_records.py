"""partition.empty_part_noise_multiplier: empty records as a part of their own, sized by one noisy count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm import release as rel
from dpgm import rules
from dpgm.artifact import ReleasedMixture, load_release
from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models.independent import Independent
from dpgm.pipeline import run as run_mod
from dpgm.privacy.accountant import Accountant
from dpgm.stages.empty_records import STAGE, EmptyRecordsStage, noisy_empty_count, none_empty

from .test_run import killed_run

N_ITEMS = 12


def sessions(tmp_path: Path, n: int = 800) -> Path:
    """Sparse records of 1-3 items each, 40% of the lines empty."""
    rng = np.random.default_rng(5)
    lines = [" ".join(map(str, sorted(set(rng.integers(0, N_ITEMS, rng.integers(1, 4)).tolist()))))
             for _ in range(n)]
    for i in np.flatnonzero(rng.random(n) < 0.4):
        lines[i] = ""
    path = tmp_path / "sessions.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp_path: Path, name: str, sigma: float | None = 2.0, **over):
    return config_from_dict({
        "name": name, "seed": 11, "runs_dir": str(tmp_path / "runs"),
        "data": {"source": "transactions", "path": str(sessions(tmp_path)), "n_items": N_ITEMS},
        "privacy": {"delta": 1e-4},
        "partition": {"method": "lloyd", "k": 2, "iterations": 2, "noise_multiplier": 5.0,
                      "empty_part_noise_multiplier": sigma},
        "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}, "calibrate": True},
        "training": {"epochs": 1, "sampling_rate": 0.1, "clipping": "fixed", "checkpoint_every": 2},
    }, [f"{k}={v}" for k, v in over.items()])


def test_the_count_is_one_charged_gaussian_release_of_the_empty_records():
    records = np.zeros((50, 4), dtype=np.uint8)
    records[:30, 0] = 1  # 20 empty records
    data = BinaryDataset(records=records, item_names=list("abcd"))
    accountant = Accountant(delta=1e-5)
    draws = [noisy_empty_count(data, noise_multiplier=3.0, accountant=Accountant(delta=1e-5),
                               rng=np.random.default_rng(s)) for s in range(2000)]
    assert np.mean(draws) == pytest.approx(20.0, abs=0.3) and np.std(draws) == pytest.approx(3.0, rel=0.1)
    noisy_empty_count(data, noise_multiplier=3.0, accountant=accountant, rng=np.random.default_rng(0))
    assert accountant.ledger.count(STAGE) == 1


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("empty")
    return run_mod.train(config(tmp, "split"), progress=False)


def test_a_run_with_an_empty_part_charges_the_count_and_releases_its_share(run, tmp_path):
    run_dir, report = run
    assert report["stage_epsilons"][STAGE] > 0
    mixture = load_release(run_dir)
    assert mixture.empty_size is not None and mixture.min_items == 1  # the other parts hold >= 1 item
    assert report["noisy_empty_records"] == mixture.empty_size  # a released value, in the report
    share = rel.mixture_shares(mixture)[-1]
    assert 0.3 < share < 0.5  # 40% of the records are empty, the count's noise is small
    records = np.concatenate([r for r, _ in rel.sample_chunks(mixture, 20_000, torch.Generator().manual_seed(1))])
    assert (records.sum(axis=1) == 0).mean() == pytest.approx(share, abs=0.015)
    assert sum(mixture.noisy_sizes) == pytest.approx(800 * 0.6, rel=0.15)  # the parts hold the other records


def test_resumed_run_keeps_the_count_and_releases_the_same(tmp_path, monkeypatch, run):
    cfg = config(tmp_path, "split")
    run_dir = killed_run(cfg, monkeypatch, at_step=3)
    state = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)
    assert state["stages"]["empty_records"]["output"] is not None
    resumed_dir, _ = run_mod.resume(run_dir, progress=False)
    resumed, whole = load_release(resumed_dir), load_release(run[0])  # the same seed, uninterrupted
    assert resumed.empty_size == whole.empty_size and list(resumed.noisy_sizes) == list(whole.noisy_sizes)
    for a, b in zip(resumed.models, whole.models):
        assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_empty_part_draws_all_zero_records_and_no_other_part_does():
    models = [Independent(3)]
    with torch.no_grad():
        models[0].output_bias().fill_(-1.0)  # often empty on its own: redrawn (min_items 1)
    mixture = ReleasedMixture(models=models, noisy_sizes=np.array([300.0]), item_names=list("abc"), image_shape=None,
                              report={}, item_ids=[0, 1, 2], min_items=1, empty_size=100.0)
    assert rel.mixture_shares(mixture) == pytest.approx([0.75, 0.25])
    chunks = list(rel.sample_chunks(mixture, 8000, torch.Generator().manual_seed(2)))
    records, parts = (np.concatenate(x) for x in zip(*chunks))
    assert (records[parts == 1].sum(axis=1) == 0).all() and (records[parts == 0].sum(axis=1) >= 1).all()
    assert (parts == 1).mean() == pytest.approx(0.25, abs=0.015)
    mixture.empty_size = -50.0  # a negative noisy count: projected with the sizes, no mass added
    assert rel.mixture_shares(mixture) == pytest.approx([1.0, 0.0])


@pytest.mark.parametrize(("over", "match"), [
    ({"partition.method": "label"}, "does not go with method: label"),
    ({"model.length_noise_multiplier": 5.0}, "does not go with model.length_noise_multiplier"),
    ({"partition.empty_part_noise_multiplier": 0}, "must be > 0"),
])
def test_options_that_do_not_go_with_an_empty_part_are_clear_errors(tmp_path, over, match):
    with pytest.raises(ConfigError, match=match):
        config(tmp_path, "bad", **over)


def test_the_length_histogram_reads_no_empty_record_only_where_it_would_see_short_ones(monkeypatch):
    shares = np.array([0.0, 0.0, 0.3, 0.7])  # no record of one item among 1,000
    assert none_empty(shares, records=1_000.0, cut=100.0)  # a length of 15% (150 records) passes a cut of 100
    assert not none_empty(shares, records=1_000.0, cut=200.0)  # it would not: the empty zero is noise
    assert not none_empty(np.array([0.0, 0.1, 0.2, 0.7]), records=1_000.0, cut=100.0)
    monkeypatch.setattr(rules, "EMPTY_SEEN_SHARE", 0.0)
    assert not none_empty(shares, records=1_000.0, cut=100.0)


def dense_records(dense: bool) -> BinaryDataset | None:
    """800 records of 6 of the 12 items each (dense), or None: the config's sparse sessions (``sessions``)."""
    if not dense:
        return None
    rng = np.random.default_rng(3)
    x = np.zeros((800, N_ITEMS), dtype=np.uint8)
    for row in x:
        row[rng.choice(N_ITEMS, 6, replace=False)] = 1
    return BinaryDataset(records=x, item_names=[str(j) for j in range(N_ITEMS)])


def empty_part_run(tmp_path: Path, dense: bool, length_noise: float) -> tuple[ReleasedMixture, dict]:
    """One group of independent items over ``dense_records``, the length bound measured at ``length_noise``."""
    cfg = config(tmp_path, f"d{dense}", sigma=40.0, **{"model.kind": "independent", "model.options": {},
                                                        "model.mean_clip_quantile": 0.9,
                                                        "model.length_bound_noise_multiplier": length_noise,
                                                        "partition.method": "none", "partition.k": 1})
    run_dir, report = run_mod.train(cfg, data=dense_records(dense), progress=False)
    return load_release(run_dir), report


@pytest.mark.parametrize("dense", [True, False])
def test_dense_records_release_no_empty_part_sparse_ones_keep_theirs(tmp_path, dense):
    """Every record holds 6 of 12 items: the length bound's histogram holds no record of one item, so the release
    draws no empty record, whatever the count's noise; 40% empty sessions of 1-3 items keep their empty part."""
    mixture, report = empty_part_run(tmp_path, dense, length_noise=5.0)
    assert report["stage_epsilons"][STAGE] > 0 and report["noisy_empty_records"] != 0.0  # charged, reported
    assert (mixture.empty_size == 0.0) == dense and report["empty_part"] == (not dense)


def test_a_count_below_the_dense_cut_draws_no_empty_record_and_one_above_it_stands(tmp_path, monkeypatch):
    stage = EmptyRecordsStage(config(tmp_path, "cut", sigma=40.0))
    stage.output = 30.0  # below one noise std
    assert stage.read() == 30.0 and stage.kept()  # records not read as dense: the count stands as drawn
    stage.read_as_dense()
    assert stage.read() == 0.0 and not stage.kept()
    stage.output = 50.0
    assert stage.read() == 50.0
    monkeypatch.setattr(rules, "EMPTY_DENSE_CUT", 2.0)
    assert stage.read() == 0.0
    monkeypatch.setattr(rules, "EMPTY_DENSE_CUT", 0.0)
    stage.output = 1.0
    assert stage.read() == 1.0


@pytest.mark.parametrize("dense", [True, False])
def test_the_length_bound_reads_dense_records_where_no_short_record_passes_its_cut(tmp_path, monkeypatch, dense):
    """Without the seen-share rule, the length bound still reads the dense records (800 of length 6 pass its cut, none
    of one or two items) and not the sparse sessions (lengths 1-3): with a dense cut no count reaches, the dense
    records draw no empty record and the sparse sessions keep theirs."""
    monkeypatch.setattr(rules, "EMPTY_SEEN_SHARE", 0.0)
    monkeypatch.setattr(rules, "EMPTY_DENSE_CUT", 1e9)
    mixture, report = empty_part_run(tmp_path, dense, length_noise=20.0)
    assert (mixture.empty_size == 0.0) == dense and report["empty_part"] == (not dense)
