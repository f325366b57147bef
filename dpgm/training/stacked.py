"""k models of one architecture as ONE module on a leading part dimension (for batched DP-SGD).

Every nn.Linear of the template becomes a StackedLinear (weight [k, out, in]) applied to
per-part batches [k, B, in]; everything else of the model (activations, losses) broadcasts
over the leading dimension, which the DPSGDModel protocol (dpgm.models.protocol) asks for.
Ghost clipping (per_sample.GhostClipper) records StackedLinear layers like nn.Linear ones,
so per-record norms and clipped sums come out as [k, B] and [k, ...]. Nothing here depends
on the model's type: a VAE mixture and an RBM mixture stack alike.

Buffers (model state such as the RBM's persistent chains) are stacked the same way, so the
data-independent post-processing term (DPSGDModel.post_processing_loss) runs batched too.
The k source models stay the training state, their parameters views of their rows of the stack
(``StackedLinear``: their optimizers step the stack in place, no copy per step; a copy of a model
holds its own values only, and so does the release file, dpgm.artifact). ``ModelStack.refresh`` copies their buffers
(and any parameter replaced since) into the stack before every step and ``write_back`` copies advanced
buffers back, so state_dicts and checkpoints do not depend on the stacking.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from dpgm.models.binary_rows import BinaryRows
from dpgm.training.per_sample import GhostBatch, GhostClipper


class StackedLinear(nn.Linear):
    """k nn.Linear layers of one shape applied to k batches at once: [k, B, in] -> [k, B, out] (the input
    dense or a sparse 0/1 batch, BinaryRows).

    Holds the layers' weights [k, out, in] and biases [k, out], each layer's own parameters made views of its
    row (``bind``); ``refresh`` copies in a parameter replaced since. Subclasses nn.Linear so that GhostClipper
    records it (norms and sums get a leading k).
    """

    def __init__(self, layers: Sequence[nn.Linear]) -> None:
        nn.Module.__init__(self)
        self.sources = list(layers)  # a plain list: the k layers are not submodules of the stack
        self.in_features, self.out_features = layers[0].in_features, layers[0].out_features
        self.weight = _stacked([layer.weight for layer in layers])
        if layers[0].bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = _stacked([layer.bias for layer in layers])
        for j in range(len(layers)):
            self.bind(j)

    def _pairs(self, j: int) -> list[tuple[Tensor, nn.Parameter]]:
        """Source layer j's parameters beside their stacks."""
        layer = self.sources[j]
        return [(layer.weight, self.weight)] + ([(layer.bias, self.bias)] if self.bias is not None else [])

    @torch.no_grad()
    def bind(self, j: int) -> None:
        """Source layer j's parameters become views of row j of the stack, holding their current values."""
        for own, stacked in self._pairs(j):
            stacked[j].copy_(own)
            own.data = stacked.data[j]

    @torch.no_grad()
    def refresh(self) -> None:
        """Bind again a source layer whose parameter was replaced since (no longer a view of its row): the stack
        then holds every layer's current parameters."""
        for j in range(len(self.sources)):
            if any(own.data_ptr() != stacked[j].data_ptr() for own, stacked in self._pairs(j)):
                self.bind(j)

    def forward(self, x: Tensor | BinaryRows) -> Tensor:
        if isinstance(x, BinaryRows):
            return x.linear(self.weight, self.bias)
        w = self.weight.transpose(-1, -2)
        return (
            torch.bmm(x, w) if self.bias is None else torch.baddbmm(self.bias.unsqueeze(-2), x, w)
        )


def _stacked(params: Sequence[Tensor]) -> nn.Parameter:
    """A parameter [k, ...] holding a copy of ``params``, trainable iff the first one is."""
    return nn.Parameter(
        torch.stack([p.detach() for p in params]), requires_grad=params[0].requires_grad
    )


def signature(model: nn.Module) -> Hashable:
    """What models must share to stack: type, and name, shape, dtype, device (and trainability)
    of every parameter and buffer."""
    params = model.named_parameters()
    buffers = model.named_buffers()
    return (
        type(model),
        tuple((n, tuple(p.shape), p.dtype, str(p.device), p.requires_grad) for n, p in params),
        tuple((n, tuple(b.shape), b.dtype, str(b.device)) for n, b in buffers),
    )


def stackable(model: nn.Module) -> bool:
    """Whether ``model`` can join a stack: only nn.Linear layers stack (a model with nn.Conv2d
    layers steps as a stack of one, which runs the model itself)."""
    return not any(isinstance(m, nn.Conv2d) for m in model.modules())


#: Expected batches below this many rows share a stack whatever their sizes (padding them is cheap).
SMALL_BATCH = 64.0


def stack_groups(models: Sequence[nn.Module], expected_sizes: Sequence[float] | None = None) -> list[list[int]]:
    """Indices of ``models`` grouped by ``signature`` (groups ordered by their first member);
    a model that is not ``stackable`` is a group of its own.

    With ``expected_sizes`` (public: q times the noisy part sizes) a group is split further into
    parts whose expected batches are within a factor 2 of each other (batches under
    SMALL_BATCH rows all together): a stack pads every part's batch to its largest, so one big
    part among k small ones would cost k times its own work.
    """
    groups: dict[Hashable, list[int]] = {}
    for j, model in enumerate(models):
        if not stackable(model):
            groups[("alone", j)] = [j]
            continue
        bucket = None if expected_sizes is None else math.floor(math.log2(max(expected_sizes[j], SMALL_BATCH)))
        groups.setdefault((signature(model), bucket), []).append(j)
    return list(groups.values())


def stack_models(models: Sequence[nn.Module]) -> nn.Module:
    """A copy of models[0] whose every nn.Linear is a StackedLinear over the k models' layers."""
    if len({signature(m) for m in models}) != 1:
        raise ValueError("stack_models needs models of one signature (see signature())")
    per_model = [dict(m.named_modules()) for m in models]
    memo = {
        id(layer): StackedLinear([mods[name] for mods in per_model])
        for name, layer in per_model[0].items()
        if isinstance(layer, nn.Linear)
    }
    return copy.deepcopy(models[0], memo).train()  # the memo puts each stack in models[0]'s layer


def stack_buffers(
    stack: nn.Module, models: Sequence[nn.Module]
) -> list[tuple[nn.Module, str, list[Tensor]]]:
    """Replace every buffer of ``stack`` (a copy of models[0]) by the k models' buffers stacked
    [k, ...]; returns (owner module, buffer name, the k source buffers) for each."""
    sources = [dict(m.named_modules()) for m in models]
    out = []
    for path, owner in stack.named_modules():
        for name, _ in list(owner.named_buffers(recurse=False)):
            tensors = [getattr(mods[path], name) for mods in sources]
            setattr(owner, name, torch.stack(tensors))
            out.append((owner, name, tensors))
    return out


@dataclass
class StackedPass:
    """One recorded forward/backward pass of a stack: ``valid`` [g, B_max] marks real (not padded)
    rows (None for a stack of one: no padding); ``norms`` and ``losses`` [B] are those of the real
    rows, part by part; ``group_norms`` [G, B] their norms per clipping group (None without groups)."""

    ghost: GhostBatch
    valid: Tensor | None
    norms: Tensor
    losses: Tensor
    group_norms: Tensor | None = None


class ModelStack:
    """Models of one signature (``parts``, indices into ``models``) as one stacked module, with its
    ghost clipper and, per trainable parameter, one [g, ...] gradient buffer and one for its N(0, 1) noise.

    A stack of one model runs that model itself (no copy, no padding): the k = 1 fast path.
    """

    def __init__(self, parts: list[int], models: Sequence[nn.Module], clip_groups: Sequence[str] = ()) -> None:
        self.parts = parts
        self.local_of = torch.full((len(models),), -1, dtype=torch.long)  # part -> row of the stack
        self.local_of[parts] = torch.arange(len(parts))
        self.single = len(parts) == 1
        self.module = models[parts[0]] if self.single else stack_models([models[j] for j in parts])
        self.buffers = [] if self.single else stack_buffers(self.module, [models[j] for j in parts])
        self.clipper = GhostClipper(self.module, clip_groups)
        self.binary_rows = bool(getattr(models[parts[0]], "binary_rows", False))  # reads sparse batches as they are
        names = [name for name, p in self.module.named_parameters() if p.requires_grad]
        self.params = {j: [dict(models[j].named_parameters())[n] for n in names] for j in parts}
        self.device, self.dtype = self.clipper.params[0].device, self.clipper.params[0].dtype
        lead = (1,) if self.single else ()
        self.grads = [p.new_empty(lead + p.shape) for p in self.clipper.params]  # [g, ...], reused
        self.noise = [torch.empty_like(g) for g in self.grads]  # N(0, 1) gradient noise, drawn beside the pass
        self.row_grads = [[g[r] for g in self.grads] for r in range(len(parts))]  # row r's gradients (views)
        self.row_noise = [[z[r] for z in self.noise] for r in range(len(parts))]

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy the source models' current buffers, and any parameter replaced since, into the stack (no-op for one:
        the stack's parameters are the models' own)."""
        if self.single:
            return
        for layer in self.module.modules():
            if isinstance(layer, StackedLinear):
                layer.refresh()
        for owner, name, tensors in self.buffers:
            torch.stack(tensors, out=getattr(owner, name))

    @torch.no_grad()
    def write_back(self, rows: Sequence[int]) -> None:
        """Copy the stack's buffers of ``rows`` back into their source models (advanced state)."""
        for owner, name, tensors in self.buffers:
            for r in rows:
                tensors[r].copy_(getattr(owner, name)[r])

    def ghost_pass(self, x: Tensor | BinaryRows, local: Tensor, noise: Tensor) -> StackedPass:
        """Per-record norms of the stack's models on rows ``x`` [B, m] of rows ``local`` [B]
        (sorted) with their step noise [B, ...]: batches padded to [g, B_max], padded rows no loss.
        A sparse batch stays sparse for models that read BinaryRows and is made dense for the others."""
        if isinstance(x, BinaryRows) and not self.binary_rows:
            x = x.dense(self.dtype)
        if self.single:
            ghost = self.clipper.compute(lambda: self.module.record_losses(x, noise))
            return StackedPass(ghost, None, ghost.norms, ghost.losses, ghost.group_norms)
        local = local.to(self.device)
        sizes = torch.bincount(local, minlength=len(self.parts))
        rank = torch.arange(len(local), device=self.device) - (sizes.cumsum(0) - sizes)[local]
        shape, slots = (len(self.parts), int(sizes.max())), (local, rank)
        valid = _padded(torch.ones(len(local), 1, dtype=torch.bool, device=self.device), slots, shape).squeeze(-1)
        xp = x.placed(slots, shape) if isinstance(x, BinaryRows) else _padded(x, slots, shape)
        ep = _padded(noise, slots, shape)
        ghost = self.clipper.compute(
            lambda: self.module.record_losses(xp, ep).masked_fill(~valid, 0.0)
        )
        groups = None if ghost.group_norms is None else ghost.group_norms[:, valid]
        return StackedPass(ghost, valid, ghost.norms[valid], ghost.losses[valid], groups)

    def add_clipped_sum(self, done: StackedPass, weights: Tensor, *, overwrite: bool = False) -> None:
        """grads[j] += sum_i weights_i grad_i over part j's records (``weights`` [B], or [G, B]: one per
        clipping group); with ``overwrite``, grads[j] = that sum, whatever the buffers held."""
        if done.valid is None:
            totals, weights_ = self.row_grads[0], weights
        else:
            totals, weights_ = self.grads, weights.new_zeros(weights.shape[:-1] + done.valid.shape)
            weights_[..., done.valid] = weights  # padded rows: weight 0
        (done.ghost.set_clipped_sum if overwrite else done.ghost.add_clipped_sum)(weights_, totals)

    def add_post_processing_gradient(self, noise: dict[int, Tensor]) -> None:
        """grads[r] += the gradient of row r's data-independent loss given its ``noise`` (row ->
        draws; rows without draws run on zeros and are discarded); advanced state written back."""
        if not noise:
            return
        if self.single:
            loss = self.module.post_processing_loss(noise[0])
        else:
            zeros = torch.zeros_like(next(iter(noise.values())))
            rows = [noise.get(r, zeros) for r in range(len(self.parts))]
            loss = self.module.post_processing_loss(torch.stack(rows))
        self.write_back(sorted(noise))
        if loss is None:
            return
        grads = torch.autograd.grad(loss.sum(), self.clipper.params, allow_unused=True)
        for total, g in zip(self.grads, grads):
            if g is not None:
                total.add_(g.view_as(total))


def _padded(rows: Tensor, slots: tuple[Tensor, Tensor], shape: tuple[int, int]) -> Tensor:
    """rows [B, ...] placed at (part, rank) ``slots`` of a zero tensor [g, B_max, ...]."""
    out = rows.new_zeros(*shape, *rows.shape[1:])
    out[slots] = rows
    return out

