"""Diagnostic (session 10): per-digit conv VAE with a 4x4 bottleneck (a third stride-2 conv): fewer weights.

Validation split, config mnist_labels_conv with every conv_vae replaced by Thin: the architecture of
``model.channels: [8, 16, 16]`` today, but its weights are drawn after a two-convolution model's
(Thin re-initialises its layers), so a run of that config draws other initial weights.
"""
import sys

from torch import nn

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import v_s9_conv

import dpgm.models as dm
from dpgm.models.conv_vae import ConvVAE, PixelBias, init_conv
from dpgm.models.vae import init_linear
from dpgm.training import run


class Thin(ConvVAE):
    def __init__(self, n_items, channels=(8, 16), latent=16, *, generator=None):
        super().__init__(n_items, channels, latent, generator=generator)
        c1, c2 = self.channels
        self.encoder = nn.Sequential(
            nn.Unflatten(-1, (1, 28, 28)),
            nn.Conv2d(1, c1, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(c1, c2, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(c2, c2, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(-3), nn.Linear(c2 * 16, 2 * self.latent))
        self.decoder = nn.Sequential(
            nn.Linear(self.latent, c2 * 16), nn.ReLU(), nn.Unflatten(-1, (c2, 4, 4)),
            nn.Upsample(size=7), nn.Conv2d(c2, c2, 3, padding=1), nn.ReLU(),
            nn.Upsample(scale_factor=2), nn.Conv2d(c2, c1, 3, padding=1), nn.ReLU(),
            nn.Upsample(scale_factor=2), nn.Conv2d(c1, 1, 3, padding=1),
            nn.Flatten(-3), PixelBias(self.n_items))
        for layer in [*self.encoder, *self.decoder]:
            if isinstance(layer, nn.Linear): init_linear(layer, generator)
            elif isinstance(layer, nn.Conv2d): init_conv(layer, generator)

orig = dm.build_model
def build(cfg, n_items, *, generator=None):
    if cfg.kind == "conv_vae":
        return Thin(n_items, cfg.channels, cfg.latent, generator=generator)
    return orig(cfg, n_items, generator=generator)
dm.build_model = build; run.build_model = build

print("weights", sum(q.numel() for q in Thin(784, (8, 16), 16).parameters() if q.requires_grad), flush=True)
v_s9_conv.main("mnist_labels_conv")  # its argument parser: --seed, --tag, --sets
