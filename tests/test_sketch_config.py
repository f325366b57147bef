"""configs/sketch.yaml: the shipped `partition.method: sketch` run trains end to end (tiny budget)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpgm.config import load_config
from dpgm.pipeline.run import train

ROOT = Path(__file__).resolve().parents[1]


def test_sketch_config_trains_on_a_tiny_budget(tmp_path):
    overrides = [f"runs_dir={tmp_path}", "seed=0", "data.limit=300", "training.epochs=1",
                 "partition.options.size=100", "partition.options.decodes=1"]
    cfg = load_config(ROOT / "configs/sketch.yaml", overrides)
    assert cfg.partition.method == "sketch" and cfg.data.source == "digits"
    run_dir, report = train(cfg, progress=False)
    assert report["plan"]["partition"] == "sketch" and len(report["noisy_part_sizes"]) == cfg.partition.k
    assert report["stage_epsilons"]["partition"] == pytest.approx(cfg.partition.target_epsilon, rel=1e-3)
    assert (run_dir / "release" / "privacy_report.json").is_file() and (run_dir / "release" / "models.pt").is_file()
