"""The report's two inputs: the real records and the release, aligned item by item.

The real data is a file (transactions, or CSV with a header) or a named image source
(``digits``, ``mnist``, ``mnist:test``, binarised at 0.5 as in training). The release is a
CSV or transactions file as ``generate.py`` writes it. Records are images when the real data
says so (its loader set ``image_shape``), when ``image_shape`` is given, or when the items are
named ``px0 .. px{m-1}`` (dpgm's pixel names) and m is a perfect square.
"""

from __future__ import annotations

import math
from pathlib import Path

from dpgm.data.dataset import BinaryDataset
from dpgm.data.digits import load_digits
from dpgm.data.mnist import load_mnist
from dpgm.data.paths import resolve_data_path
from dpgm.errors import ConfigError
from dpgm.evaluation.counting import load_records, load_synthetic

NAMED_SOURCES = ("digits", "mnist", "mnist:train", "mnist:test")


def is_named_source(spec: str) -> bool:
    """Whether ``spec`` names a built-in image source rather than a file."""
    return spec in NAMED_SOURCES


def load_real(
    spec: str, *, label_column: str | None = "label", top_items: int | None = None, limit: int | None = None
) -> BinaryDataset:
    """The real records of ``spec``: a named image source (with labels) or a data file."""
    if is_named_source(spec):
        if top_items is not None:
            raise ConfigError(f"--top-items applies to transaction files, not {spec}")
        if spec == "digits":
            return load_digits(limit=limit)
        return load_mnist(spec.partition(":")[2] or "train", limit=limit)  # type: ignore[arg-type]
    return load_records(resolve_data_path(spec), top_items=top_items, limit=limit, label_column=label_column)


def pixel_shape(data: BinaryDataset) -> tuple[int, int] | None:
    """(s, s) when the items are dpgm's pixel names px0 .. px{s*s-1}, else None."""
    side = math.isqrt(data.n_items)
    if side * side != data.n_items or side < 2:
        return None
    return (side, side) if data.item_names == [f"px{j}" for j in range(data.n_items)] else None


def parse_image_shape(text: str) -> tuple[int, int]:
    """``"28x28"`` as (28, 28)."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ConfigError(f"--image-shape: expected HxW such as 28x28, got {text!r}") from None
    if h < 1 or w < 1:
        raise ConfigError(f"--image-shape: sides must be >= 1, got {text!r}")
    return h, w


def load_pair(
    real_spec: str,
    synthetic_path: str | Path,
    *,
    label_column: str | None = "label",
    top_items: int | None = None,
    limit: int | None = None,
    image_shape: tuple[int, int] | None = None,
) -> tuple[BinaryDataset, BinaryDataset]:
    """(real, synthetic) over the same items in the same order, both with the image shape if any."""
    real = load_real(real_spec, label_column=label_column, top_items=top_items, limit=limit)
    shape = image_shape or real.image_shape or pixel_shape(real)
    if shape is not None and shape[0] * shape[1] != real.n_items:
        raise ConfigError(f"--image-shape {shape[0]}x{shape[1]}: the data has {real.n_items} items")
    real.image_shape = shape
    synthetic = load_synthetic(synthetic_path, real, label_column=label_column)
    return real, synthetic
