"""MNIST IDX loader: tiny synthetic IDX files, error cases, and the real files when present."""

from __future__ import annotations

import gzip
import hashlib
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from dpgm.data.mnist import load_mnist, read_idx
from dpgm.errors import ConfigError
from tests.data._helpers import data_error, write_idx


def make_split(
    folder: Path, split: str = "train", n: int = 5, *, gz: bool = True, rows: int = 28
) -> np.ndarray:
    """Write a split of ``n`` images (pixel value = (index * 7) mod 256) and labels 0..n-1."""
    prefix = {"train": "train", "test": "t10k"}[split]
    suffix = ".gz" if gz else ""
    images = ((np.arange(n * rows * rows) * 7) % 256).reshape(n, rows, rows).astype(np.uint8)
    write_idx(folder / f"{prefix}-images-idx3-ubyte{suffix}", images)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte{suffix}", np.arange(n) % 10)
    return images


def test_reads_gzipped_split_and_binarises_with_greater_or_equal(tmp_path: Path) -> None:
    images = make_split(tmp_path, "test", n=4)
    ds = load_mnist("test", directory=tmp_path)
    assert ds.records.shape == (4, 784) and ds.records.dtype == np.uint8
    np.testing.assert_array_equal(ds.records, (images.reshape(4, -1) >= 128).astype(np.uint8))
    assert ds.labels.dtype == np.int64 and ds.labels.tolist() == [0, 1, 2, 3]
    assert ds.item_names[0] == "px0" and ds.item_names[-1] == "px783"
    assert ds.image_shape == (28, 28) and ds.name == "mnist-test"


def test_threshold_boundary_is_inclusive(tmp_path: Path) -> None:
    images = np.array([[[50, 51, 52, 255]]], dtype=np.uint8)  # 51 / 255 == 0.2
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.array([3]))
    ds = load_mnist(directory=tmp_path, threshold=0.2)
    assert ds.records.tolist() == [[0, 1, 1, 1]] and ds.image_shape == (1, 4)


def test_raw_files_and_limit(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=6, gz=False)
    ds = load_mnist("train", directory=tmp_path, limit=2, threshold=0.9)
    assert ds.n_records == 2 and ds.labels.tolist() == [0, 1]
    assert ds.records.sum() == int(((np.arange(2 * 784) * 7) % 256 >= 230).sum())


def test_default_directory_comes_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mnist").mkdir()
    make_split(tmp_path / "mnist", "train", n=3)
    monkeypatch.setenv("DPGM_DATA_DIR", str(tmp_path))
    assert load_mnist().n_records == 3


def test_missing_file_says_download_or_data_dir(tmp_path: Path) -> None:
    data_error(
        lambda: load_mnist(directory=tmp_path),
        "train-images-idx3-ubyte",
        "--download",
        "DPGM_DATA_DIR",
    )


def test_missing_labels_file(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    (tmp_path / "train-labels-idx1-ubyte.gz").unlink()
    data_error(lambda: load_mnist(directory=tmp_path), "train-labels-idx1-ubyte", "not found")


def test_bad_magic(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", np.zeros((2, 28, 28)), magic=0x00000903)
    data_error(
        lambda: load_mnist(directory=tmp_path), "train-images-idx3-ubyte.gz", "magic", "0x00000803"
    )


def test_labels_file_with_image_magic(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros((2, 1, 1)))
    data_error(lambda: load_mnist(directory=tmp_path), "train-labels-idx1-ubyte.gz", "magic")


def test_shape_disagrees_with_size(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", np.zeros((2, 28, 28)), extra=b"\x00" * 5)
    data_error(
        lambda: load_mnist(directory=tmp_path), "train-images-idx3-ubyte.gz", "does not match"
    )


def test_truncated_header(tmp_path: Path) -> None:
    (tmp_path / "short").write_bytes(b"\x00\x00\x08")
    data_error(lambda: read_idx(tmp_path / "short", 3), "short", "too short")


def test_empty_idx(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", np.zeros((0, 28, 28)))
    data_error(lambda: load_mnist(directory=tmp_path), "empty dataset")


def test_label_count_mismatch(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=3)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.arange(2))
    data_error(lambda: load_mnist(directory=tmp_path), "number of labels differs")


def test_corrupt_gzip(tmp_path: Path) -> None:
    make_split(tmp_path, "train", n=2)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"\x1f\x8b\x08garbage")
    data_error(lambda: load_mnist(directory=tmp_path), "train-images-idx3-ubyte.gz", "gzip")


def test_bad_arguments(tmp_path: Path) -> None:
    data_error(lambda: load_mnist("valid", directory=tmp_path), "split")
    with pytest.raises(ConfigError, match="threshold"):
        load_mnist(directory=tmp_path, threshold=1.5)
    with pytest.raises(ConfigError, match="limit"):
        load_mnist(directory=tmp_path, limit=0)


def test_download_copies_torchvision_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--download path with a stand-in for torchvision's MNIST class (tests never download)."""

    class FakeMNIST:
        def __init__(self, root: str, train: bool, download: bool) -> None:
            raw = Path(root) / "MNIST" / "raw"
            raw.mkdir(parents=True)
            for split in ("train", "test"):
                make_split(raw, split, n=2)

    fake = types.ModuleType("torchvision.datasets")
    fake.MNIST = FakeMNIST  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchvision", types.ModuleType("torchvision"))
    monkeypatch.setitem(sys.modules, "torchvision.datasets", fake)
    target = tmp_path / "mnist"
    ds = load_mnist("test", directory=target, download=True)
    assert ds.n_records == 2
    assert sorted(p.name for p in target.iterdir()) == sorted(
        f"{p}-{k}-ubyte.gz" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")
    )


@pytest.fixture(scope="module")
def real_mnist(shared_data_dir: Path) -> Path:
    folder = shared_data_dir / "mnist"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    return folder


def test_real_mnist_splits(real_mnist: Path) -> None:
    train = load_mnist("train", directory=real_mnist)
    test = load_mnist("test", directory=real_mnist)
    assert train.records.shape == (60000, 784) and test.records.shape == (10000, 784)
    assert train.labels[:5].tolist() == [5, 0, 4, 1, 9]  # the published first training labels
    assert np.bincount(test.labels).tolist()[:2] == [980, 1135]
    assert 0.10 < train.records.mean() < 0.16


def test_real_mnist_md5(real_mnist: Path) -> None:
    sums = (real_mnist / "MD5SUMS.uncompressed").read_text().split()
    for digest, name in zip(sums[::2], sums[1::2]):
        with gzip.open(real_mnist / f"{name}.gz", "rb") as fh:
            assert hashlib.md5(fh.read()).hexdigest() == digest, name
