"""Random draws on the generator's own device: one stream whatever device the models run on.

A torch generator draws only on its own device, and a run keeps its randomness in CPU generators
(seeded, saved for bit-identical resume, replayable only when the config gives a seed). A model on
a GPU (``device: cuda``) takes its draws from such a generator on the CPU and moves them there, so
the GPU run draws the very numbers the CPU run draws (docs/guide/distributed.md, "On a GPU").
"""

from __future__ import annotations

import torch


def draw_device(generator: torch.Generator | None, device: torch.device | str) -> torch.device:
    """Where a draw from ``generator`` is made: the generator's device, or ``device`` for torch's default stream."""
    return torch.device(device) if generator is None else generator.device
