"""benchmarks/train_on_synthetic.py: it refuses to select on the test set, and a tiny run works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests._benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "train_on_synthetic.py"




def test_selecting_on_the_test_set_is_refused_before_any_data_is_loaded(tmp_path):
    env = {**os.environ, "DPGM_DATA_DIR": str(tmp_path / "absent"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(SCRIPT), "--select-on", "test", "--json", str(tmp_path / "x.json")],
                         check=False, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith("selecting on the test set is not allowed: ")
    assert out.stderr.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


def test_the_classifier_itself_refuses_the_test_set():
    import numpy as np
    import pytest

    tos = load_benchmark("train_on_synthetic")
    with pytest.raises(tos.Refused, match="test set"):
        tos.train_classifier(np.zeros((4, 64)), np.zeros(4, dtype=int), (8, 8), epochs=1, seed=0, select_on="test")


def test_a_tiny_digits_run_writes_every_method_with_accuracies(tmp_path, capsys):
    tos = load_benchmark("train_on_synthetic")
    path, png = tmp_path / "tos.json", tmp_path / "tos.png"
    code = tos.main(["--dataset", "digits", "--limit", "400", "--epsilons", "10", "--seeds", "1", "--release", "500",
                     "--classifier-epochs", "2", "--select-on", "validation", "--set", "training.epochs=2",
                     "--json", str(path), "--png", str(png)])
    assert code == 0
    payload = json.loads(path.read_text())
    results = payload["results"]
    assert sorted(r["method"] for r in results) == ["dpgm", "nonprivate", "real"]
    for r in results:
        assert {"epsilon", "seed", "method", "accuracy", "seconds"} <= set(r)
        assert 0.0 <= r["accuracy"] <= 1.0
        assert r["seconds"] > 0
        assert r["seed"] == 0
    assert next(r for r in results if r["method"] == "dpgm")["epsilon"] == 10.0
    spent = next(p for p in payload["privacy"] if p["method"] == "dpgm")
    assert spent["epsilon_spent"] <= 10.0 + 1e-6 and spent["delta"] == 1e-5
    assert payload["provenance"]["torch_threads"] == 1
    assert png.stat().st_size > 0
    assert "threads: 1" in capsys.readouterr().out


def test_repeats_average_classifiers_on_fresh_draws_and_the_first_is_the_plain_run(tmp_path):
    tos = load_benchmark("train_on_synthetic")
    common = ["--dataset", "digits", "--limit", "400", "--epsilons", "10", "--seeds", "1", "--release", "300",
              "--classifier-epochs", "1", "--no-nonprivate", "--no-real", "--set", "training.epochs=2"]
    plain, repeated = tmp_path / "plain.json", tmp_path / "repeated.json"
    assert tos.main([*common, "--json", str(plain)]) == 0
    assert tos.main([*common, "--repeats", "3", "--json", str(repeated)]) == 0
    (one,) = json.loads(plain.read_text())["results"]
    (three,) = json.loads(repeated.read_text())["results"]
    assert len(three["accuracies"]) == 3 and three["accuracy"] == sum(three["accuracies"]) / 3
    assert three["accuracies"][0] == one["accuracy"] == one["accuracies"][0]
    assert [tos.repeat_seed(5, r) for r in range(3)] == [5, 1_000_008, 2_000_011]
    assert tos.main([*common, "--repeats", "0"]) == 2


def test_evaluating_on_validation_holds_out_the_last_training_images_and_never_loads_test(monkeypatch):
    tos = load_benchmark("train_on_synthetic")
    args = tos.parse_args(["--dataset", "mnist", "--evaluate-on", "validation"])
    loaded = []

    def fake_mnist(split, threshold, directory):
        import numpy as np

        from dpgm.data.dataset import BinaryDataset

        loaded.append(split)
        n = 12_000
        return BinaryDataset(records=np.zeros((n, 4), np.uint8), item_names=list("abcd"),
                             labels=np.arange(n) % 10, image_shape=(2, 2))

    monkeypatch.setattr("dpgm.data.load_mnist", fake_mnist)
    monkeypatch.setattr("dpgm.data.data_dir", lambda: Path("/nowhere"))
    train, held = tos.load_data(args, 0.5)
    assert loaded == ["train"]
    assert (train.n_records, held.n_records) == (2_000, tos.HOLDOUT["mnist"])
    assert held.labels[0] == 2_000 % 10  # the tail of the training set, in order
