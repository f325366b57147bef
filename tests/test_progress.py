"""Progress bars: every long stage shows one, with the epsilon spent so far and nothing private.

A tiny run goes through every stage with the bars forced on (``progress_output``): loading,
partition (noisy Lloyd), DP-SGD, release, and an evaluation with an MWEM baseline. Each bar's
frames must show an epsilon (the evaluation's exact answers on the real data excepted: they
are not a release); no frame may show the number of records or a true part size.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from dpgm.clustering.sketch import SketchPartitioner
from dpgm.config import config_from_dict
from dpgm.evaluation.counting import run_baseline, start_evaluation
from dpgm.pipeline import run as run_mod
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.progress import epsilon_of, progress_scope, share_bar, stage_bar
from dpgm.release import release, sample_dataset
from tests.clustering._fixtures import block_dataset
from tests.training.test_run import killed_run

N_RECORDS = 523


def frames(output: str, desc: str) -> list[str]:
    """Every frame tqdm drew of the bar called ``desc``."""
    return [f for f in re.split(r"[\r\n]", output) if f.startswith(desc)]


def shows_number(output: str, value: int) -> bool:
    """``value`` appears as a whole number (not inside a longer number or a decimal)."""
    return re.search(rf"(?<![\d.]){value}(?![\d.])", output) is not None


def transactions(tmp_path: Path) -> Path:
    rng = np.random.default_rng(5)
    lines = [" ".join(map(str, sorted(set(rng.integers(0, 12, 3).tolist())))) for _ in range(N_RECORDS)]
    path = tmp_path / "shop.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def shop_config(tmp_path: Path):
    """A tiny private run on ``transactions``: kernel k-means, 10 DP-SGD steps, private/ kept."""
    return config_from_dict({
        "name": "shop", "seed": 2, "runs_dir": str(tmp_path / "runs"), "keep_private": True,
        "data": {"source": "transactions", "path": str(transactions(tmp_path)), "n_items": 12},
        "privacy": {"delta": 1e-4},
        "partition": {"method": "kernel_kmeans", "k": 2, "iterations": 3, "noise_multiplier": 5.0,
                      "features": 20, "gamma": 0.05},
        "model": {"kind": "vae", "options": {"hidden": [8], "latent": 2}},
        "training": {"epochs": 1, "sampling_rate": 0.1, "hist_bins": 10, "log_every": 2},
    })


def test_every_stage_shows_a_bar_with_epsilon_and_nothing_private(tmp_path, progress_output):
    cfg = shop_config(tmp_path)
    run_dir, report = run_mod.train(cfg, progress=True)
    release(run_dir, tmp_path / "syn.csv", 300, seed=0, progress=True)
    released = progress_output.getvalue()
    real = run_mod.load_dataset(cfg.data)  # evaluation: exact, not a release, so no epsilon
    evaluation = start_evaluation(real, 50, np.random.default_rng(0))
    run_baseline("mwem", real, evaluation.queries, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(1))
    evaluation.add("dpgm", sample_dataset(run_dir, 200, seed=1))
    out = progress_output.getvalue()

    for desc in ("loading shop.txt", "partition: noisy Lloyd", "DP-SGD", "sampling", "mwem"):
        shown = frames(released if desc != "mwem" else out, desc)
        assert shown, f"no bar for {desc}"
        assert all("eps=" in f for f in shown), desc
    assert "eps=0.000" in frames(released, "loading shop.txt")[-1]  # nothing spent before the partition
    loading = frames(released, "loading shop.txt")
    assert "100/100" in loading[-1]  # a share of the file, not its bytes (which grow with n)
    assert not shows_number(" ".join(loading), (tmp_path / "shop.txt").stat().st_size)
    assert f"eps={report['epsilon']:.3f}" in frames(released, "DP-SGD")[-1]
    assert f"eps={report['epsilon']:.3f}" in frames(released, "sampling")[-1]  # a release spends nothing
    assert frames(out, "answering 50 queries")
    checkpoint = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)
    sizes = np.bincount(checkpoint["stages"]["partition"]["assignments"].numpy(), minlength=2)
    for private in (N_RECORDS, *sizes.tolist()):
        assert not shows_number(out, private), private
    assert "loss" not in out


def test_a_resumed_run_shows_the_epsilon_spent_before_it_from_loading_on(tmp_path, monkeypatch, progress_output):
    run_dir = killed_run(shop_config(tmp_path), monkeypatch, at_step=3)
    ledger = torch.load(run_dir / "private" / "checkpoint.pt", weights_only=True)["ledger"]
    spent = Accountant(PrivacyLedger.from_json(ledger), delta=1e-4).spent().epsilon
    assert spent > 0  # the partition's
    progress_output.seek(0)
    progress_output.truncate()
    run_mod.resume(run_dir, progress=True)
    shown = progress_output.getvalue()
    assert f"eps={spent:.3f}" in frames(shown, "loading shop.txt")[-1]
    assert f"eps={spent:.3f}" in frames(shown, "DP-SGD")[0]


def test_sketch_sum_and_decoder_show_their_progress_and_the_epsilon(progress_output):
    data = block_dataset(n=300, k=3, seed=1)
    accountant = Accountant(delta=1e-5)
    with progress_scope(epsilon=epsilon_of(accountant)):
        SketchPartitioner(k=3, sketch_size=100, target_epsilon=2.0, decodes=2).fit(
            data, accountant, np.random.default_rng(17))
    shown = progress_output.getvalue()
    assert "100/100" in frames(shown, "partition: sketch sum")[-1] and not shows_number(shown, 300)
    last = frames(shown, "partition: sketch decoder")[-1]
    assert "12/12" in last and f"eps={accountant.spent().epsilon:.3f}" in last  # 2 decodes x 2k iterations


def test_bars_are_off_without_a_terminal_or_when_progress_is_off():
    stream = io.StringIO()  # not a TTY
    with progress_scope(stream=stream, delay=0), stage_bar("quiet", 3) as bar:
        bar.advance(3)
    with progress_scope(stream=stream, tty_only=False, delay=0), progress_scope(enabled=False), \
            stage_bar("off", 3) as bar:
        bar.advance(3)
    assert stream.getvalue() == ""


def test_short_stages_print_nothing():
    stream = io.StringIO()
    with progress_scope(stream=stream, tty_only=False, delay=60, epsilon=lambda: 1.0), stage_bar("short", 3) as bar:
        bar.advance(3)
        bar.show(clip="3")
    assert stream.getvalue() == ""


@pytest.mark.parametrize("done, total, shown", [(0, 7, "0/100"), (3, 7, "42/100"), (7, 7, "100/100")])
def test_a_share_bar_shows_percents_not_the_private_total(done, total, shown):
    stream = io.StringIO()
    with progress_scope(stream=stream, tty_only=False, delay=0), share_bar("pass") as bar:
        bar.advance_share(done, total)
    assert shown in stream.getvalue() and not shows_number(stream.getvalue(), total)
