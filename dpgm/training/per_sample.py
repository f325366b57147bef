"""Per-record gradient norms and clipped gradient sums without per-record gradients ("ghost clipping").

For an nn.Linear layer applied once to a [B, d_in] input, record i's weight gradient is the
outer product g_i a_i^T of its output gradient g_i and its input a_i, so
||grad_W||^2 = ||g_i||^2 ||a_i||^2 and ||grad_b||^2 = ||g_i||^2 (Goodfellow 2015; Li et al.
2021), and the clipped sum sum_i c_i g_i a_i^T is one matrix product. One forward pass and
one backward pass to the layer outputs give both, for any model whose trainable parameters
all live in such layers and whose per-record losses each depend on their own row only.
Layers may carry leading dimensions (a stack of k layers with weight [k, out, in] applied to
inputs [k, B, in], see dpgm.training.stacked): norms and sums are then [k, B] and [k, ...].
A layer's input may be a sparse 0/1 batch (dpgm.models.binary_rows.BinaryRows, a wide model's
first layer): ||a_i||^2 is then the record's length and the clipped sum adds c_i g_i to the
columns of its items, at the cost of its ones instead of B d_in.

An nn.Conv2d layer (groups 1, zero padding) applied to [B, C, H, W] shares its weight across
positions, so its per-record gradient [B, out, C k k] is materialised instead, as Opacus does
(here by one grouped convolution of the inputs with the output gradients). Small convolutions
keep this cheap; they are never stacked (a stack of one runs the model itself).

A layer may also see K rows per record (multiplicity: K draws of a VAE's latent per record,
Dockhorn et al. 2023, DPDM sec. 3.2), record-major: rows iK .. iK + K - 1 are record i's. Its
per-record gradient is then the sum over those rows: for nn.Linear sum_k g_k a_k^T, whose
squared norm is the sum of (G G^T) * (A A^T) over the K x K Gram matrices (Li et al. 2021's ghost
norm for sequences); for nn.Conv2d the materialised rows are summed.

Per-group clipping (McMahan et al. 2018, "per-layer clipping"): the clipper may split the layers
into groups (the layers under named submodules, e.g. a VAE's ``decoder``, and the rest); the batch
then also gives each record's norm per group, and its clipped sum takes one weight per group and
record, so that each group's gradient is clipped to its own threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dpgm.errors import ConfigError
from dpgm.models.binary_rows import BinaryRows


@dataclass
class _Capture:
    """One layer's input (detached) and output (in the graph) from the recorded forward pass."""

    layer: nn.Linear | nn.Conv2d
    inputs: Tensor
    output: Tensor


@dataclass
class _LinearFactors:
    """An nn.Linear layer's per-record gradients as factors: output grads [..., B K, out] and inputs
    [..., B K, in] (dense, or BinaryRows: a sparse 0/1 batch by its ones), ``rows`` = K rows per record
    (record-major)."""

    layer: nn.Linear
    grad_out: Tensor
    inputs: Tensor | BinaryRows
    rows: int = 1

    def squared_norms(self) -> Tensor:
        """||grad_W,i||^2 + ||grad_b,i||^2 per record [..., B] (trainable parts only): ||g_i||^2 (||a_i||^2 + 1)
        for one row per record, else sum((G_i G_i^T) * (A_i A_i^T)) + ||sum_k g_ik||^2 over its K rows."""
        if self.rows == 1:
            g2 = _squared_row_norms(self.grad_out)
            bias = self.layer.bias is not None and self.layer.bias.requires_grad
            if not self.layer.weight.requires_grad:
                return g2 if bias else torch.zeros_like(g2)
            a2 = _squared_row_norms(self.inputs, g2.dtype)
            return torch.addcmul(g2, g2, a2) if bias else g2.mul_(a2)  # ||g||^2 ||a||^2 (+ ||g||^2): one op
        inputs = self.inputs.dense(self.grad_out.dtype) if isinstance(self.inputs, BinaryRows) else self.inputs
        # g, a: [..., B, K, .]
        g, a = self.grad_out.unflatten(-2, (-1, self.rows)), inputs.unflatten(-2, (-1, self.rows))
        b2 = g.sum(dim=-2).pow(2).sum(dim=-1)
        sq = ((g @ g.transpose(-1, -2)) * (a @ a.transpose(-1, -2))).sum(dim=(-1, -2)) \
            if self.layer.weight.requires_grad else torch.zeros_like(b2)
        return sq + b2 if self.layer.bias is not None and self.layer.bias.requires_grad else sq

    def writes_weight(self) -> bool:
        """Whether ``add_weighted`` can write (not add) the weight's sum: one dense matmul with beta 0."""
        return self.layer.weight.requires_grad and not isinstance(self.inputs, BinaryRows)

    def add_weighted(self, weights: Tensor, out: dict[int, Tensor], fresh: frozenset[int] = frozenset()) -> None:
        """out[weight] += sum_i weights_i g_i a_i^T (one matmul, the add fused in, the weights on the narrower
        factor; from the ones of sparse inputs; written over, not added, when id(weight) is in ``fresh``);
        out[bias] += sum_i weights_i g_i (one matrix-vector product)."""
        per_row = weights if weights.dtype == self.grad_out.dtype else weights.to(self.grad_out.dtype)
        if self.rows > 1:
            per_row = per_row.repeat_interleave(self.rows, dim=-1)
        if self.layer.weight.requires_grad:
            w, g, a = out[id(self.layer.weight)], self.grad_out, self.inputs
            beta = 0.0 if id(self.layer.weight) in fresh else 1.0  # beta 0: w's old values are ignored
            if isinstance(a, BinaryRows):
                a.add_outer_(w, g * per_row.unsqueeze(-1))
            elif a.shape[-1] < g.shape[-1]:
                (w.addmm_ if w.dim() == 2 else w.baddbmm_)(g.transpose(-1, -2), a * per_row.unsqueeze(-1), beta=beta)
            else:
                (w.addmm_ if w.dim() == 2 else w.baddbmm_)((g * per_row.unsqueeze(-1)).transpose(-1, -2), a, beta=beta)
        if self.layer.bias is not None and self.layer.bias.requires_grad:
            b = out[id(self.layer.bias)]
            if b.dim() == 1:  # one matrix-vector product, the add fused in
                b.addmv_(self.grad_out.t(), per_row)
            else:
                b.add_((per_row.unsqueeze(-2) @ self.grad_out).squeeze(-2))

    def without(self, bad: Tensor) -> _LinearFactors:
        """The same with the records flagged in ``bad`` [..., B] set to 0."""
        rows_bad = bad.repeat_interleave(self.rows, dim=-1)
        inputs = self.inputs.without(rows_bad) if isinstance(self.inputs, BinaryRows) \
            else _zero_rows(self.inputs, rows_bad)
        return _LinearFactors(self.layer, _zero_rows(self.grad_out, rows_bad), inputs, self.rows)


def _squared_row_norms(t: Tensor | BinaryRows, dtype: torch.dtype | None = None) -> Tensor:
    """||t_i||^2 over the last dimension [...] (a sparse 0/1 row's: its length); one pass, no temporary."""
    if isinstance(t, BinaryRows):
        return t.lengths(dtype or torch.float32)
    return torch.linalg.vector_norm(t, dim=-1).square()


@dataclass
class _ConvGrads:
    """An nn.Conv2d layer's materialised per-record gradients: weight [B, out, in k k] and bias [B, out]."""

    layer: nn.Conv2d
    grad_w: Tensor
    grad_b: Tensor

    def squared_norms(self) -> Tensor:
        """Each record's squared gradient norm [B] over the layer's trainable parameters."""
        sq = self.grad_w.new_zeros(self.grad_w.shape[0])
        if self.layer.weight.requires_grad:
            sq = sq + self.grad_w.pow(2).sum(dim=(1, 2))
        if self.layer.bias is not None and self.layer.bias.requires_grad:
            sq = sq + self.grad_b.pow(2).sum(dim=1)
        return sq

    def writes_weight(self) -> bool:
        """Never: the weight's sum is added (``_LinearFactors.writes_weight``)."""
        return False

    def add_weighted(self, weights: Tensor, out: dict[int, Tensor], fresh: frozenset[int] = frozenset()) -> None:
        """out[weight] += sum_i weights_i grad_w_i and out[bias] += sum_i weights_i grad_b_i."""
        w = weights.to(self.grad_w.dtype)
        if self.layer.weight.requires_grad:
            out[id(self.layer.weight)].add_(torch.einsum("b,boi->oi", w, self.grad_w).view_as(self.layer.weight))
        if self.layer.bias is not None and self.layer.bias.requires_grad:
            out[id(self.layer.bias)].add_(w @ self.grad_b)

    def without(self, bad: Tensor) -> _ConvGrads:
        """The same with the records flagged in ``bad`` [B] set to 0."""
        return _ConvGrads(self.layer, _zero_rows(self.grad_w, bad), _zero_rows(self.grad_b, bad))


@dataclass
class GhostBatch:
    """What one recorded forward/backward pass leaves: losses, per-record norms, and the factors to sum."""

    losses: Tensor  # [..., B], detached
    norms: Tensor  # [..., B], L2 norm of each record's full gradient
    params: list[nn.Parameter]
    _factors: list[_LinearFactors | _ConvGrads]
    group_norms: Tensor | None = None  # [G, ..., B]: the norm of each group's part (GhostClipper ``groups``)
    _groups: tuple[int, ...] = ()  # each factor's group (0: the rest, g: the g-th named submodule)

    def clipped_sum(self, weights: Tensor) -> list[Tensor]:
        """sum_i weights_i * grad_i for every parameter, in ``params`` order (one matmul per layer)."""
        totals = [torch.zeros_like(p) for p in self.params]
        self.add_clipped_sum(weights, totals)
        return totals

    def set_clipped_sum(self, weights: Tensor, totals: list[Tensor]) -> None:
        """totals[j] = sum_i weights_i * grad_i in place, whatever they held (``add_clipped_sum``): the dense
        layers' weights written by their matmul, every other total zeroed first."""
        fresh = frozenset(id(f.layer.weight) for f in self._factors if f.writes_weight())
        torch._foreach_zero_([t for p, t in zip(self.params, totals) if id(p) not in fresh])
        self.add_clipped_sum(weights, totals, fresh)

    def add_clipped_sum(self, weights: Tensor, totals: list[Tensor], fresh: frozenset[int] = frozenset()) -> None:
        """totals[j] += sum_i weights_i * grad_i in place (``params`` order; written over for the weights in
        ``fresh``); ``weights`` [..., B], or [G, ..., B] with per-group norms: one weight per group and record."""
        out = {id(p): t for p, t in zip(self.params, totals)}
        grouped = weights.dim() == self.norms.dim() + 1
        if grouped and (self.group_norms is None or weights.shape[0] != len(self.group_norms)):
            raise ValueError("per-group weights need a clipper with as many groups")
        for factors, group in zip(self._factors, self._groups or (0,) * len(self._factors)):
            factors.add_weighted(weights[group] if grouped else weights, out, fresh)


def _conv_record_grads(layer: nn.Conv2d, inputs: Tensor, grad: Tensor, rows: int = 1) -> _ConvGrads:
    """Each record's weight gradient [B, out, in k k] and bias gradient [B, out] of a Conv2d that saw
    ``rows`` rows per record (record-major; their gradients are summed).

    One grouped convolution (a group per row) correlates each row's input with its output
    gradient (stride and dilation swap roles); 2-20x faster on CPU than unfold and a matmul.
    """
    b, c = inputs.shape[:2]
    out = grad.shape[1]
    kh, kw = layer.kernel_size
    if b == 0:
        # rows: 0 records either way
        return _ConvGrads(layer, grad.new_zeros(0, out, c * kh * kw), grad.new_zeros(0, out))
    w = F.conv2d(inputs.transpose(0, 1), grad.reshape(b * out, 1, *grad.shape[2:]), groups=b,
                 stride=layer.dilation, dilation=layer.stride, padding=layer.padding)  # [c, b out, >= kh, >= kw]
    w = w[:, :, :kh, :kw].reshape(c, b, out, kh, kw).permute(1, 2, 0, 3, 4).reshape(b, out, c * kh * kw)
    bias = grad.sum(dim=(2, 3))
    if rows > 1:
        w, bias = w.unflatten(0, (-1, rows)).sum(dim=1), bias.unflatten(0, (-1, rows)).sum(dim=1)
    return _ConvGrads(layer, w, bias)


def _check_conv(name: str, layer: nn.Conv2d) -> None:
    """ConfigError unless ``layer`` is a Conv2d whose per-record gradients ``_conv_record_grads`` computes."""
    if layer.groups != 1 or layer.padding_mode != "zeros" or isinstance(layer.padding, str):
        raise ConfigError(f"DP-SGD per-record gradients need Conv2d layers with groups 1 and numeric zero "
                          f"padding; {name!r} is not")


class GhostClipper:
    """Records the nn.Linear and nn.Conv2d layers of ``model`` during a forward pass and returns a GhostBatch.

    Raises ConfigError if a trainable parameter is not the weight or bias of such a layer.
    A record whose gradient is not finite is dropped from the sums (norm reported as 0).
    """

    def __init__(self, model: nn.Module, groups: Sequence[str] = ()) -> None:
        self.model = model
        self.group_of = _layer_groups(model, groups)  # id(layer) -> group; empty without groups
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
        for name, m in model.named_modules():
            if isinstance(m, nn.Conv2d):
                _check_conv(name, m)
        covered = {id(t) for m in self.layers for t in (m.weight, m.bias) if t is not None}
        for name, p in model.named_parameters():
            if p.requires_grad and id(p) not in covered:
                raise ConfigError("DP-SGD needs every trainable parameter in an nn.Linear or nn.Conv2d layer; "
                                  f"{name!r} is not")
        self._recording: dict[int, _Capture] | None = None
        self._handles = [layer.register_forward_hook(self._hook) for layer in self.layers]

    def _hook(self, layer: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        if self._recording is None:
            return
        if id(layer) in self._recording:
            raise ConfigError("DP-SGD ghost clipping needs each layer called once per forward pass")
        if isinstance(layer, nn.Conv2d):
            if output.dim() != 4:
                raise ConfigError("DP-SGD per-record gradients need [batch, C, H, W] inputs to nn.Conv2d, "
                                  f"got {tuple(inputs[0].shape)}")
        elif output.dim() != layer.weight.dim():  # [batch, features] for nn.Linear, [k, batch, features] for a stack
            raise ConfigError("DP-SGD ghost clipping needs [batch, features] inputs to nn.Linear, "
                              f"got {tuple(inputs[0].shape)}")
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
        factors: list[_LinearFactors | _ConvGrads] = [
            _conv_record_grads(cap.layer, cap.inputs, grad, _rows_per_record(cap, losses.shape[-1]))
            if isinstance(cap.layer, nn.Conv2d)
            else _LinearFactors(cap.layer, grad, cap.inputs, _rows_per_record(cap, losses.shape[-1]))
            for cap, grad in zip(captures, grads) if grad is not None
        ]
        groups = tuple(self.group_of.get(id(f.layer), 0) for f in factors)
        group_sq = _group_sums([f.squared_norms() for f in factors], groups, 1 + max(self.group_of.values(), default=0),
                               losses)
        sq = group_sq[0] if len(group_sq) == 1 else group_sq.sum(dim=0)
        if not bool(torch.isfinite(sq).all()):  # a record with a non-finite gradient contributes nothing (norm 0)
            bad = ~torch.isfinite(sq)
            sq, group_sq = sq.masked_fill(bad, 0.0), group_sq.masked_fill(bad, 0.0)
            factors = [f.without(bad) for f in factors]
        group_norms = group_sq.sqrt() if self.group_of else None
        return GhostBatch(losses.detach(), sq.sqrt(), self.params, factors, group_norms, groups)

    def remove(self) -> None:
        """Detach the forward hooks from the model (the clipper is unusable afterwards)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _group_sums(values: list[Tensor], groups: tuple[int, ...], n_groups: int, like: Tensor) -> Tensor:
    """[n_groups, ...]: the sum of the ``values`` of each group (zeros for a group without any)."""
    sums: list[Tensor | None] = [None] * n_groups
    for v, g in zip(values, groups):
        sums[g] = v if sums[g] is None else sums[g].add_(v)  # squared_norms returns fresh tensors
    full = [torch.zeros_like(like) if t is None else t for t in sums]
    return full[0].unsqueeze(0) if n_groups == 1 else torch.stack(full)


def _layer_groups(model: nn.Module, groups: Sequence[str]) -> dict[int, int]:
    """id(layer) -> g for the layers under the g-th named submodule (1-based; the rest are group 0);
    ConfigError if ``model`` has no such submodule with trainable parameters."""
    out: dict[int, int] = {}
    for g, name in enumerate(groups, start=1):
        sub = getattr(model, name, None)
        if not isinstance(sub, nn.Module) or not any(p.requires_grad for p in sub.parameters()):
            raise ConfigError(f"per-group clipping: {type(model).__name__} has no trainable {name!r} (a VAE's decoder)")
        out.update({id(m): g for m in sub.modules() if isinstance(m, (nn.Linear, nn.Conv2d))})
    return out


def _rows_per_record(cap: _Capture, records: int) -> int:
    """How many rows per record the captured layer saw (K of a multiplicity; 1 usually); ConfigError
    unless its batch is a whole multiple of the ``records``."""
    rows = cap.output.shape[0] if isinstance(cap.layer, nn.Conv2d) else cap.output.shape[-2]
    if records == 0 or rows == records:
        return 1
    if rows < records or rows % records:  # no counts in the message: the batch size is private
        raise ConfigError(f"DP-SGD per-record gradients need each layer to see K >= 1 rows per record; "
                          f"{type(cap.layer).__name__} {tuple(cap.layer.weight.shape)} did not")
    return rows // records


def _zero_rows(t: Tensor, bad: Tensor) -> Tensor:
    """``t`` [..., B, ...] with the rows flagged in ``bad`` [..., B] set to 0."""
    return t.masked_fill(bad.reshape(*bad.shape, *([1] * (t.dim() - bad.dim()))), 0.0)
