"""The Python API: fit -> Release -> sample / save / load, and the README's snippet runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import dpgm
from dpgm.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def records(n: int = 400, m: int = 12) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.random((n, m)) < 0.3).astype(np.uint8)


def test_fit_sample_save_load(tmp_path):
    release = dpgm.fit(records(), epsilon=2.0, delta=1e-4, seed=0, **{"training.epochs": 1})
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
