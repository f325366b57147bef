"""Generative models per part: VAE, convolutional VAE, RBM and independent items (plain nn.Modules, no privacy code).

Both follow the ``GenerativeModel`` protocol (protocol.py); DP-SGD (dpgm.training.dpsgd) needs
only its ``DPSGDModel`` part.
"""

from __future__ import annotations

import torch
from torch import nn

from dpgm.config import ModelConfig
from dpgm.errors import ConfigError
from dpgm.models.conv_vae import ConvVAE
from dpgm.models.independent import Independent
from dpgm.models.protocol import DPSGDModel, GenerativeModel
from dpgm.models.rbm import RBM
from dpgm.models.vae import VAE

__all__ = ["RBM", "VAE", "ConvVAE", "DPSGDModel", "GenerativeModel", "Independent", "build_model"]


def build_model(cfg: ModelConfig, n_items: int, *, generator: torch.Generator | None = None) -> nn.Module:
    """The model named by ``cfg.kind`` for records of ``n_items`` binary items; ``generator`` seeds init."""
    if cfg.kind == "vae":
        return VAE(n_items, hidden=cfg.hidden, latent=cfg.latent, draws=cfg.draws, generator=generator)
    if cfg.kind == "conv_vae":
        return ConvVAE(n_items, channels=cfg.channels, latent=cfg.latent, norm=cfg.norm, draws=cfg.draws, generator=generator)
    if cfg.kind == "rbm":
        return RBM(n_items, n_hidden=cfg.rbm_hidden, gibbs_steps=cfg.gibbs_steps, chains=cfg.chains, generator=generator)
    if cfg.kind == "independent":
        return Independent(n_items)
    raise ConfigError(f"model.kind: unknown model {cfg.kind!r}")
