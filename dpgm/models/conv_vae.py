"""A small convolutional VAE for square binary images: the VAE with conv layers.

Encoder: stride-2 convolutions (``model.channels``; two: 28 -> 14 -> 7) and a linear layer to the
Gaussian q(z|x); decoder: a linear layer, then per convolution a nearest-neighbour upsampling and
a 3x3 convolution, to Bernoulli logits plus a fixed per-pixel bias (the part's noisy mean image:
``output_bias``). Convolutions share weights across positions, so the model has a fraction of
the MLP's parameters, and DP-SGD's noise, which grows with the parameter count, hurts less.
The ELBO, sampling and the DP-SGD interface are GaussianVAE's (vae.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from dpgm.config_fields import opt
from dpgm.errors import ConfigError
from dpgm.models.vae import DRAWS_DOC, GaussianVAE, init_linear


@dataclass(frozen=True)
class ConvVaeOptions:
    """``model.options`` of ``model.kind: conv_vae``: its convolutions, latent dimension and draws."""

    channels: list[int] = opt([16, 32], "channels of the encoder's stride-2 convolutions, one count per "  # noqa: RUF009
                                        "convolution (28 x 28 images: two give 7 x 7 feature maps, three 4 x 4); the "
                                        "decoder mirrors them")
    latent: int = opt(2, "latent dimension")
    norm: bool = opt(False, "group normalisation (groups of up to 4 channels, no affine parameters: nothing outside "
                            "the clipped layers) after every hidden convolution")
    draws: int = opt(1, DRAWS_DOC)

    def __post_init__(self) -> None:
        if not (len(self.channels) >= 1 and all(c >= 1 for c in self.channels)):
            raise ValueError(f"channels must be one or more counts >= 1, got {self.channels}")
        if not (self.latent >= 1 and self.draws >= 1):
            raise ValueError(f"latent and draws must be >= 1, got {self.latent}, {self.draws}")


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
    """The side of the square image of ``n_items`` pixels; ConfigError unless it is square and at least 4 x 4."""
    side = math.isqrt(n_items)
    if side * side != n_items or side < 4:
        raise ConfigError(f"model.kind conv_vae needs square images of at least 4 x 4 pixels; {n_items} items are not")
    return side


def halvings(side: int, times: int) -> list[int]:
    """The sides of the feature maps after each of ``times`` stride-2 convolutions, from ``side``:
    28 -> [28, 14, 7, 4] for 3 (each side is ceil(previous / 2))."""
    sides = [side]
    for _ in range(times):
        sides.append((sides[-1] + 1) // 2)
    return sides


def down(c_in: int, c_out: int, side: int) -> nn.Conv2d:
    """A stride-2 convolution from ``side`` to ceil(side / 2): 4x4 kernel on even sides, 3x3 on odd."""
    return nn.Conv2d(c_in, c_out, 4 if side % 2 == 0 else 3, stride=2, padding=1)


def group_norm(channels: int, on: bool) -> list[nn.Module]:
    """[GroupNorm] over groups of up to 4 channels, no affine parameters, if ``on``; else []."""
    return [nn.GroupNorm(channels // math.gcd(channels, 4), channels, affine=False)] if on else []


class ConvVAE(GaussianVAE):
    """Conv encoder -> Gaussian q(z|x) -> conv decoder -> Bernoulli logits, for square images of ``n_items`` pixels.

    ``channels`` (c1, ..., cL): the channels of the encoder's L stride-2 convolutions (28 -> 14 -> 7 ->
    4 ...); the decoder mirrors them, each step a nearest-neighbour upsampling and a 3x3 convolution.
    ``norm``: a group normalisation without affine parameters after every hidden convolution (per
    record, so DP-SGD's per-record gradients stay per record; no weight outside the clipped layers).
    """

    def __init__(self, n_items: int, channels: Sequence[int] = (16, 32), latent: int = 8, *,
                 norm: bool = False, draws: int = 1, generator: torch.Generator | None = None) -> None:
        side = image_side(n_items)
        if latent < 1 or len(channels) < 1 or any(c < 1 for c in channels):
            raise ConfigError("ConvVAE needs latent >= 1 and one or more channel counts >= 1, "
                              f"got {latent}, {list(channels)}")
        widths = [1, *(int(c) for c in channels)]
        sides = halvings(side, len(channels))
        flat = widths[-1] * sides[-1] ** 2
        encoder: list[nn.Module] = [nn.Unflatten(-1, (1, side, side))]
        for c_in, c_out, s in zip(widths, widths[1:], sides):
            encoder += [down(c_in, c_out, s), *group_norm(c_out, norm), nn.ReLU()]
        encoder += [nn.Flatten(-3), nn.Linear(flat, 2 * int(latent))]
        decoder: list[nn.Module] = [nn.Linear(int(latent), flat), nn.ReLU(),
                                    nn.Unflatten(-1, (widths[-1], sides[-1], sides[-1]))]
        for i in range(len(channels), 0, -1):  # back up: sides[i] -> sides[i - 1], widths[i] -> widths[i - 1]
            decoder += [nn.Upsample(size=sides[i - 1]), nn.Conv2d(widths[i], widths[i - 1], 3, padding=1),
                        *group_norm(widths[i - 1], norm and i > 1), nn.ReLU()]
        decoder[-1:] = [nn.Flatten(-3), PixelBias(n_items)]  # no ReLU (nor norm) on the logits
        super().__init__(n_items, latent, nn.Sequential(*encoder), nn.Sequential(*decoder), draws)
        self.channels = widths[1:]
        for layer in [*self.encoder, *self.decoder]:
            if isinstance(layer, nn.Linear):
                init_linear(layer, generator)
            elif isinstance(layer, nn.Conv2d):
                init_conv(layer, generator)
