"""TensorBoard after an interrupted-and-resumed run: every (tag, step) appears once, none is lost."""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

from dpgm.pipeline import run as run_mod
from tests.training.test_run import killed_run, terminated_run, tiny_config


def points(run_dir: Path) -> Counter[tuple[str, int]]:
    """How often TensorBoard shows each (tag, step) after its purge of orphaned points.

    The plugin accumulator is what the TensorBoard server reads: scalars, images and text all
    arrive as tensors, and a purge step hides every kind.
    """
    acc = EventAccumulator(str(run_dir / "release" / "tensorboard"), size_guidance={"tensors": 0})
    acc.Reload()
    return Counter((tag, e.step) for tag in acc.Tags()["tensors"] for e in acc.Tensors(tag))


def next_second() -> None:
    """Wait for the next whole second. TensorBoard reads event files in name order, and a name is
    (seconds, host, pid, a counter as text): in one process within one second, the counter's text
    order ("10" < "9") could put the resumed run's file first. A real resume is another command."""
    time.sleep(1.01 - time.time() % 1)


def interrupted(tmp_path: Path, monkeypatch, how: str, at_step: int, **over) -> Path:
    """A run stopped during step ``at_step`` by an exception (no checkpoint) or a SIGTERM (checkpoint)."""
    cfg = tiny_config(tmp_path, name="cut", **over)
    if how == "exception":
        return killed_run(cfg, monkeypatch, at_step=at_step)
    code, run_dir = terminated_run(cfg, monkeypatch, at_step=at_step)
    assert code == 128 + signal.SIGTERM
    return run_dir


# checkpoints every 4 steps: resume from step 0, from step 4; a SIGTERM in step 4 stops right after its checkpoint
@pytest.mark.parametrize(("how", "at_step"), [("exception", 3), ("exception", 7), ("sigterm", 4), ("sigterm", 6)])
def test_resumed_run_shows_each_point_once_and_the_same_points_as_an_uninterrupted_run(tmp_path, monkeypatch,
                                                                                      how, at_step):
    over = {"training.epochs": 2, "training.checkpoint_seconds": 1e6}
    whole, _ = run_mod.train(tiny_config(tmp_path, name="whole", **over), progress=False)
    cut = interrupted(tmp_path, monkeypatch, how, at_step, **over)
    next_second()
    run_mod.resume(cut, progress=False)
    shown = points(cut)
    assert [p for p, count in shown.items() if count > 1] == []
    assert set(points(whole)) <= set(shown)  # a SIGTERM's checkpoint adds its samples at that step
    assert set(shown) - set(points(whole)) <= {("samples", at_step)}
    assert {tag for tag, _ in shown} == {"privacy/epsilon", "train/clip_norm", "partition/noisy_sizes/text_summary",
                                         "samples"}


def test_a_run_without_training_steps_writes_its_samples_once(tmp_path):
    run_dir, _ = run_mod.train(tiny_config(tmp_path, **{"model.kind": "independent"}), progress=False)
    assert (run_dir / "release" / "samples.png").is_file()
    assert points(run_dir)[("samples", 0)] == 1
