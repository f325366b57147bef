"""The report's inputs: files aligned by item, labels from a CSV column, images recognised."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.quality.inputs import load_pair, parse_image_shape, pixel_shape


def test_transactions_pair_is_aligned_and_not_images(report_files) -> None:
    real, syn = load_pair(str(report_files["real"]), report_files["synthetic"])
    assert real.n_items == syn.n_items == 9 and syn.item_names == real.item_names
    assert real.image_shape is None and real.labels is None and syn.labels is None


def test_pixel_csv_with_labels_is_an_image_pair(report_files) -> None:
    real, syn = load_pair(str(report_files["digits_real"]), report_files["digits_syn"])
    assert real.image_shape == syn.image_shape == (8, 8) and real.n_items == 64
    assert real.labels.shape == (60,) and syn.labels.shape == (40,)
    shaped, _ = load_pair(str(report_files["digits_real"]), report_files["digits_syn"], image_shape=(4, 16))
    assert shaped.image_shape == (4, 16)
    with pytest.raises(ConfigError, match="64 items"):
        load_pair(str(report_files["digits_real"]), report_files["digits_syn"], image_shape=(5, 5))


def test_pixel_names_on_a_square_make_images() -> None:
    def data(names: list[str]) -> BinaryDataset:
        return BinaryDataset(records=np.zeros((2, len(names)), dtype=np.uint8), item_names=names)

    assert pixel_shape(data([f"px{j}" for j in range(16)])) == (4, 4)
    assert pixel_shape(data([f"px{j}" for j in range(12)])) is None  # not a square
    assert pixel_shape(data([f"item{j}" for j in range(16)])) is None  # a square of items, not pixels


@pytest.mark.parametrize("text", ["28", "axb", "0x4", "28x28x1"])
def test_bad_image_shape(text: str) -> None:
    with pytest.raises(ConfigError, match="--image-shape"):
        parse_image_shape(text)
    assert parse_image_shape("28X28") == (28, 28)
