"""Random draws on the generator's own device: one stream whatever device the models run on.

A torch generator draws only on its own device, and a run keeps its randomness in CPU generators
(seeded, saved for bit-identical resume, replayable only when the config gives a seed). A model on
a GPU (``device: cuda``) takes its draws from such a generator on the CPU and moves them there, so
the GPU run draws the very numbers the CPU run draws; DP-SGD's gradient noise, the one draw large
enough to bound a GPU run, is instead drawn on the GPU from a generator that one draw of the CPU
stream seeds each step (``training.device_noise``; docs/guide/distributed.md, "On a GPU").
"""

from __future__ import annotations

import torch

SEED_BOUND = 2**62  # a step's seed: one draw in [0, 2^62) from the run's stream


def draw_device(generator: torch.Generator | None, device: torch.device | str) -> torch.device:
    """Where a draw from ``generator`` is made: the generator's device, or ``device`` for torch's default stream."""
    return torch.device(device) if generator is None else generator.device


def reseed(on: torch.Generator, stream: torch.Generator) -> torch.Generator:
    """``on`` (a generator on another device) seeded by ONE draw from ``stream``: its draws are then
    a function of the stream's state, so they replay with a seed and resume with the saved stream."""
    return on.manual_seed(int(torch.randint(SEED_BOUND, (1,), generator=stream)))
