"""Bernoulli-Bernoulli restricted Boltzmann machine trained by persistent contrastive divergence.

A plain nn.Module with no privacy code. The PCD gradient is split (DESIGN.md 3.7) into a
data term, the free energy F(v) of each record (its gradient is the positive phase
-p(h|v) v^T and the bias terms), and a data-independent term from the persistent chains
(the negative phase), which depends only on the parameters and is post-processing.
Both weight matrices are nn.Linear layers so DP-SGD clips the positive phase cheaply.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.errors import ConfigError


class RBM(nn.Module):
    """m visible and n hidden binary units; W ~ N(0, 0.01^2), zero biases (paper, section 6.1).

    ``gibbs_steps`` advance the ``chains`` persistent chains per update; ``sample_steps`` is the
    number of Gibbs steps ``sample`` runs from fresh chains. ``generator`` seeds W.
    """

    def __init__(
        self,
        n_items: int,
        n_hidden: int = 200,
        gibbs_steps: int = 1,
        chains: int = 100,
        *,
        sample_steps: int = 200,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if min(n_items, n_hidden, gibbs_steps, chains, sample_steps) < 1:
            raise ConfigError("RBM needs n_items, n_hidden, gibbs_steps, chains and sample_steps >= 1")
        self.n_items, self.n_hidden = int(n_items), int(n_hidden)
        self.gibbs_steps, self.sample_steps = int(gibbs_steps), int(sample_steps)
        self.hidden = nn.Linear(self.n_items, self.n_hidden)  # weight W [n, m], bias c
        self.visible_bias = nn.Linear(self.n_items, 1, bias=False)  # weight b [1, m]
        with torch.no_grad():
            self.hidden.weight.normal_(0.0, 0.01, generator=generator)
            self.hidden.bias.zero_()
            self.visible_bias.weight.zero_()
        # Persistent chains start at zero; one Gibbs step from there gives near-uniform states.
        self.register_buffer("chains", torch.zeros(int(chains), self.n_items))

    def output_bias(self) -> Tensor:
        """The visible bias b [n_items]: the logit offset of every item (dpgm.training.part_means)."""
        return self.visible_bias.weight[0]

    def free_energy(self, v: Tensor) -> Tensor:
        """F(v) = -b.v - sum_j softplus(c_j + W_j v) for each row of ``v`` [..., B, m]: [..., B]."""
        return -self.visible_bias(v).squeeze(-1) - F.softplus(self.hidden(v)).sum(dim=-1)

    def forward(self, v: Tensor) -> Tensor:
        """Free energy of each row (the data term of the PCD loss)."""
        return self.free_energy(v)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """A DP-SGD step's per-record randomness: none ([n, 0]; the positive phase is exact)."""
        return self.hidden.weight.new_zeros(n, 0)

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Positive phase: the free energy of each record [..., B] (``noise`` is unused)."""
        return self.free_energy(x)

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        """Positive phase: the free energy of each record [B]; its gradient is -p(h|v) v^T, -v, -p(h|v)."""
        x = x.to(device=self.hidden.weight.device, dtype=self.hidden.weight.dtype)
        return self.record_losses(x, self.step_noise(x.shape[0], generator))

    def hidden_probs(self, v: Tensor) -> Tensor:
        """p(h = 1 | v) = sigmoid(W v + c)."""
        return torch.sigmoid(F.linear(v, self.hidden.weight, self.hidden.bias))

    def visible_logits(self, h: Tensor) -> Tensor:
        """logit p(v = 1 | h) = W^T h + b."""
        return h @ self.hidden.weight + self.output_bias()

    def visible_probs(self, h: Tensor) -> Tensor:
        """p(v = 1 | h) = sigmoid(W^T h + b)."""
        return torch.sigmoid(self.visible_logits(h))

    @torch.no_grad()
    def gibbs(self, v: Tensor, steps: int, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        """Run ``steps`` block-Gibbs steps v -> h -> v; returns the last visible states and their means."""
        probs = v
        for _ in range(steps):
            h = torch.bernoulli(self.hidden_probs(v), generator=generator)
            probs = self.visible_probs(h)
            v = torch.bernoulli(probs, generator=generator)
        return v, probs

    def post_processing_loss(self, generator: torch.Generator | None) -> Tensor:
        """Negative phase: advance the persistent chains, return -mean F(chains) (parameters only, no data)."""
        chains, _ = self.gibbs(self.chains, self.gibbs_steps, generator)
        self.chains.copy_(chains)
        return -self.free_energy(chains).mean()

    @torch.no_grad()
    def sample_logits(self, n: int, generator: torch.Generator | None, steps: int | None = None) -> Tensor:
        """Logits [n, n_items] of p(v | h) after ``steps`` (default sample_steps) Gibbs steps from fresh chains."""
        start = torch.sigmoid(self.output_bias()).expand(n, self.n_items)
        v = torch.bernoulli(start.contiguous(), generator=generator)
        v, _ = self.gibbs(v, max((steps or self.sample_steps) - 1, 0), generator)
        h = torch.bernoulli(self.hidden_probs(v), generator=generator)
        return self.visible_logits(h)

    @torch.no_grad()
    def sample_probs(self, n: int, generator: torch.Generator | None, steps: int | None = None) -> Tensor:
        """Bernoulli means [n, n_items] after ``steps`` (default sample_steps) Gibbs steps from fresh chains."""
        return torch.sigmoid(self.sample_logits(n, generator, steps))

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, steps: int | None = None) -> Tensor:
        """0/1 records [n, n_items] (float) drawn at the end of the Gibbs chains."""
        return torch.bernoulli(self.sample_probs(n, generator, steps), generator=generator)
