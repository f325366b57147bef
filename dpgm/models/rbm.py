"""Bernoulli-Bernoulli restricted Boltzmann machine trained by persistent contrastive divergence.

A plain nn.Module with no privacy code. The PCD gradient is split (docs/paper.md, note 7) into a
data term, the free energy F(v) of each record (its gradient is the positive phase
-p(h|v) v^T and the bias terms), and a data-independent term from the persistent chains
(the negative phase), which depends only on the parameters and is post-processing.
Both weight matrices are nn.Linear layers so DP-SGD clips the positive phase cheaply, and
every method broadcasts over leading dimensions, so k RBMs of one shape train as one stack
(dpgm.training.stacked). Gibbs steps take their U(0, 1) draws as input: training draws the
negative phase's uniforms up front (``post_processing_noise``) in its documented order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.config_fields import opt
from dpgm.errors import ConfigError
from dpgm.models.draws import bernoulli_draws
from dpgm.models.protocol import BernoulliOutputs
from dpgm.streams import draw_device


@dataclass(frozen=True)
class RbmOptions:
    """``model.options`` of ``model.kind: rbm``: its hidden units and persistent chains."""

    hidden: int = opt(200, "number of hidden units")
    gibbs_steps: int = opt(1, "Gibbs steps per update of the persistent chains")
    chains: int = opt(100, "number of persistent chains")

    def __post_init__(self) -> None:
        if min(self.hidden, self.gibbs_steps, self.chains) < 1:
            raise ValueError(f"hidden, gibbs_steps and chains must be >= 1, got {self.hidden}, {self.gibbs_steps}, "
                             f"{self.chains}")


class RBM(BernoulliOutputs, nn.Module):
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
        """The visible bias b [n_items]: the logit offset of every item (dpgm.stages.part_means)."""
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
        """p(h = 1 | v) = sigmoid(W v + c) for rows ``v`` [..., C, m]."""
        return torch.sigmoid(self.hidden(v))

    def visible_logits(self, h: Tensor) -> Tensor:
        """logit p(v = 1 | h) = W^T h + b for rows ``h`` [..., C, n]."""
        return h @ self.hidden.weight + self.visible_bias.weight

    def visible_probs(self, h: Tensor) -> Tensor:
        """p(v = 1 | h) = sigmoid(W^T h + b)."""
        return torch.sigmoid(self.visible_logits(h))

    def gibbs_uniforms(self, n: int, generator: torch.Generator | None) -> Tensor:
        """U(0, 1) draws [n, n_hidden + n_items] for one Gibbs step of n chains."""
        p, width = self.hidden.weight, self.n_hidden + self.n_items
        drawn = torch.rand(n, width, generator=generator, device=draw_device(generator, p.device), dtype=p.dtype)
        return drawn.to(p.device)

    @torch.no_grad()
    def gibbs(self, v: Tensor, uniforms: Iterable[Tensor]) -> tuple[Tensor, Tensor]:
        """One block-Gibbs step v -> h -> v per tensor of ``uniforms`` [..., C, n_hidden + n_items]
        (a unit is 1 when its uniform is below its probability); the last states and their means."""
        probs = v
        for u in uniforms:
            h = (u[..., : self.n_hidden] < self.hidden_probs(v)).to(v.dtype)
            probs = self.visible_probs(h)
            v = (u[..., self.n_hidden :] < probs).to(v.dtype)
        return v, probs

    def post_processing_noise(self, generator: torch.Generator | None) -> Tensor:
        """The negative phase's randomness: uniforms [gibbs_steps, chains, n_hidden + n_items]."""
        steps = [self.gibbs_uniforms(len(self.chains), generator) for _ in range(self.gibbs_steps)]
        return torch.stack(steps)

    def post_processing_loss(self, noise: Tensor) -> Tensor:
        """Negative phase: advance the persistent chains with ``noise`` [..., steps, C, n + m] and
        return -mean F(chains) [...] (parameters, chains and noise only, no data)."""
        chains, _ = self.gibbs(self.chains, noise.unbind(-3))
        self.chains.copy_(chains)
        return -self.free_energy(chains).mean(-1)

    @torch.no_grad()
    def sample_logits(self, n: int, generator: torch.Generator | None, steps: int | None = None) -> Tensor:
        """Logits [n, n_items] of p(v | h) after ``steps`` (default sample_steps) Gibbs steps from fresh chains."""
        start = torch.sigmoid(self.output_bias()).expand(n, self.n_items)
        at = draw_device(generator, start.device)
        v = torch.bernoulli(start.to(at).contiguous(), generator=generator).to(start.device)
        steps = max((steps or self.sample_steps) - 1, 0)
        v, _ = self.gibbs(v, (self.gibbs_uniforms(n, generator) for _ in range(steps)))
        h = torch.bernoulli(self.hidden_probs(v).to(at), generator=generator).to(v.device)
        return self.visible_logits(h)

    @torch.no_grad()
    def sample_probs(self, n: int, generator: torch.Generator | None, steps: int | None = None) -> Tensor:
        """Bernoulli means [n, n_items] after ``steps`` (default sample_steps) Gibbs steps from fresh chains."""
        return torch.sigmoid(self.sample_logits(n, generator, steps))

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, steps: int | None = None, *,
               systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float) drawn at the end of the Gibbs chains (systematic: dpgm.models.draws)."""
        return bernoulli_draws(self.sample_probs(n, generator, steps), generator, systematic=systematic)
