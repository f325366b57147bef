"""Variational autoencoder for binary records (DPGM paper, section 4.2): Bernoulli decoder.

``GaussianVAE`` is what every VAE here shares (ELBO, sampling, the DP-SGD interface), given an
encoder and a decoder; ``VAE`` is the paper's, with MLPs. Plain nn.Modules with no privacy code.
Each record's loss depends on its own row only, and the MLP VAE's trainable parameters all live
in nn.Linear layers called once per forward pass, so DP-SGD clips per record without
materialising per-record gradients (dpgm.training.per_sample).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.config_fields import opt
from dpgm.errors import ConfigError
from dpgm.models.binary_rows import BinaryRows, RowsLinear
from dpgm.models.protocol import BernoulliSampling, NoPostProcessing
from dpgm.streams import draw_device

#: Help of the latent draws per record, an option of every VAE kind.
DRAWS_DOC = ("latent draws per record in each DP-SGD step; the record's loss is the mean of their ELBOs (DPDM's noise "
             "multiplicity: less gradient variance per record before clipping, at the same privacy cost, for one "
             "decoder pass per draw)")


@dataclass(frozen=True)
class VaeOptions:
    """``model.options`` of ``model.kind: vae``: the MLP VAE's shape (paper: 200 ReLU, 2-d latent)."""

    hidden: list[int] = opt([200], "widths of the hidden ReLU layers of encoder and decoder")  # noqa: RUF009
    latent: int = opt(2, "latent dimension")
    draws: int = opt(1, DRAWS_DOC)

    def __post_init__(self) -> None:
        if not (all(h >= 1 for h in self.hidden) and self.latent >= 1 and self.draws >= 1):
            raise ValueError(f"hidden widths, latent and draws must be >= 1, got {self.hidden}, {self.latent}, "
                             f"{self.draws}")


def init_linear(layer: nn.Linear, generator: torch.Generator | None) -> None:
    """Re-initialise ``layer`` like nn.Linear's default, drawing from ``generator``."""
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
    if layer.bias is not None:
        bound = 1.0 / math.sqrt(layer.in_features) if layer.in_features > 0 else 0.0
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


def mlp(widths: Sequence[int], generator: torch.Generator | None, first: type[nn.Linear] = nn.Linear) -> nn.Sequential:
    """Linear layers of the given widths with ReLU between them (none after the last); the first of class
    ``first`` (RowsLinear: it reads sparse BinaryRows too)."""
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
        linear = (first if i == 0 else nn.Linear)(fan_in, fan_out)
        init_linear(linear, generator)
        layers.append(linear)
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GaussianVAE(NoPostProcessing, BernoulliSampling, nn.Module):
    """Encoder -> Gaussian q(z|x) -> decoder -> Bernoulli logits: the ELBO, sampling and the DP-SGD
    interface shared by every VAE here, whatever its encoder and decoder (MLP: ``VAE``; convolutional:
    dpgm.models.conv_vae). The encoder maps [..., B, n_items] to [..., B, 2 latent] (mean, log-variance),
    the decoder [..., B, latent] to logits [..., B, n_items]; its last layer's ``bias`` is the output bias.

    ``draws`` K > 1: each record's training loss is the mean of K single-draw negative ELBOs, with K
    latent draws decoded as K rows per record (DPDM's noise multiplicity, Dockhorn et al. 2023,
    sec. 3.2): the same expected gradient with less variance per record before clipping, for K
    decoder passes.
    """

    def __init__(self, n_items: int, latent: int, encoder: nn.Module, decoder: nn.Module, draws: int = 1) -> None:
        super().__init__()
        if draws < 1:
            raise ConfigError(f"a VAE needs draws >= 1, got {draws}")
        self.n_items, self.latent, self.draws = int(n_items), int(latent), int(draws)
        self.encoder, self.decoder = encoder, decoder

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        p = next(self.parameters())
        return p.device, p.dtype

    def forward(self, x: Tensor | BinaryRows, eps: Tensor) -> Tensor:
        """Negative ELBO of each row of ``x`` [..., B, n_items] (BinaryRows where the encoder reads them) with
        reparameterisation noise ``eps`` [..., B, latent] -> [..., B]; with K draws per record, ``eps``
        [..., B, K, latent] and the mean over the K draws (the decoder sees them as K rows per record)."""
        stats = self.encoder(x)
        mu, logvar = stats[..., : self.latent], stats[..., self.latent :]
        kl = 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=-1)
        if eps.dim() == x.dim():
            return self.reconstruction_nll(self.decoder(mu + torch.exp(0.5 * logvar) * eps), x) + kl
        z = mu.unsqueeze(-2) + torch.exp(0.5 * logvar).unsqueeze(-2) * eps  # [..., B, K, latent]
        logits = self.decoder(z.flatten(-3, -2)).unflatten(-2, eps.shape[-3:-1])  # [..., B, K, n_items]
        return self.reconstruction_nll(logits, x).mean(dim=-1) + kl

    def reconstruction_nll(self, logits: Tensor, x: Tensor | BinaryRows) -> Tensor:
        """-log p(x | logits) per row [..., B, (K)]: independent Bernoulli items (``bernoulli_nll``)."""
        return bernoulli_nll(logits, x)

    def reparameterisation_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """N(0, I) draws for n records, from ``generator``: [n, latent], or [n, K, latent] for K draws."""
        device, dtype = self._device_dtype()
        shape = (n, self.latent) if self.draws == 1 else (n, self.draws, self.latent)
        return torch.randn(*shape, generator=generator, device=draw_device(generator, device), dtype=dtype).to(device)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """A DP-SGD step's randomness for n records: the reparameterisation noise [n, (K,) latent]."""
        return self.reparameterisation_noise(n, generator)

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Negative ELBO per record [..., B] with reparameterisation noise [..., B, latent]."""
        return self(x, noise)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        """Negative ELBO per record [B]; one N(0, I) reparameterisation draw per record from ``generator``."""
        device, dtype = self._device_dtype()
        x = x.to(device=device, dtype=dtype)
        return self.record_losses(x, self.step_noise(x.shape[0], generator))

    def output_bias(self) -> Tensor:
        """The decoder's last bias [n_items]: the logit offset of every item (dpgm.stages.part_means)."""
        return self.decoder[-1].bias

    @torch.no_grad()
    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Bernoulli logits [n, n_items] of records decoded from z ~ N(0, I)."""
        device, dtype = self._device_dtype()
        z = torch.randn(n, self.latent, generator=generator, device=draw_device(generator, device), dtype=dtype)
        return self.decoder(z.to(device))


def bernoulli_nll(logits: Tensor, x: Tensor | BinaryRows) -> Tensor:
    """-log p(x | logits) per row [..., B, (K)] for Bernoulli logits [..., B, (K,) n_items] (K per record)."""
    if isinstance(x, BinaryRows):
        return x.bernoulli_nll(logits)
    target = x if logits.dim() == x.dim() else x.unsqueeze(-2).expand_as(logits)
    return F.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(dim=-1)


class VAE(GaussianVAE):
    """The paper's VAE: MLP encoder and decoder (paper: 200 ReLU, 2-d latent). Its encoder reads sparse
    batches by their ones (``binary_rows``: dpgm.models.binary_rows).

    ``generator`` (keyword) seeds the weight initialisation; None uses torch's global RNG.
    """

    #: DP-SGD may hand it a sparse batch as BinaryRows (its first layer and its loss read them).
    binary_rows = True

    def __init__(
        self,
        n_items: int,
        hidden: Sequence[int] = (200,),
        latent: int = 2,
        *,
        draws: int = 1,
        generator: torch.Generator | None = None,
    ) -> None:
        if n_items < 1 or latent < 1 or any(h < 1 for h in hidden):
            raise ConfigError("VAE needs n_items, latent and hidden widths >= 1, "
                              f"got {n_items}, {latent}, {list(hidden)}")
        widths = [int(h) for h in hidden]
        super().__init__(n_items, latent, mlp([int(n_items), *widths, 2 * int(latent)], generator, RowsLinear),
                         mlp([int(latent), *reversed(widths), int(n_items)], generator), draws)
        self.hidden = widths
