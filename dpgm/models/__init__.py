"""Generative models trained per part: VAE and RBM (plain nn.Modules, no privacy code).

Both follow the ``GenerativeModel`` protocol that DP-SGD (dpgm.training.dpsgd) relies on.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from dpgm.config import ModelConfig
from dpgm.errors import ConfigError
from dpgm.models.rbm import RBM
from dpgm.models.vae import VAE

__all__ = ["RBM", "VAE", "GenerativeModel", "build_model"]


@runtime_checkable
class GenerativeModel(Protocol):
    """What training and release need from a model.

    ``loss_per_record`` is the data term: one loss per row, each depending on its own row only.
    ``post_processing_loss`` is a term computed from the parameters alone (RBM negative phase),
    added after privatisation, or None. ``output_bias`` is the bias of the Bernoulli output layer
    (an offset added to every record's logits), which dpgm.training.part_means sets and calibrates;
    ``sample_logits`` are the output logits of fresh samples.
    """

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor: ...

    def post_processing_loss(self, generator: torch.Generator | None) -> Tensor | None: ...

    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor: ...

    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor: ...

    def output_bias(self) -> Tensor: ...

    def sample(self, n: int, generator: torch.Generator | None) -> Tensor: ...


def build_model(cfg: ModelConfig, n_items: int, *, generator: torch.Generator | None = None) -> nn.Module:
    """The model named by ``cfg.kind`` for records of ``n_items`` binary items; ``generator`` seeds init."""
    if cfg.kind == "vae":
        return VAE(n_items, hidden=cfg.hidden, latent=cfg.latent, generator=generator)
    if cfg.kind == "rbm":
        return RBM(n_items, n_hidden=cfg.rbm_hidden, gibbs_steps=cfg.gibbs_steps, chains=cfg.chains, generator=generator)
    raise ConfigError(f"model.kind: unknown model {cfg.kind!r}")
