"""The "parallel" schedule's k DP-SGD steps in one batched pass, for k models of one architecture.

Under the parallel schedule (DESIGN.md 3.5) every global step updates every part's model with
the sampled records of its own part. For k VAEs of one shape (the paper's MNIST plan) the k
forward/backward passes, ghost norms, DPNorm histograms, clipped sums and noise additions run
at once on a leading part dimension: each nn.Linear becomes a StackedLinear (weight
[k, out, in]) applied to per-part batches padded to [k, B_max, in]; padded rows carry no loss.

The mechanism is exactly that of k DPSGD steps (dpsgd.py): part j gets its own threshold C_s,j
from its own noisy histogram (Alg. 3), its own clip, N(0, (sigma_G C_s,j)^2) noise per
coordinate and division by its own expected batch size; an empty part still gets noise and a
step. Random draws come from the generator in the order k DPSGD.step calls take them, so a
seeded run is the same on either path up to floating-point rounding. The k models and their
optimizers stay the training state (the stacked weights are copied from them at every step):
state_dicts and checkpoints do not depend on the path.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from dpgm.errors import ConfigError
from dpgm.models.vae import VAE
from dpgm.privacy.mechanisms import standard_normal_
from dpgm.training.dpnorm import histogram_noise, mode_thresholds, norm_histograms
from dpgm.training.dpsgd import DPSGD, StepResult, clip_factors
from dpgm.training.per_sample import GhostClipper


class StackedLinear(nn.Linear):
    """k nn.Linear layers of one shape applied to k batches at once: [k, B, in] -> [k, B, out].

    Holds a copy of the layers' weights [k, out, in] and biases [k, out]; ``refresh`` copies them
    again. Subclasses nn.Linear so that GhostClipper records it (norms and sums get a leading k).
    """

    def __init__(self, layers: Sequence[nn.Linear]) -> None:
        nn.Module.__init__(self)
        self.sources = list(layers)  # a plain list: the k layers are not submodules of the stack
        self.in_features, self.out_features = layers[0].in_features, layers[0].out_features
        self.weight = nn.Parameter(torch.stack([layer.weight.detach() for layer in layers]))
        if layers[0].bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = nn.Parameter(torch.stack([layer.bias.detach() for layer in layers]))

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy the k source layers' current parameters into the stack."""
        torch.stack([layer.weight for layer in self.sources], out=self.weight)
        if self.bias is not None:
            torch.stack([layer.bias for layer in self.sources], out=self.bias)

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight.transpose(-1, -2)
        return torch.bmm(x, w) if self.bias is None else torch.baddbmm(self.bias.unsqueeze(-2), x, w)


def can_stack(models: Sequence[nn.Module]) -> bool:
    """True when the models can train as one stack: VAEs of one shape, dtype and device, all trainable."""
    if not models or not all(type(m) is VAE for m in models):
        return False
    signature = [[(name, p.shape, p.dtype, p.device, p.requires_grad) for name, p in m.named_parameters()] for m in models]
    return all(s == signature[0] for s in signature) and all(p.requires_grad for p in models[0].parameters())


def stack_models(models: Sequence[nn.Module]) -> nn.Module:
    """A copy of models[0] whose every nn.Linear is a StackedLinear over the k models' layers."""
    per_model = [dict(m.named_modules()) for m in models]
    memo = {id(layer): StackedLinear([mods[name] for mods in per_model])
            for name, layer in per_model[0].items() if isinstance(layer, nn.Linear)}
    return copy.deepcopy(models[0], memo)  # the memo puts each stack in place of models[0]'s layer


def _settings(dp: DPSGD) -> tuple:
    """What must be equal across the parts of a stack (all but the model, optimizer, expected size)."""
    return (dp.sampling_rate, dp.noise_multiplier, dp.clipping, dp.clip_norm, dp.hist_noise_multiplier,
            dp.hist_max, dp.hist_bins, id(dp.generator))


def _padded(rows: Tensor, slots: tuple[Tensor, Tensor], shape: tuple[int, int]) -> Tensor:
    """rows [B, d] placed at (part, rank) ``slots`` of a zero tensor [k, B_max, d]."""
    out = rows.new_zeros(*shape, rows.shape[1])
    out[slots] = rows
    return out


class StackedDPSGD:
    """k DPSGD objects (one per part, same settings and generator) stepped in one batched pass."""

    def __init__(self, parts: Sequence[DPSGD]) -> None:
        models = [p.model for p in parts]
        if not can_stack(models):
            raise ConfigError("stacked DP-SGD needs VAEs of one shape (use one DPSGD per model otherwise)")
        if len({_settings(p) for p in parts}) != 1:
            raise ConfigError("stacked DP-SGD needs the same privacy settings and generator for every part")
        self.parts, self.k, self.settings = list(parts), len(parts), parts[0]
        self.model = stack_models(models)
        self.clipper = GhostClipper(self.model)
        self.stacks = [m for m in self.model.modules() if isinstance(m, StackedLinear)]
        names = [name for name, p in self.model.named_parameters() if p.requires_grad]
        self.part_params = [[dict(m.named_parameters())[name] for name in names] for m in models]
        self.device, self.dtype = self.clipper.params[0].device, self.clipper.params[0].dtype
        self.expected = torch.tensor([p.expected_batch_size for p in parts], dtype=torch.float64)
        self._noise = [torch.empty_like(p) for p in self.clipper.params]  # reused each step: [k, ...] per parameter

    def step(self, x: Tensor, part: Tensor) -> list[StepResult]:
        """One private step of every part's model on the global Poisson sample ``x`` [B, m]; ``part`` [B]."""
        part = part.to(device=self.device, dtype=torch.long)
        order = torch.argsort(part, stable=True)  # part by part, each in sample order (as DPSGD gets it)
        x, part = x.to(self.device)[order].to(self.dtype), part[order]
        sizes = torch.bincount(part, minlength=self.k).cpu()
        eps, hist_noise = self._draw(sizes.tolist())
        for stack in self.stacks:
            stack.refresh()
        if len(part):
            rank = torch.arange(len(part), device=self.device) - (torch.cumsum(sizes, 0) - sizes).to(self.device)[part]
            shape = (self.k, int(sizes.max()))
            valid = _padded(torch.ones(len(part), 1, dtype=torch.bool, device=self.device), (part, rank), shape).squeeze(-1)
            xp, ep = _padded(x, (part, rank), shape), _padded(eps, (part, rank), shape)
            ghost = self.clipper.compute(lambda: self.model(xp, ep).masked_fill(~valid, 0.0))  # padded rows: no loss, weight 0
            norms, losses = ghost.norms[valid], ghost.losses[valid]
        else:
            norms = losses = torch.zeros(0, dtype=self.dtype, device=self.device)
        c_s = self._thresholds(norms, part, hist_noise)
        # g_j = (C_j sigma_G z_j + sum_i min(1, C_j / ||g_i||) g_i) / E_j, z_j ~ N(0, I) drawn above
        scale = (self.settings.noise_multiplier * c_s / self.expected).to(device=self.device, dtype=self.dtype)
        for z in self._noise:
            z.mul_(scale.view((self.k,) + (1,) * (z.dim() - 1)))
        if len(part):
            c_e = torch.stack([c_s, self.expected]).to(device=self.device, dtype=norms.dtype)[:, part]
            weights = torch.zeros(valid.shape, dtype=norms.dtype, device=self.device)
            weights[valid] = clip_factors(norms, c_e[0]) / c_e[1]
            ghost.add_clipped_sum(weights, self._noise)
        self._update()
        loss_sums = torch.zeros(self.k, dtype=torch.float64).index_add_(0, part.cpu(), losses.detach().cpu().double())
        return [StepResult(loss=float(loss_sums[j] / sizes[j]) if sizes[j] else math.nan, clip_norm=float(c_s[j]),
                           batch_size=int(sizes[j])) for j in range(self.k)]

    def _draw(self, sizes: list[int]) -> tuple[Tensor, Tensor | None]:
        """A step's draws in the order of k DPSGD steps: per part, reparameterisation noise
        (VAE.loss_per_record), histogram noise (dpnorm), then N(0, 1) gradient noise per parameter."""
        s, g = self.settings, self.settings.generator
        eps, hist = [torch.zeros(0, self.model.latent, dtype=self.dtype, device=self.device)], []
        for j, n in enumerate(sizes):
            if n:
                eps.append(self.parts[j].model.reparameterisation_noise(n, g))
            if s.clipping == "adaptive":
                hist.append(histogram_noise(s.hist_bins, s.hist_noise_multiplier, g))
            for z in self._noise:
                standard_normal_(z[j], g)  # the std comes later: torch.normal(0, std) is std * N(0, 1)
        return torch.cat(eps), torch.stack(hist) if hist else None

    def _thresholds(self, norms: Tensor, part: Tensor, hist_noise: Tensor | None) -> Tensor:
        """C_s,j per part [k] (float64, CPU): clip_norm, or the noisy mode of part j's own norm histogram."""
        s = self.settings
        if hist_noise is None:
            return torch.full((self.k,), s.clip_norm, dtype=torch.float64)
        counts = norm_histograms(norms, part, self.k, hist_max=s.hist_max, bins=s.hist_bins)
        return mode_thresholds(counts + hist_noise.cpu(), hist_max=s.hist_max)

    def _update(self) -> None:
        """Each part's optimizer steps with its slice of the privatised gradients (post-processing)."""
        for j, dp in enumerate(self.parts):
            for p, z in zip(self.part_params[j], self._noise):
                p.grad = z[j]
            dp.optimizer.step()
            dp.optimizer.zero_grad(set_to_none=True)
