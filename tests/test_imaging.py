"""Image grids: nearest-neighbour scaling, thin separators, one row per entry (ragged rows padded)."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pytest

from dpgm.imaging import (
    BACKGROUND,
    PNG_SCALE,
    image_grid,
    image_rows,
    write_png_grid,
    write_png_rows,
)


def test_a_scaled_grid_blows_each_pixel_up_to_a_block():
    images = np.random.default_rng(0).integers(0, 2, (3, 2, 2)).astype(np.float32)
    grid = image_grid(images, nrow=2, scale=3)
    assert grid.shape == (2 * 6 + 1, 2 * 6 + 1)  # two rows of 6x6 cells, one separator between
    np.testing.assert_array_equal(grid[:6, :6], np.kron(images[0], np.ones((3, 3))))
    np.testing.assert_array_equal(grid[7:, 7:], BACKGROUND)  # the fourth cell is empty
    assert (grid[6, :] == BACKGROUND).all() and (grid[:, 6] == BACKGROUND).all()


def test_rows_keep_their_place_even_when_short_or_empty():
    full, short, empty = np.ones((3, 2, 2)), np.zeros((1, 2, 2)), np.zeros((0, 2, 2))
    grid = image_rows([full, empty, short], scale=1)
    assert grid.shape == (3 * 3 - 1, 3 * 3 - 1)
    assert (grid[0:2, :] != 0).all()  # row 0: three ones with grey between
    assert (grid[3:5, :] == BACKGROUND).all()  # row 1: empty
    assert (grid[6:8, 0:2] == 0).all() and (grid[6:8, 3:] == BACKGROUND).all()


def test_png_grids_are_scaled_for_people(tmp_path):
    """A 28x28 digit is 112x112 pixels in the PNG: readable without zooming."""
    digits = np.random.default_rng(1).integers(0, 2, (4, 28, 28)).astype(np.float32)
    write_png_grid(tmp_path / "grid.png", digits, nrow=2)
    grid = matplotlib.image.imread(tmp_path / "grid.png")[..., 0]
    cell = 28 * PNG_SCALE
    assert cell == 112 and grid.shape == (2 * cell + 1, 2 * cell + 1)
    np.testing.assert_allclose(grid[:cell:PNG_SCALE, :cell:PNG_SCALE], digits[0], atol=1e-6)
    write_png_rows(tmp_path / "rows.png", [digits[:1], digits[1:]])
    assert matplotlib.image.imread(tmp_path / "rows.png").shape[:2] == (2 * cell + 1, 3 * cell + 2)


def test_bad_scale_is_refused():
    with pytest.raises(ValueError, match="scale"):
        image_rows([np.zeros((1, 2, 2))], scale=0)
