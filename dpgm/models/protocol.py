"""What DP-SGD and release need from a generative model (typing.Protocol, no privacy code).

DP-SGD (dpgm.training.dpsgd, DPGM paper Alg. 4) needs three things of a model, and nothing
about its architecture beyond "every trainable parameter lives in an nn.Linear layer called
once per forward pass on [..., B, in] inputs" (ghost clipping, dpgm.training.per_sample):

- ``step_noise(n, generator)``: the model's own per-record randomness for one step, drawn up
  front ([n, ...], e.g. [n, d] with d possibly 0) so that the trainer fixes the order of every
  draw of a step (VAE: the reparameterisation noise, [n, K, latent] with K draws; RBM: nothing);
- ``record_losses(x, noise)``: the data term, one loss per record of ``x`` [..., B, m] given
  its noise [..., B, d], each depending on its own row only. Leading dimensions let k models
  of one shape run as one stack (dpgm.training.stacked). A model whose class sets
  ``binary_rows = True`` gets a sparse batch by its ones (dpgm.models.binary_rows), the others dense;
- ``post_processing_noise(generator)``: the randomness of the model's data-independent loss
  term, drawn up front too (RBM: the uniforms of its negative phase's Gibbs steps), or None
  when the model has no such term (VAE);
- ``post_processing_loss(noise)``: that term (the RBM's negative phase, docs/paper.md, note 7), one
  value per model [...] (leading dimensions as above), computed from the parameters, the
  model's own state and ``noise`` alone; its gradient is added after privatisation. It may
  advance the model's state (the RBM's persistent chains, a buffer).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from dpgm.models.calibration import bias_shift
from dpgm.models.draws import bernoulli_draws


@runtime_checkable
class DPSGDModel(Protocol):
    """The training side of a model: step randomness, per-record data loss, post-processing loss."""

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor: ...

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor: ...

    def post_processing_noise(self, generator: torch.Generator | None) -> Tensor | None: ...

    def post_processing_loss(self, noise: Tensor) -> Tensor | None: ...


@runtime_checkable
class GenerativeModel(DPSGDModel, Protocol):
    """What training and release need from a model.

    ``loss_per_record(x, generator)`` is ``record_losses(x, step_noise(len(x), generator))``.
    ``output_bias`` is the bias of the output layer (an offset added to every record's logits),
    which dpgm.stages.part_means sets to ``bias_at`` of the part means and calibrates by
    ``frequency_shift`` on the ``sample_logits`` of fresh samples (``BernoulliOutputs``).
    """

    def loss_per_record(self, x: Tensor, generator: torch.Generator | None) -> Tensor: ...

    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor: ...

    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor: ...

    def output_bias(self) -> Tensor: ...

    def bias_at(self, probs: Tensor) -> Tensor: ...

    def frequency_shift(self, logits: Tensor, target: Tensor, *, min_items: int = 0) -> Tensor: ...

    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor: ...


class BernoulliOutputs:
    """Outputs read as Bernoulli items: the output bias that gives frequencies ``probs`` is their logit (Hinton 2010,
    section 8.1), and the calibration's shift meets each item's mean frequency (dpgm.models.calibration)."""

    def bias_at(self, probs: Tensor) -> Tensor:
        return torch.logit(probs)

    def frequency_shift(self, logits: Tensor, target: Tensor, *, min_items: int = 0) -> Tensor:
        return bias_shift(logits, target, min_items=min_items)


class BernoulliSampling(BernoulliOutputs):
    """``sample_probs`` and ``sample`` from a model's ``sample_logits`` (VAE and independent items)."""

    def sample_logits(self, n: int, generator: torch.Generator | None) -> Tensor:
        raise NotImplementedError

    @torch.no_grad()
    def sample_probs(self, n: int, generator: torch.Generator | None) -> Tensor:
        """Bernoulli means [n, n_items] of n fresh records."""
        return torch.sigmoid(self.sample_logits(n, generator))

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None, *, systematic: bool = True) -> Tensor:
        """0/1 records [n, n_items] (float), Bernoulli draws at ``sample_probs``: systematic (dpgm.models.draws)
        or independent."""
        return bernoulli_draws(self.sample_probs(n, generator), generator, systematic=systematic)


class NoPostProcessing:
    """No data-independent loss term (every model but the RBM): nothing drawn for one, nothing added."""

    def post_processing_noise(self, generator: torch.Generator | None) -> Tensor | None:
        return None

    def post_processing_loss(self, noise: Tensor) -> Tensor | None:
        return None
