"""Generative models per part: VAE, convolutional VAE, RBM, independent items, a tree of items and one of a table's
attributes (plain nn.Modules, no privacy code).

Both follow the ``GenerativeModel`` protocol (protocol.py); DP-SGD (dpgm.training.dpsgd) needs
only its ``DPSGDModel`` part.
"""

from __future__ import annotations

import torch
from torch import nn

from dpgm.config import STATISTICS_ONLY, ModelConfig
from dpgm.models.attribute_tree import AttributeTree
from dpgm.models.conv_vae import ConvVAE
from dpgm.models.independent import Independent
from dpgm.models.protocol import DPSGDModel, GenerativeModel
from dpgm.models.rbm import RBM
from dpgm.models.tree import Tree, TreeOptions
from dpgm.models.vae import VAE
from dpgm.registry import Registry

__all__ = ["MODELS", "RBM", "STATISTICS_ONLY", "VAE", "AttributeTree", "ConvVAE", "DPSGDModel", "GenerativeModel",
           "Independent", "Tree", "build_model"]


#: Models by ``model.kind``: each factory takes (model config, options, n_items, generator).
MODELS: Registry[nn.Module] = Registry("model.kind")


def build_model(cfg: ModelConfig, n_items: int, *, generator: torch.Generator | None = None) -> nn.Module:
    """The model registered under ``cfg.kind`` for records of ``n_items`` binary items; ``generator`` seeds init."""
    options = MODELS.options(cfg.kind, cfg.options)
    return MODELS.entry(cfg.kind).factory(cfg, options, n_items, generator)


@MODELS.register("vae", doc="a VAE with Bernoulli outputs (paper section 4.2)")
def _vae(cfg: ModelConfig, _options: None, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return VAE(n_items, hidden=cfg.hidden, latent=cfg.latent, draws=cfg.draws, generator=generator)


@MODELS.register("conv_vae", doc="a small convolutional VAE for square images")
def _conv_vae(cfg: ModelConfig, _options: None, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return ConvVAE(n_items, channels=cfg.channels, latent=cfg.latent, norm=cfg.norm, draws=cfg.draws,
                   generator=generator)


@MODELS.register("rbm", doc="a Bernoulli RBM trained by persistent contrastive divergence")
def _rbm(cfg: ModelConfig, _options: None, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return RBM(n_items, n_hidden=cfg.rbm_hidden, gibbs_steps=cfg.gibbs_steps, chains=cfg.chains, generator=generator)


@MODELS.register("independent", doc="independent items at the part's noisy mean (no DP-SGD)")
def _independent(cfg: ModelConfig, _options: None, n_items: int, _generator: torch.Generator | None) -> nn.Module:
    return Independent(n_items)


@MODELS.register("tree", options=TreeOptions, doc="a tree of items fitted to noisy pair counts (no DP-SGD)")
def _tree(cfg: ModelConfig, options: TreeOptions, n_items: int, _generator: torch.Generator | None) -> nn.Module:
    return AttributeTree(n_items) if options.by_attribute else Tree(n_items)
