"""Image grids as PNG: sample grids of a run and of a release (post-processing only).

A PNG grid is scaled up by an integer factor (nearest neighbour, ``PNG_SCALE``) so that a
person can see each image: an 8x8 digit is a 32x32 block, a 28x28 one 112x112, with a thin
grey separator between cells.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dpgm.io import atomic_write

#: Nearest-neighbour scale factor of every PNG grid dpgm writes.
PNG_SCALE = 4
#: Grey level of the separators between cells and of empty cells.
BACKGROUND = 0.5


def image_rows(rows: Sequence[np.ndarray], *, scale: int = 1, gap: int = 1) -> np.ndarray:
    """Tile rows of images (each [n_r, h, w], rows may differ in length or be empty) into one array.

    Every image is scaled ``scale`` times (nearest neighbour); cells are ``gap`` pixels apart;
    short rows are padded with the background, so row r of the grid is ``rows[r]``.
    """
    if scale < 1 or gap < 0:
        raise ValueError(f"scale must be >= 1 and gap >= 0, got {scale}, {gap}")
    if not rows:
        raise ValueError("image_rows: no rows to draw")
    h, w = (s * scale for s in rows[0].shape[1:])
    ncol = max(1, max(len(row) for row in rows))
    grid = np.full((len(rows) * (h + gap) - gap, ncol * (w + gap) - gap), BACKGROUND, dtype=np.float32)
    for r, row in enumerate(rows):
        for c, img in enumerate(np.asarray(row, dtype=np.float32)):
            top, left = r * (h + gap), c * (w + gap)
            grid[top: top + h, left: left + w] = img.repeat(scale, axis=0).repeat(scale, axis=1)
    return grid


def image_grid(images: np.ndarray, nrow: int, *, scale: int = 1, gap: int = 1) -> np.ndarray:
    """Tile images [n, h, w], ``nrow`` to a row, into one array (see ``image_rows``)."""
    images = np.asarray(images, dtype=np.float32)
    return image_rows([images[i: i + nrow] for i in range(0, len(images), nrow)], scale=scale, gap=gap)


def save_png(path: Path, grid: np.ndarray) -> None:
    """Save a grey-level array (values in [0, 1]) as an RGB PNG, atomically (Pillow: a run that writes its
    sample grid does not pay for importing matplotlib)."""
    from PIL import Image

    grey = np.round(np.clip(np.asarray(grid, dtype=np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(np.repeat(grey[..., None], 3, axis=2)).save(buf, format="png")
    with atomic_write(path, "wb") as fh:
        fh.write(buf.getvalue())


def write_png_grid(path: Path, images: np.ndarray, nrow: int, *, scale: int = PNG_SCALE) -> None:
    """Save a grid of images (values in [0, 1]), ``nrow`` to a row, scaled ``scale`` times, as a PNG."""
    save_png(path, image_grid(images, nrow, scale=scale))


def write_png_rows(path: Path, rows: Sequence[np.ndarray], *, scale: int = PNG_SCALE) -> None:
    """Save one grid row per entry of ``rows`` (e.g. one per label), scaled ``scale`` times, as a PNG."""
    save_png(path, image_rows(rows, scale=scale))


@torch.no_grad()
def part_sample_grid(mixture_models: list[nn.Module], image_shape: tuple[int, int], generator: torch.Generator,
                     per_part: int = 8) -> np.ndarray:
    """Images [k * per_part, h, w]: one row of Bernoulli means per part (paper Fig. 4)."""
    rows = [m.sample_probs(per_part, generator).reshape(per_part, *image_shape).cpu().numpy() for m in mixture_models]
    return np.concatenate(rows)
