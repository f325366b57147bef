"""A VAE for a declared table: one softmax head per attribute over its values (``model.kind: table_vae``).

A declared table's records hold one item per attribute (dpgm.tables.records: a missing value is an item
of its own). The paper's VAE (dpgm.models.vae) reads them as independent Bernoulli items, so it may draw
two values of one attribute or none. Here the decoder's logits over an attribute's items are one softmax:
the reconstruction term is each attribute's categorical log-likelihood, and a record draws exactly one
value per attribute. Encoder, decoder, ELBO and DP-SGD interface are the MLP VAE's (ghost clipping
applies: every parameter lives in an nn.Linear layer called once). Plain nn.Module, no privacy code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from dpgm.config_fields import opt
from dpgm.errors import ConfigError
from dpgm.models.vae import DRAWS_DOC, VAE
from dpgm.streams import draw_device

#: Most rounds of the calibration's proportional fit (``frequency_shift``), the largest step (in logits) that ends it
#: early, and the floor of its target frequencies.
SHIFT_ROUNDS, SHIFT_TOLERANCE, SHIFT_FLOOR = 30, 1e-4, 1e-6


@dataclass(frozen=True)
class TableVaeOptions:
    """``model.options`` of ``model.kind: table_vae``."""

    hidden: list[int] = opt([128], "widths of the hidden ReLU layers of encoder and decoder")  # noqa: RUF009
    latent: int = opt(8, "latent dimension")
    draws: int = opt(1, DRAWS_DOC)
    attribute_sizes: list[int] | None = opt(None, "values of each attribute, items running attribute by "  # noqa: RUF009
                                            "attribute (set from data.attribute_sizes or data.schema)")

    def __post_init__(self) -> None:
        if not (all(h >= 1 for h in self.hidden) and self.latent >= 1 and self.draws >= 1):
            raise ValueError(f"hidden widths, latent and draws must be >= 1, got {self.hidden}, {self.latent}, "
                             f"{self.draws}")
        if self.attribute_sizes is not None and not all(int(s) >= 1 for s in self.attribute_sizes):
            raise ValueError(f"attribute_sizes must each be >= 1, got {self.attribute_sizes}")


class Attributes:
    """Which attribute each item is a value of (``of`` [m]) and where each attribute's items start: operations
    over each attribute's slice of the last dimension of [..., m] tensors."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = torch.as_tensor([int(s) for s in sizes], dtype=torch.long)
        self.starts = torch.cumsum(self.sizes, 0) - self.sizes
        self.of = torch.repeat_interleave(torch.arange(len(self.sizes)), self.sizes)
        self.spans = [(int(a), int(a + n)) for a, n in zip(self.starts, self.sizes)]

    def __len__(self) -> int:
        return len(self.sizes)

    def _index(self, like: Tensor) -> Tensor:
        return self.of.to(like.device).expand(like.shape)

    def log_softmax(self, logits: Tensor) -> Tensor:
        """Each item's log-probability within its attribute [..., m] (one log-softmax per attribute's slice)."""
        return torch.cat([logits[..., a:b].log_softmax(dim=-1) for a, b in self.spans], dim=-1)

    def sums(self, values: Tensor) -> Tensor:
        """Per attribute, the sum of its items' ``values`` [..., m] -> [..., T]."""
        return torch.stack([values[..., a:b].sum(dim=-1) for a, b in self.spans], dim=-1)

    def draw(self, probs: Tensor, uniforms: Tensor) -> Tensor:
        """One-hot records [n, m]: each attribute's value the first whose running probability within the attribute
        passes its uniform times the attribute's total (``uniforms`` [n, T]; the inverse CDF)."""
        device, index = probs.device, self._index(probs)
        p = probs.double()
        running = torch.cumsum(p, -1)
        starts = self.starts.to(device).expand(*p.shape[:-1], len(self))
        within = running - (running.gather(-1, starts) - p.gather(-1, starts)).gather(-1, index)
        total = within.gather(-1, starts + self.sizes.to(device) - 1)
        below = (within < (uniforms.double() * total).gather(-1, index)).to(torch.long)
        picks = self.sums(below).clamp_max(self.sizes.to(device) - 1) + starts
        return torch.zeros(probs.shape, dtype=probs.dtype, device=device).scatter_(-1, picks, 1.0)


class TableVAE(VAE):
    """The MLP VAE with one categorical output per attribute (module docstring); ``attribute_sizes`` add up to
    ``n_items``."""

    #: DP-SGD hands it dense batches (its loss reads every item's log-probability).
    binary_rows = False

    def __init__(self, n_items: int, attribute_sizes: Sequence[int], hidden: Sequence[int] = (128,), latent: int = 8,
                 *, draws: int = 1, generator: torch.Generator | None = None) -> None:
        if sum(int(s) for s in attribute_sizes) != n_items:
            raise ConfigError(f"table_vae: the attribute sizes add up to {sum(int(s) for s in attribute_sizes)}, "
                              f"the records hold {n_items} items")
        super().__init__(n_items, hidden, latent, draws=draws, generator=generator)
        self.attributes = Attributes(attribute_sizes)

    def reconstruction_nll(self, logits: Tensor, x: Tensor) -> Tensor:
        """-log p(x | logits) per row [..., B, (K)]: the sum over attributes of the chosen value's negative
        log-softmax (x [..., B, m] one-hot per attribute; logits [..., B, (K,) m])."""
        target = x if logits.dim() == x.dim() else x.unsqueeze(-2).expand_as(logits)
        return -(target * self.attributes.log_softmax(logits)).sum(dim=-1)

    @torch.no_grad()
    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Each item's probability within its attribute [n, n_items], of n fresh records."""
        return self.attributes.log_softmax(self.sample_logits(n, generator)).exp()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float), one value per attribute drawn at ``sample_probs``. ``systematic``: each
        attribute's uniforms are the points (i + v) / n in random order (v one uniform; each record's law is
        unchanged and the values' counts are steadier), else independent."""
        probs = self.sample_probs(n, generator)
        T, device = len(self.attributes), draw_device(generator, probs.device)
        if systematic and n > 0:
            order = torch.stack([torch.randperm(n, generator=generator, device=device) for _ in range(T)], dim=1)
            offset = torch.rand(1, T, generator=generator, device=device, dtype=torch.float64)
            uniforms = (order.double() + offset) / n
        else:
            uniforms = torch.rand(n, T, generator=generator, device=device, dtype=torch.float64)
        return self.attributes.draw(probs, uniforms.to(probs.device))

    def bias_at(self, probs: Tensor) -> Tensor:
        """The output bias whose softmax gives ``probs`` [n_items] where the rest of the logits are 0: log p."""
        return torch.log(probs.clamp_min(SHIFT_FLOOR))

    def frequency_shift(self, logits: Tensor, target: Tensor, *, min_items: int = 0) -> Tensor:
        """Per item, the shift d with mean over rows of softmax(logits + d) = ``target`` within each attribute
        (``target`` adding up to one per attribute), by proportional fitting: d += log(target / mean), at most
        SHIFT_ROUNDS times (Deming and Stephan 1940; each round is exact where the rows agree)."""
        goal = target.double().clamp_min(SHIFT_FLOOR)
        goal = goal / self.attributes.sums(goal).gather(-1, self.attributes.of.to(goal.device))
        shift, rows = torch.zeros_like(goal), logits.double()
        for _ in range(SHIFT_ROUNDS):
            mean = self.attributes.log_softmax(rows + shift).exp().mean(dim=0)
            step = torch.log(goal / mean.clamp_min(1e-300))
            shift += step
            if float(step.abs().max()) < SHIFT_TOLERANCE:
                break
        return shift.to(logits.dtype)
