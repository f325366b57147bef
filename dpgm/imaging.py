"""Image grids as PNG: sample grids of a run and of a release (post-processing only)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dpgm.io import atomic_write


def image_grid(images: np.ndarray, nrow: int) -> np.ndarray:
    """Tile images [n, h, w] into one [rows*(h+1)-1, nrow*(w+1)-1] array with 1-pixel gaps."""
    n, h, w = images.shape
    rows = -(-n // nrow)
    grid = np.full((rows * (h + 1) - 1, nrow * (w + 1) - 1), 0.5, dtype=np.float32)
    for i, img in enumerate(images):
        r, c = divmod(i, nrow)
        grid[r * (h + 1): r * (h + 1) + h, c * (w + 1): c * (w + 1) + w] = img
    return grid


def write_png_grid(path: Path, images: np.ndarray, nrow: int) -> None:
    """Save a grid of images (values in [0, 1]) as a PNG, atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    plt.imsave(buf, image_grid(np.asarray(images, dtype=np.float32), nrow), cmap="gray", vmin=0, vmax=1, format="png")
    with atomic_write(path, "wb") as fh:
        fh.write(buf.getvalue())


@torch.no_grad()
def part_sample_grid(mixture_models: list[nn.Module], image_shape: tuple[int, int], generator: torch.Generator,
                     per_part: int = 8) -> np.ndarray:
    """Images [k * per_part, h, w]: one row of Bernoulli means per part (paper Fig. 4)."""
    rows = [m.sample_probs(per_part, generator).reshape(per_part, *image_shape).cpu().numpy() for m in mixture_models]
    return np.concatenate(rows)
