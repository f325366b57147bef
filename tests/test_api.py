"""The Python API: dpgm.fit (a fitted Synthesizer) -> sample / save / load, sampling by label, and
the README's snippet runs as written (tests/test_synthesizer.py tests the Synthesizer itself)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import dpgm
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def records(n: int = 400, m: int = 12) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.random((n, m)) < 0.3).astype(np.uint8)


def test_fit_sample_save_load(tmp_path):
    release = dpgm.fit(records(), epsilon=2.0, delta=1e-4, seed=0, options={"training.epochs": 1})
    assert isinstance(release, dpgm.Synthesizer) and release.release_.mixture is not None
    report = release.privacy_report
    assert report["epsilon"] <= 2.0 and report["delta"] == 1e-4
    x = release.sample(50, seed=1)
    assert x.shape == (50, 12) and set(np.unique(x)) <= {0, 1}
    np.testing.assert_array_equal(x, release.sample(50, seed=1))  # seeded sampling repeats
    saved = release.save(tmp_path / "shared")
    again = dpgm.load(saved)
    assert again.privacy_report == report and again.item_names == [str(j) for j in range(12)]
    np.testing.assert_array_equal(again.sample(50, seed=1), x)
    with pytest.raises(ConfigError, match="already exists"):
        release.save(saved)


def test_readme_snippet_runs(tmp_path, monkeypatch):
    """The README's Python example, extracted and executed as a user would paste it."""
    text = (ROOT / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 (the test IS running the README)
    assert namespace["synthetic"].shape[0] == 1000


def test_sample_by_label(tmp_path):
    """A run partitioned by label: labels kept, per_label counts, and the labels returned."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 600)
    x = (rng.random((600, 10)) < 0.1 + 0.25 * (np.arange(10) % 3 == labels[:, None])).astype(np.uint8)
    data = BinaryDataset(records=x, item_names=[str(j) for j in range(10)], labels=labels)
    release = dpgm.fit(data, epsilon=4.0, delta=1e-4, seed=0, options={
        "partition.method": "label", "partition.k": 3,
        "training.epochs": 1})
    records, got = release.sample(per_label=40, seed=2, with_labels=True)  # a dataset in, a dataset out
    assert records.records.shape == (120, 10) and np.bincount(got).tolist() == [40, 40, 40]
    np.testing.assert_array_equal(records.labels, got)
    records, got = release.sample(300, seed=3, labels=[0, 2], with_labels=True)
    assert records.n_records == 300 and set(np.unique(got)) <= {0, 2}
    assert release.sample(20, seed=3).records.shape == (20, 10)
    assert release.release_.sample(20, seed=3).shape == (20, 10)  # the Release itself: dense uint8
    with pytest.raises(ConfigError, match="not both"):
        release.sample(10, per_label=5)
    with pytest.raises(ConfigError, match="per_label must be >= 1"):
        release.sample(per_label=0)


def test_with_labels_needs_a_labelled_run():
    release = dpgm.fit(records(), epsilon=2.0, delta=1e-4, seed=0, options={"training.epochs": 1})
    with pytest.raises(ConfigError, match="with_labels needs a run partitioned by label"):
        release.sample(10, with_labels=True)
