"""The noisy record-length histogram (charged once) and the release that follows it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent
from dpgm.stages.record_lengths import STAGE, noisy_length_shares


def test_one_gaussian_release_of_sensitivity_one_and_shares_without_added_mass() -> None:
    rng = np.random.default_rng(0)
    x = (rng.random((20_000, 6)) < 0.3).astype(np.uint8)
    acc = Accountant(delta=1e-6)
    data = BinaryDataset(records=sp.csr_matrix(x), item_names=[str(j) for j in range(6)], name="t")
    shares = noisy_length_shares(data, noise_multiplier=5.0, accountant=acc, rng=rng)
    assert acc.ledger.count(STAGE) == 1
    want = Accountant(delta=1e-6)
    want.spend(STAGE, GaussianEvent(noise_multiplier=5.0))
    assert acc.spent().epsilon == pytest.approx(want.spent().epsilon)
    truth = np.bincount(x.sum(axis=1), minlength=7) / len(x)
    assert shares.shape == (7,) and shares.min() >= 0 and shares.sum() == pytest.approx(1.0)
    assert np.abs(shares - truth).max() < 0.005  # noise std 5 on 20,000 records


def _bimodal_run(folder):
    """A run whose release follows its length histogram, on records of 1 or 5 items: independent items alone would
    give binomial lengths."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train

    rng = np.random.default_rng(0)
    x = np.zeros((6_000, 10), dtype=np.uint8)
    for row, k in zip(x, rng.choice([1, 5], size=len(x))):
        row[rng.choice(10, size=k, replace=False)] = 1
    data = BinaryDataset(records=sp.csr_matrix(x), item_names=[str(i) for i in range(10)], name="t")
    cfg = config_from_dict({"runs_dir": str(folder), "name": "r", "seed": 0, "privacy": {"delta": 1e-5},
                            "partition": {"method": "none", "k": 1, "noise_multiplier": 10.0},
                            "model": {"kind": "independent", "mean_noise_multiplier": 5.0,
                                      "length_noise_multiplier": 5.0}})
    return train(cfg, data=data, progress=False)


def _bimodal(lengths: np.ndarray) -> bool:
    got = np.bincount(lengths, minlength=11) / len(lengths)
    return got[1] == pytest.approx(0.5, abs=0.03) and got[5] == pytest.approx(0.5, abs=0.03)


def test_a_run_releases_the_histogram_and_its_release_follows_it(tmp_path) -> None:
    from dpgm.release import sample_dataset

    run_dir, report = _bimodal_run(tmp_path)
    assert STAGE in report["stage_epsilons"]
    assert _bimodal(sample_dataset(run_dir, 20_000, seed=0).record_lengths())


def test_each_chunk_of_a_release_starts_its_tilt_where_the_last_one_ended(tmp_path, monkeypatch) -> None:
    """Every chunk poses the same tilt on fresh draws: the first starts from zero, each later one from the theta
    the one before found (fewer steps), and the lengths still follow the histogram."""
    import torch

    from dpgm import release
    from dpgm.artifact import load_release
    from dpgm.models import tilt

    run_dir, _ = _bimodal_run(tmp_path)
    calls = []

    def recorded(*args, **kwargs):
        out = tilt.resample(*args, **kwargs)
        calls.append((kwargs.get("start"), out[1]))
        return out

    monkeypatch.setattr(release, "resample", recorded)
    chunks = release.sample_chunks(load_release(run_dir), 9_000, torch.Generator().manual_seed(0), chunk_size=3_000)
    lengths = np.concatenate([records.sum(axis=1) for records, _ in chunks])
    assert len(calls) == 3 and calls[0][0] is None
    assert all(start is previous for (start, _), (_, previous) in zip(calls[1:], calls))
    assert _bimodal(lengths.astype(np.int64))


def test_the_tilts_fitted_beside_the_draws_give_the_records_of_one_stage_after_the_other(tmp_path, monkeypatch) -> None:
    """The release fits each chunk's tilt on a worker thread while it draws the next pool: its chunks are, bit for
    bit, those of drawing each pool and fitting its tilt in turn on one thread (the generator is used in the same
    order, each tilt starts from the last one's theta)."""
    import threading

    import torch

    from dpgm import release
    from dpgm.artifact import load_release

    run_dir, _ = _bimodal_run(tmp_path)
    mixture = load_release(run_dir)
    threads = []
    fit = release.resample

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return fit(*args, **kwargs)

    monkeypatch.setattr(release, "resample", recorded)
    piped = list(release.sample_chunks(mixture, 9_000, torch.Generator().manual_seed(3), chunk_size=3_000))
    assert len(threads) == 3 and all(name.startswith("dpgm-tilt") for name in threads)
    generator, probs = torch.Generator().manual_seed(3), torch.as_tensor(release.mixture_shares(mixture),
                                                                          dtype=torch.float64)
    tilt = release._Following(release._length_targets(mixture))
    with torch.no_grad():
        serial = [release._picks(tilt, tilt.pool(mixture, 3_000, probs, generator)) for _ in range(3)]
    assert len(piped) == 3
    for (records, parts), (want_records, want_parts) in zip(piped, serial):
        assert np.array_equal(records, want_records) and np.array_equal(parts, want_parts)
    assert threads[3:] == [threading.current_thread().name] * 3  # the reference ran here


def test_the_tilts_run_with_one_blas_thread_whatever_the_run_uses(tmp_path, monkeypatch) -> None:
    """BLAS on one thread through a tilted release (``threads.serial_blas``): on two cores its idle threads cost the
    tilt twice its time, and their summation order would tie the seeded release to the thread count."""
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from dpgm import release
    from dpgm.artifact import load_release

    run_dir, _ = _bimodal_run(tmp_path)
    seen = []
    fit = release.resample

    def recorded(*args, **kwargs):
        seen.append({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
        return fit(*args, **kwargs)

    monkeypatch.setattr(release, "resample", recorded)
    with threadpool_limits(limits=2, user_api="blas"):
        list(release.sample_chunks(load_release(run_dir), 6_000, torch.Generator().manual_seed(0), chunk_size=3_000))
        after = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    assert seen == [{1}, {1}]
    assert after == {2}  # the run's own setting comes back after the release
