"""A small convolutional VAE for square binary images (issue 14): the VAE with conv layers.

Encoder: two 4x4 stride-2 convolutions (28 -> 14 -> 7) and a linear layer to the Gaussian
q(z|x); decoder: a linear layer, then twice nearest-neighbour upsampling and a 3x3
convolution, to Bernoulli logits plus a fixed per-pixel bias (the part's noisy mean image:
``output_bias``). Convolutions share weights across positions, so the model has a fraction of
the MLP's parameters, and DP-SGD's noise, which grows with the parameter count, hurts less.
The ELBO, sampling and the DP-SGD interface are the VAE's (vae.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from dpgm.errors import ConfigError
from dpgm.models.vae import VAE, init_linear


class PixelBias(nn.Module):
    """Adds a fixed per-item offset [n_items] (not trained: set from the noisy mean, and calibrated)."""

    def __init__(self, n_items: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n_items), requires_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.bias


def init_conv(layer: nn.Conv2d, generator: torch.Generator | None) -> None:
    """Re-initialise ``layer`` like nn.Conv2d's default, drawing from ``generator``."""
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
    if layer.bias is not None:
        fan_in = layer.in_channels * math.prod(layer.kernel_size)
        nn.init.uniform_(layer.bias, -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in), generator=generator)


def image_side(n_items: int) -> int:
    """The side of the square image of ``n_items`` pixels; ConfigError unless it is a multiple of 4."""
    side = math.isqrt(n_items)
    if side * side != n_items or side % 4 != 0:
        raise ConfigError(f"model.kind conv_vae needs square images whose side is a multiple of 4 (28 x 28, 8 x 8); "
                          f"{n_items} items are not")
    return side


class ConvVAE(VAE):
    """Conv encoder -> Gaussian q(z|x) -> conv decoder -> Bernoulli logits, for square images of ``n_items`` pixels.

    ``channels`` (c1, c2): the channels of the encoder's two convolutions; the decoder mirrors them.
    """

    def __init__(self, n_items: int, channels: Sequence[int] = (16, 32), latent: int = 8, *,
                 generator: torch.Generator | None = None) -> None:
        nn.Module.__init__(self)
        side = image_side(n_items)
        if latent < 1 or len(channels) != 2 or any(c < 1 for c in channels):
            raise ConfigError(f"ConvVAE needs latent >= 1 and two channel counts >= 1, got {latent}, {list(channels)}")
        c1, c2 = (int(c) for c in channels)
        small = side // 4
        self.n_items, self.latent, self.hidden, self.channels = int(n_items), int(latent), [], [c1, c2]
        self.encoder = nn.Sequential(
            nn.Unflatten(-1, (1, side, side)),
            nn.Conv2d(1, c1, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(c1, c2, 4, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(-3), nn.Linear(c2 * small * small, 2 * self.latent),
        )
        self.decoder = nn.Sequential(
            nn.Linear(self.latent, c2 * small * small), nn.ReLU(), nn.Unflatten(-1, (c2, small, small)),
            nn.Upsample(scale_factor=2), nn.Conv2d(c2, c1, 3, padding=1), nn.ReLU(),
            nn.Upsample(scale_factor=2), nn.Conv2d(c1, 1, 3, padding=1),
            nn.Flatten(-3), PixelBias(self.n_items),
        )
        for layer in [*self.encoder, *self.decoder]:
            if isinstance(layer, nn.Linear):
                init_linear(layer, generator)
            elif isinstance(layer, nn.Conv2d):
                init_conv(layer, generator)
