"""load_dataset / load_public_sample dispatch on DataConfig, and exit code 2 through a CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpgm.cli import EXIT_USAGE, run_cli
from dpgm.config import DataConfig
from dpgm.data import load_dataset, load_public_sample
from dpgm.errors import ConfigError
from tests.data._helpers import write_idx


def test_digits_source() -> None:
    ds = load_dataset(DataConfig(source="digits", threshold=0.25, limit=100))
    assert ds.records.shape == (100, 64) and ds.meta["threshold"] == 0.25
    assert load_public_sample(DataConfig(source="digits")) is None


def test_transactions_path_relative_to_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "shop.txt").write_text("0 1\n1 2\n2\n")
    monkeypatch.setenv("DPGM_DATA_DIR", str(tmp_path))
    ds = load_dataset(DataConfig(source="transactions", path="shop/shop.txt", top_items=2, limit=2, n_items=3))
    # top_items is the training run's private choice, never an exact-count cut at load time
    assert ds.n_records == 2 and ds.item_names == ["0", "1", "2"]


def test_csv_source_with_labels(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("a,b,y\n1,0,1\n0,1,0\n")
    ds = load_dataset(DataConfig(source="csv", path=str(tmp_path / "d.csv"), label_column="y"))
    assert ds.labels.tolist() == [1, 0] and ds.item_names == ["a", "b"]


def test_mnist_source_and_public_sample_is_the_other_split(tmp_path: Path) -> None:
    for prefix, n in (("train", 4), ("t10k", 3)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", np.full((n, 2, 2), 200))
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.zeros(n))
    cfg = DataConfig(source="mnist", path=str(tmp_path), limit=2)
    assert load_dataset(cfg).name == "mnist-train" and load_dataset(cfg).n_records == 2
    public = load_public_sample(cfg)
    assert public.name == "mnist-test" and public.n_records == 3
    assert (
        load_public_sample(DataConfig(source="mnist", path=str(tmp_path), split="test")).name
        == "mnist-train"
    )


def test_path_required() -> None:
    with pytest.raises(ConfigError, match="data.path"):
        load_dataset(DataConfig(source="csv"))


def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = DataConfig(source="transactions", path=str(tmp_path / "missing.txt.gz"))
    assert run_cli(lambda argv: load_dataset(cfg) and 0, []) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.txt.gz: file not found" in err
