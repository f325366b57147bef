"""Generative models per part: VAE, convolutional VAE, RBM, independent items, a tree of items and one of a table's
attributes (plain nn.Modules, no privacy code).

Both follow the ``GenerativeModel`` protocol (protocol.py); DP-SGD (dpgm.training.dpsgd) needs
only its ``DPSGDModel`` part.
"""

from __future__ import annotations

import torch
from torch import nn

from dpgm.config import STATISTICS_ONLY, ModelConfig
from dpgm.errors import ConfigError
from dpgm.models.attribute_tree import AttributeTree
from dpgm.models.conv_vae import ConvVAE, ConvVaeOptions
from dpgm.models.independent import Independent
from dpgm.models.protocol import DPSGDModel, GenerativeModel
from dpgm.models.rbm import RBM, RbmOptions
from dpgm.models.table_vae import TableVAE, TableVaeOptions
from dpgm.models.tree import Tree, TreeOptions
from dpgm.models.vae import VAE, VaeOptions
from dpgm.registry import Registry

__all__ = ["MODELS", "RBM", "STATISTICS_ONLY", "VAE", "AttributeTree", "ConvVAE", "ConvVaeOptions", "DPSGDModel",
           "GenerativeModel", "Independent", "RbmOptions", "TableVAE", "TableVaeOptions", "Tree", "TreeOptions",
           "VaeOptions", "build_model"]


#: Models by ``model.kind``: each factory takes (model config, options, n_items, generator).
MODELS: Registry[nn.Module] = Registry("model.kind")


def build_model(cfg: ModelConfig, n_items: int, *, generator: torch.Generator | None = None) -> nn.Module:
    """The model registered under ``cfg.kind`` for records of ``n_items`` binary items; ``generator`` seeds init."""
    options = MODELS.options(cfg.kind, cfg.options)
    return MODELS.entry(cfg.kind).factory(cfg, options, n_items, generator)


@MODELS.register("vae", options=VaeOptions, doc="a VAE with Bernoulli outputs (paper section 4.2)")
def _vae(cfg: ModelConfig, options: VaeOptions, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return VAE(n_items, hidden=options.hidden, latent=options.latent, draws=options.draws, generator=generator)


@MODELS.register("table_vae", options=TableVaeOptions,
                 doc="a VAE for a declared table: one softmax output per attribute over its values")
def _table_vae(cfg: ModelConfig, options: TableVaeOptions, n_items: int,
               generator: torch.Generator | None) -> nn.Module:
    if options.attribute_sizes is None:
        raise ConfigError("model.kind table_vae needs data.attribute_sizes or data.schema (the attributes it draws)")
    return TableVAE(n_items, options.attribute_sizes, hidden=options.hidden, latent=options.latent,
                    draws=options.draws, generator=generator)


@MODELS.register("conv_vae", options=ConvVaeOptions, doc="a small convolutional VAE for square images")
def _conv_vae(cfg: ModelConfig, options: ConvVaeOptions, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return ConvVAE(n_items, channels=options.channels, latent=options.latent, norm=options.norm, draws=options.draws,
                   generator=generator)


@MODELS.register("rbm", options=RbmOptions, doc="a Bernoulli RBM trained by persistent contrastive divergence")
def _rbm(cfg: ModelConfig, options: RbmOptions, n_items: int, generator: torch.Generator | None) -> nn.Module:
    return RBM(n_items, n_hidden=options.hidden, gibbs_steps=options.gibbs_steps, chains=options.chains,
               generator=generator)


@MODELS.register("independent", doc="independent items at the part's noisy mean (no DP-SGD)")
def _independent(cfg: ModelConfig, _options: None, n_items: int, _generator: torch.Generator | None) -> nn.Module:
    return Independent(n_items)


@MODELS.register("tree", options=TreeOptions, doc="a tree of items fitted to noisy pair counts (no DP-SGD)")
def _tree(cfg: ModelConfig, options: TreeOptions, n_items: int, _generator: torch.Generator | None) -> nn.Module:
    return AttributeTree(n_items) if options.by_attribute else Tree(n_items)
