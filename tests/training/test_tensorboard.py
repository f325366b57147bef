"""TensorBoard after an interrupted-and-resumed run: every (tag, step) appears once, none is lost."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

from dpgm.training import run as run_mod
from tests.training.test_run import killed_run, tiny_config


def points(run_dir: Path) -> Counter[tuple[str, int]]:
    """How often TensorBoard shows each (tag, step) after its purge of orphaned points.

    The plugin accumulator is what the TensorBoard server reads: scalars, images and text all
    arrive as tensors, and a purge step hides every kind.
    """
    acc = EventAccumulator(str(run_dir / "release" / "tensorboard"), size_guidance={"tensors": 0})
    acc.Reload()
    return Counter((tag, e.step) for tag in acc.Tags()["tensors"] for e in acc.Tensors(tag))


@pytest.mark.parametrize("at_step", [3, 7])  # checkpoints every 4 steps: resume from step 0, from step 4
def test_resumed_run_shows_each_point_once_and_the_same_points_as_an_uninterrupted_run(tmp_path, monkeypatch, at_step):
    over = {"training.epochs": 2, "training.checkpoint_seconds": 1e6}
    whole, _ = run_mod.train(tiny_config(tmp_path, name="whole", **over), progress=False)
    cut = killed_run(tiny_config(tmp_path, name="cut", **over), monkeypatch, at_step=at_step)
    run_mod.resume(cut, progress=False)
    shown = points(cut)
    assert [p for p, count in shown.items() if count > 1] == []
    assert set(shown) == set(points(whole))
    assert {tag for tag, _ in shown} == {"privacy/epsilon", "train/clip_norm", "partition/noisy_sizes/text_summary",
                                         "samples"}
