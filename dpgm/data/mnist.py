"""MNIST from the standard IDX files (gzipped or raw), binarised at a threshold (paper: 0.5)."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path
from typing import Literal

import numpy as np

from dpgm.data.dataset import BinaryDataset
from dpgm.data.paths import DATA_DIR_ENV, check_limit, check_threshold, data_dir, read_bytes
from dpgm.errors import DataError
from dpgm.io import atomic_write

SPLIT_PREFIX = {"train": "train", "test": "t10k"}
IDX_UBYTE = 0x08  # IDX type code of unsigned bytes, the only one MNIST uses


def mnist_files(split: str) -> tuple[str, str]:
    """The IDX file names (without ``.gz``) of a split's images and labels."""
    if split not in SPLIT_PREFIX:
        raise DataError(f"unknown MNIST split {split!r} (expected 'train' or 'test')")
    prefix = SPLIT_PREFIX[split]
    return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"


def _find(directory: Path, name: str) -> Path | None:
    """The raw file when present (faster), else the gzipped one, else None."""
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """An unsigned-byte IDX array of ``ndim`` dimensions, validated against its header."""
    raw = read_bytes(path)
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path}: too short for an IDX header")
    magic = struct.unpack(">I", raw[:4])[0]
    expected = (IDX_UBYTE << 8) | ndim
    if magic != expected:  # its bytes are shown nowhere: a wrong file's first bytes may be private
        raise DataError(
            f"{path}: bad IDX magic number (expected 0x{expected:08x}: unsigned bytes, {ndim}-d)"
        )
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    if 0 in shape:  # the shape holds the number of records: it is not shown
        raise DataError(f"{path}: empty dataset (an IDX dimension is 0)")
    if len(raw) - header != int(np.prod(shape, dtype=np.int64)):
        raise DataError(
            f"{path}: the IDX header's shape does not match the data's length "
            "(truncated or corrupt file)"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def download_mnist(directory: Path) -> None:
    """Fetch the four gzipped IDX files with torchvision's downloader into ``directory``."""
    try:
        from torchvision.datasets import MNIST
    except ImportError:  # pragma: no cover - torchvision is a dependency
        raise DataError("--download needs torchvision (pip install torchvision)") from None
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".mnist-download-") as tmp:
        try:
            MNIST(root=tmp, train=True, download=True)
        except (OSError, RuntimeError) as exc:
            raise DataError(f"{directory}: MNIST download failed ({exc})") from None
        raw = Path(tmp) / "MNIST" / "raw"
        for split in SPLIT_PREFIX:
            for name in mnist_files(split):
                source = _find(raw, name + ".gz") or _find(raw, name)
                if source is None:
                    raise DataError(f"{directory}: MNIST download did not produce {name}")
                with atomic_write(directory / source.name, "wb") as out, source.open("rb") as src:
                    shutil.copyfileobj(src, out)


def load_mnist(
    split: Literal["train", "test"] = "train",
    *,
    threshold: float = 0.5,
    directory: str | Path | None = None,
    download: bool = False,
    limit: int | None = None,
) -> BinaryDataset:
    """MNIST ``split`` as 784 binary pixels: pixel / 255 >= threshold gives 1 (paper: 0.5).

    Reads ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` from ``directory`` (default
    ``data_dir() / "mnist"``); ``download`` fetches missing files with torchvision first.
    """
    check_threshold(threshold)
    check_limit(limit)
    folder = Path(directory).expanduser() if directory is not None else data_dir() / "mnist"
    image_name, label_name = mnist_files(split)
    if download and (_find(folder, image_name) is None or _find(folder, label_name) is None):
        download_mnist(folder)
    paths = []
    for name in (image_name, label_name):
        found = _find(folder, name)
        if found is None:
            raise DataError(
                f"{folder / name}[.gz]: MNIST file not found (pass --download to fetch it, "
                f"or set {DATA_DIR_ENV} to a folder holding mnist/)"
            )
        paths.append(found)
    images = read_idx(paths[0], 3)
    labels = read_idx(paths[1], 1)
    if labels.shape[0] != images.shape[0]:
        raise DataError(  # the counts are private: only that they differ is said
            f"{paths[1]}: the number of labels differs from the number of images in "
            f"{paths[0].name}"
        )
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    rows, cols = images.shape[1:]
    # Exact float64 comparison per grey level, then one table look-up per pixel.
    table = (np.arange(256) / 255.0 >= threshold).astype(np.uint8)
    return BinaryDataset(
        records=table[images.reshape(images.shape[0], rows * cols)],
        item_names=[f"px{j}" for j in range(rows * cols)],
        labels=labels.astype(np.int64),
        name=f"mnist-{split}",
        image_shape=(int(rows), int(cols)),
        source=str(paths[0]),
        meta={"split": split, "threshold": float(threshold)},
    )
