"""Per-record gradient norms and clipped gradient sums without per-record gradients ("ghost clipping").

For an nn.Linear layer applied once to a [B, d_in] input, record i's weight gradient is the
outer product g_i a_i^T of its output gradient g_i and its input a_i, so
||grad_W||^2 = ||g_i||^2 ||a_i||^2 and ||grad_b||^2 = ||g_i||^2 (Goodfellow 2015; Li et al.
2021), and the clipped sum sum_i c_i g_i a_i^T is one matrix product. One forward pass and
one backward pass to the layer outputs give both, for any model whose trainable parameters
all live in such layers and whose per-record losses each depend on their own row only.
Layers may carry leading dimensions (a stack of k layers with weight [k, out, in] applied to
inputs [k, B, in], see dpgm.training.stacked): norms and sums are then [k, B] and [k, ...].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from dpgm.errors import ConfigError


@dataclass
class _Capture:
    """One layer's input (detached) and output (in the graph) from the recorded forward pass."""

    layer: nn.Linear
    inputs: Tensor
    output: Tensor


@dataclass
class GhostBatch:
    """What one recorded forward/backward pass leaves: losses, per-record norms, and the factors to sum."""

    losses: Tensor  # [..., B], detached
    norms: Tensor  # [..., B], L2 norm of each record's full gradient
    params: list[nn.Parameter]
    _factors: list[tuple[nn.Linear, Tensor, Tensor]]  # (layer, output grads [..., B, out], inputs [..., B, in])

    def clipped_sum(self, weights: Tensor) -> list[Tensor]:
        """sum_i weights_i * grad_i for every parameter, in ``params`` order (one matmul per layer)."""
        totals = [torch.zeros_like(p) for p in self.params]
        self.add_clipped_sum(weights, totals)
        return totals

    def add_clipped_sum(self, weights: Tensor, totals: list[Tensor]) -> None:
        """totals[j] += sum_i weights_i * grad_i in place (``params`` order; the add is fused into the matmul)."""
        out = {id(p): t for p, t in zip(self.params, totals)}
        for layer, grad_out, inputs in self._factors:
            scaled = grad_out * weights.to(grad_out.dtype).unsqueeze(-1)
            if layer.weight.requires_grad:
                w = out[id(layer.weight)]
                (w.addmm_ if w.dim() == 2 else w.baddbmm_)(scaled.transpose(-1, -2), inputs)
            if layer.bias is not None and layer.bias.requires_grad:
                out[id(layer.bias)].add_(scaled.sum(dim=-2))


class GhostClipper:
    """Records the nn.Linear layers of ``model`` during a forward pass and returns a GhostBatch.

    Raises ConfigError if a trainable parameter is not the weight or bias of an nn.Linear.
    A record whose gradient is not finite is dropped from the sums (norm reported as 0).
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.layers = [m for m in model.modules() if isinstance(m, nn.Linear)]
        covered = {id(t) for m in self.layers for t in (m.weight, m.bias) if t is not None}
        for name, p in model.named_parameters():
            if p.requires_grad and id(p) not in covered:
                raise ConfigError(f"DP-SGD needs every trainable parameter in an nn.Linear layer; {name!r} is not")
        self._recording: dict[int, _Capture] | None = None
        self._handles = [layer.register_forward_hook(self._hook) for layer in self.layers]

    def _hook(self, layer: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        if self._recording is None:
            return
        if id(layer) in self._recording:
            raise ConfigError("DP-SGD ghost clipping needs each nn.Linear layer called once per forward pass")
        if output.dim() != layer.weight.dim():  # [batch, features] for nn.Linear, [k, batch, features] for a stack
            raise ConfigError(f"DP-SGD ghost clipping needs [batch, features] inputs to nn.Linear, got {tuple(inputs[0].shape)}")
        self._recording[id(layer)] = _Capture(layer, inputs[0].detach(), output)  # type: ignore[arg-type]

    def compute(self, loss_fn: Callable[[], Tensor]) -> GhostBatch:
        """Run ``loss_fn`` (per-record losses [..., B]) under recording; one backward pass to the layer outputs."""
        self._recording = {}
        try:
            losses = loss_fn()
        finally:
            captures, self._recording = list(self._recording.values()), None
        captures = [c for c in captures if c.output.requires_grad]
        grads = torch.autograd.grad(losses.sum(), [c.output for c in captures], allow_unused=True) if captures else []
        sq = torch.zeros(losses.shape, dtype=losses.dtype, device=losses.device)
        factors = []
        for cap, grad in zip(captures, grads):
            if grad is None:
                continue
            g2 = grad.pow(2).sum(dim=-1)
            if cap.layer.weight.requires_grad:
                sq = sq + g2 * cap.inputs.pow(2).sum(dim=-1)
            if cap.layer.bias is not None and cap.layer.bias.requires_grad:
                sq = sq + g2
            factors.append((cap.layer, grad, cap.inputs))
        bad = ~torch.isfinite(sq)
        if bool(bad.any()):  # a record with a non-finite gradient contributes nothing (norm 0)
            sq = sq.masked_fill(bad, 0.0)
            factors = [(layer, g.masked_fill(bad.unsqueeze(-1), 0.0), a.masked_fill(bad.unsqueeze(-1), 0.0)) for layer, g, a in factors]
        return GhostBatch(losses.detach(), sq.sqrt(), self.params, factors)

    def remove(self) -> None:
        """Detach the forward hooks from the model (the clipper is unusable afterwards)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
