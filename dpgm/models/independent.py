"""Independent items: each part's model is its noisy mean record (no DP-SGD).

The simplest member of the mixture family: with k parts a latent-class model, with one part
independent marginals. Its only parameter is the Bernoulli output bias, which
dpgm.stages.part_means sets to the logit of the part's noisy mean, so the model costs nothing
beyond that release. dpgm's rules pick it when the data are too small for DP-SGD to learn
correlations between items (dpgm/rules.py). It still follows the DP-SGD protocol (one bias
layer, a per-record Bernoulli loss), so a config may train it like any other model.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.models.protocol import BernoulliSampling, NoPostProcessing


class Independent(NoPostProcessing, BernoulliSampling, nn.Module):
    """Bernoulli items with logits ``output_bias()`` [n_items], independent of each other."""

    def __init__(self, n_items: int) -> None:
        super().__init__()
        self.n_items = int(n_items)
        with warnings.catch_warnings():  # "Initializing zero-element tensors is a no-op": the weight is empty
            warnings.simplefilter("ignore", UserWarning)
            self.out = nn.Linear(0, self.n_items)  # no inputs: its bias is the model (an nn.Linear for DP-SGD)
        nn.init.zeros_(self.out.bias)

    def _input(self, n: int, like: Tensor | None = None) -> Tensor:
        p = self.out.bias
        shape = (*like.shape[:-1], 0) if like is not None else (n, 0)
        return torch.zeros(shape, device=p.device, dtype=p.dtype)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """No per-record randomness: [n, 0]."""
        return self._input(n)

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Negative log-likelihood of each row of ``x`` [..., B, m] -> [..., B]."""
        logits = self.out(self._input(0, like=x))
        return F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(dim=-1)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        return self.record_losses(x.to(self.out.bias.dtype), self.step_noise(x.shape[0], generator))

    def marginals(self) -> Tensor:
        """Each item's exact frequency under the model [n_items]."""
        return torch.sigmoid(self.out.bias)

    def output_bias(self) -> Tensor:
        """The item logits [n_items]."""
        return self.out.bias

    @torch.no_grad()
    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor:
        """The item logits repeated for n records [n, n_items]."""
        return self.out.bias.expand(n, -1).clone()
