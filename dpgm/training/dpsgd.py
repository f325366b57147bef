"""The one DP-SGD engine: k >= 1 models stepped together (DPGM paper, Alg. 4 with Alg. 3).

Each model ("part") j steps on its own records of an already Poisson-sampled batch (possibly
none): every record's gradient norm comes from ghost clipping (per_sample.GhostClipper, no
per-record gradients), the threshold C_s,j is fixed or DPNorm's noisy histogram mode of part
j's norms (Alg. 3), each record's gradient is clipped by min(1, C_s,j / ||g_i||) (with a decoder
share s, Mechanism.group_clip_factors: its decoder part to C sqrt(s), the rest to C sqrt(1 - s)), the clipped
gradients are summed, N(0, (sigma_G C_s,j)^2) is added per coordinate and the result divided
by part j's EXPECTED batch size E_j (q times its released size, never the realised size). An
empty part still gets noise and a step. The model's data-independent loss (RBM negative
phase, docs/paper.md, note 7) is added after privatisation; then part j's torch optimizer steps
(post-processing). The CALLER charges ``event()`` to the accountant before each step (one
event per step whatever k is: the parts are disjoint, parallel composition).

Models only need the DPSGDModel protocol (dpgm.models.protocol). Models of one signature run
as one stack (stacked.py): one forward and one backward pass for all of them; ``batched=False``
gives every model its own stack of one (the per-model path, same mechanism and same draws).

Random draws, all from the one generator, in this order (both paths, so a seeded run gives
the same models up to float rounding and a resumed run is bit-identical):
  1. for each stepping part j in increasing order: the model's step noise for part j's n_j records
     (VAE: reparameterisation N(0, I) [n_j, latent]), skipped when n_j = 0; then DPNorm's
     N(0, sigma_C^2) noise for the part's histogram counts (float64) [bins];
  2. for each stepping part j in increasing order: N(0, 1) gradient noise per trainable parameter,
     in ``parameters()`` order (scaled by sigma_G C_s,j afterwards: the same numbers as Opacus's
     torch.normal(0, std) per parameter); with ``secure_mode`` every N(0, 1) draw of 1. and 2. is
     Opacus's secure one (one draw thrown away, then the sum of 4 over 2: mechanisms.standard_normal_);
     for a stack on another device than the generator (a GPU) with ``device_noise``, drawn THERE,
     from a generator seeded, before the first part's draws, by one draw of the generator per such
     device, in stack order (dpgm.streams.reseed: replays and resumes; not the CPU run's numbers);
  3. for each stepping part j in increasing order: the model's post-processing noise (RBM: U(0, 1)
     [gibbs_steps, chains, n_hidden + n_items] for the Gibbs steps of its persistent chains; VAE: none).
With one part this is the per-part order step noise, histogram noise, gradient noise, post-processing
noise. Draws 2. and 3. need no record: on the CPU a worker thread makes them (background.py), from the
same generator in the same order, while the main thread runs the batch's passes; nothing else draws
from the generator until they are done.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor, nn

from dpgm.config import PrivacyConfig, TrainingConfig
from dpgm.errors import ConfigError
from dpgm.models.binary_rows import BinaryRows
from dpgm.models.protocol import DPSGDModel
from dpgm.privacy import collective
from dpgm.privacy.events import DpEvent
from dpgm.privacy.mechanisms import gaussian_noise, standard_normal_
from dpgm.streams import reseed
from dpgm.threads import torch_threads
from dpgm.training.background import Background, run_now
from dpgm.training.mechanism import Mechanism, clip_factors, poisson_sample, positive, step_event
from dpgm.training.stacked import ModelStack, stack_groups

__all__ = ["DPSGD", "Mechanism", "StepResult", "poisson_sample", "step_event"]

#: Below this many expected records per model and step, a step on the CPU runs its passes on one intra-op thread
#: fewer than torch has, leaving that core to the worker drawing the gradient noise: small passes gain little from
#: a second thread, and beside the worker they wait on it; larger ones gain more from it than the noise costs them
#: (docs/results.md, "DP-SGD on two cores: a core left to the noise worker"). The passes' float sums then follow
#: that thread count.
NOISE_CORE_BELOW = 360


@dataclass(frozen=True)
class StepResult:
    """One part's step. ``clip_norm`` (C_s) is a released value. ``loss`` (mean data term over the
    realised batch: VAE negative ELBO, RBM free energy; NaN when empty) and ``batch_size``
    (realised) are NOT private: non-private diagnostics for the operator only, never released
    or logged by default."""

    loss: float
    clip_norm: float
    batch_size: int


#: Sees part j's trainable parameters and their privatised gradients before its optimizer step, with the size one
#: clipped record of full norm has in them, C_s,j / E_j; may add to the gradients in place.
GradientHook = Callable[[int, list[nn.Parameter], list[Tensor], float], None]


@dataclass
class _Draws:
    """One step's random draws for the parts of one stack (order: module docstring)."""

    step_noise: list[Tensor]  # per stepping part with records, [n_j, d], in part order
    hist_noise: Tensor  # [g, bins] float64 (zeros for parts not stepping and for fixed clipping)
    post_noise: dict[int, Tensor]  # row of the stack -> its post-processing noise (if any)


@dataclass
class _Pending:
    """The draws of a step that need no record, in order: each stepping part's gradient noise, then the
    post-processing noise (futures: on the worker thread, or already done)."""

    parts: dict[int, Future[None]]
    last: Future[None]

    def wait(self) -> None:
        """Until every draw is made (a worker's error raised here)."""
        for future in (*self.parts.values(), self.last):
            future.result()


class DPSGD:
    """Private steps for k >= 1 models, one per part, each with its expected batch size E_j and
    its optimizer; ``mechanism`` (sampling rate, noise, clipping) is shared by all parts."""

    def __init__(
        self,
        models: Sequence[nn.Module],
        mechanism: Mechanism,
        *,
        expected_batch_sizes: Sequence[float],
        optimizers: Sequence[torch.optim.Optimizer],
        generator: torch.Generator | None,
        batched: bool = True,
        secure_mode: bool = PrivacyConfig.secure_mode,
        local_generator: torch.Generator | None = None,
        device_noise: bool = TrainingConfig.device_noise,
    ) -> None:
        if not models or not len(models) == len(expected_batch_sizes) == len(optimizers):
            raise ConfigError("DP-SGD needs models, and one expected batch size and optimizer each")
        for m in models:
            if not isinstance(m, DPSGDModel):
                raise ConfigError(f"DP-SGD: {type(m).__name__} does not follow DPSGDModel")
        self.models, self.mechanism, self.generator = list(models), mechanism, generator
        self.local_generator = generator if local_generator is None else local_generator
        self.secure_mode, self.device_noise = bool(secure_mode), bool(device_noise)
        self._on_device: dict[torch.device, torch.Generator] = {}  # device_noise: reseeded every step
        self.expected = [positive("expected_batch_size", e) for e in expected_batch_sizes]
        self.optimizers = list(optimizers)
        groups = stack_groups(self.models, self.expected) if batched else [[j] for j in range(len(self.models))]
        self.stacks = [ModelStack(parts, self.models, mechanism.clip_groups) for parts in groups]
        self._expected = {  # E_j of each stack's parts (float64)
            id(stack): torch.tensor([self.expected[j] for j in stack.parts], dtype=torch.float64)
            for stack in self.stacks
        }
        self._slot = {
            j: (s, pos) for s, stack in enumerate(self.stacks) for pos, j in enumerate(stack.parts)
        }
        self._worker = Background()  # draws the gradient noise while the batch's passes run (module docstring)
        #: What sees each step's released gradients (``GradientHook``): the audit's canaries (dpgm.audit).
        self.hooks: list[GradientHook] = []

    def event(self) -> DpEvent:
        """The privacy event of one step (whatever k: the parts are disjoint)."""
        return self.mechanism.event()

    def step(
        self, x: Tensor | BinaryRows, part: Tensor | None = None, active: Sequence[int] | None = None
    ) -> list[StepResult]:
        """One private step of every ``active`` part (default all) on the sampled rows ``x`` [B, m] (dense,
        or a sparse 0/1 batch as BinaryRows);
        ``part`` [B] is each row's part (default 0). Returns one result per active part, in order.
        """
        grads, results = self.privatised_gradients(x, part, active)
        for j, grad, result in zip(self._active(active), grads, results):
            for hook in self.hooks:
                hook(j, self._params(j), grad, result.clip_norm / self.expected[j])
            for p, g in zip(self._params(j), grad):
                p.grad = g
            self.optimizers[j].step()
            self.optimizers[j].zero_grad(set_to_none=True)
        return results

    def privatised_gradients(
        self, x: Tensor | BinaryRows, part: Tensor | None = None, active: Sequence[int] | None = None
    ) -> tuple[list[list[Tensor]], list[StepResult]]:
        """Per active part j, per trainable parameter: (sum_i min(1, C_s,j/||g_i||) g_i +
        N(0, (sigma_G C_s,j)^2 I)) / E_j plus the gradient of its post-processing loss; and its
        StepResult."""
        active = self._active(active)
        part, sizes = self._parts_and_sizes(len(x), part, active)
        draws, noise = self._draw(sizes, active)
        results: dict[int, StepResult] = {}
        try:
            for stack, drawn in zip(self.stacks, draws):
                if any(j in active for j in stack.parts):
                    rows = None if len(self.stacks) == 1 else _member(part, stack.parts)  # one stack: every row
                    mine = (x, part) if rows is None or bool(rows.all()) else (x[rows.to(x.device)], part[rows])
                    results.update(self._privatise(stack, *mine, drawn, noise))
        finally:
            noise.wait()  # the generator is the caller's again only once the worker is done
        grads = [self.stacks[self._slot[j][0]].row_grads[self._slot[j][1]] for j in active]
        return grads, [results[j] for j in active]

    def _parts_and_sizes(self, n: int, part: Tensor | None, active: list[int]) -> tuple[Tensor, list[int]]:
        """Each row's part [n] (default 0) and each part's row count; ValueError if a row's part is not stepping."""
        if part is None and 0 in active:
            return torch.zeros(n, dtype=torch.long), [n] + [0] * (len(self.models) - 1)
        part = torch.zeros(n, dtype=torch.long) if part is None else part.to("cpu", torch.long)
        if bool((~_member(part, active)).any()):
            raise ValueError("DP-SGD: every sampled row must belong to a stepping part")
        return part, torch.bincount(part, minlength=len(self.models)).tolist()

    def _noise_on_worker(self) -> bool:
        """Whether the gradient noise is drawn on the worker thread: every stack on the CPU (module docstring)."""
        return all(stack.device.type == "cpu" for stack in self.stacks)

    def _passes_threads(self) -> AbstractContextManager[object]:
        """The intra-op threads of a step's passes and clipped sums (while the worker draws the gradient noise): one
        fewer than torch's where the worker draws it and the models' expected batches are below NOISE_CORE_BELOW
        records on average; else unchanged. The rest of the step (the noise's sum, the post-processing gradient, the
        optimizer) runs on every thread."""
        threads = torch.get_num_threads()
        small = sum(self.expected) / len(self.expected) < NOISE_CORE_BELOW
        return torch_threads(threads - 1) if threads > 1 and small and self._noise_on_worker() else nullcontext()

    def _active(self, active: Sequence[int] | None) -> list[int]:
        return list(range(len(self.models))) if active is None else sorted(set(active))

    def _params(self, j: int) -> list[nn.Parameter]:
        return self.stacks[self._slot[j][0]].params[j]

    def _draw(self, sizes: list[int], active: list[int]) -> tuple[list[_Draws], _Pending]:
        """Every random draw of a step, in the documented order (module docstring), per stack: those
        of the batch now, the gradient and post-processing noise on the worker thread when every stack
        is on the CPU (the futures tell when they are in ``stack.noise`` and ``post_noise``)."""
        g, mech = self.generator, self.mechanism
        bins = mech.hist_bins if mech.clipping == "adaptive" else 1
        draws = [
            _Draws([], torch.zeros(len(s.parts), bins, dtype=torch.float64), {})
            for s in self.stacks
        ]
        noise_g = self._gradient_noise_generators()
        for j in active:
            s, pos = self._slot[j]
            stack, drawn = self.stacks[s], draws[s]
            if sizes[j]:  # this rank's records: its own stream (``local_generator``)
                noise = self.models[j].step_noise(sizes[j], self.local_generator)
                drawn.step_noise.append(noise.to(device=stack.device, dtype=stack.dtype))
            if mech.clipping == "adaptive":
                drawn.hist_noise[pos] = gaussian_noise(  # dpnorm.histogram_noise, secure or not
                    (mech.hist_bins,), mech.hist_noise_multiplier, g, secure=self.secure_mode
                )
        submit = self._worker.submit if self._noise_on_worker() else run_now
        parts = {j: submit(partial(self._draw_gradient_noise, j, noise_g)) for j in active}  # in order: one worker
        return draws, _Pending(parts, submit(partial(self._draw_post_noise, active, draws)))

    def _draw_gradient_noise(self, j: int, noise_g: list[torch.Generator | None]) -> None:
        """Part j's N(0, 1) gradient noise, per trainable parameter, into its row of ``stack.noise``."""
        s, pos = self._slot[j]
        for buffer in self.stacks[s].noise:  # scaled later: torch.normal(0, std) is std * N(0, 1)
            standard_normal_(buffer[pos], noise_g[s], secure=self.secure_mode)
            if collective.rank() != 0:  # several ranks: the noise is rank 0's, added once by the sum
                buffer[pos].zero_()

    def _draw_post_noise(self, active: list[int], draws: list[_Draws]) -> None:
        """The stepping parts' post-processing noise, into their stack's ``post_noise``."""
        for j in active:
            s, pos = self._slot[j]
            noise = self.models[j].post_processing_noise(self.generator)
            if noise is not None:
                draws[s].post_noise[pos] = noise.to(device=self.stacks[s].device, dtype=self.stacks[s].dtype)

    def _gradient_noise_generators(self) -> list[torch.Generator | None]:
        """Per stack, this step's generator of its gradient noise (module docstring, 3.): the run's
        generator, or with ``device_noise`` one on the stack's device, reseeded from it."""
        g = self.generator
        if g is None or not self.device_noise:
            return [g] * len(self.stacks)
        fresh: dict[torch.device, torch.Generator] = {}
        for stack in self.stacks:
            if stack.device != g.device and stack.device not in fresh:
                if stack.device not in self._on_device:
                    self._on_device[stack.device] = torch.Generator(device=stack.device)
                fresh[stack.device] = reseed(self._on_device[stack.device], g)
        return [fresh.get(stack.device, g) for stack in self.stacks]

    def _privatise(
        self, stack: ModelStack, x: Tensor | BinaryRows, part: Tensor, drawn: _Draws, noise: _Pending
    ) -> dict[int, StepResult]:
        """Thresholds, clipped sums, noise scale and division by E_j for the parts of one stack,
        then the post-processing gradient; all left in ``stack.grads`` (each part's N(0, 1) draws
        in ``stack.noise`` once its future in ``noise`` is done)."""
        k = len(stack.parts)
        stack.refresh()
        local = stack.local_of[part]
        x = x.to(device=stack.device, dtype=stack.dtype)
        if not stack.single:  # part by part, each in sample order
            order = torch.argsort(local, stable=True)
            x, local = x[order], local[order]
        with self._passes_threads():  # while the worker draws the gradient noise
            done = stack.ghost_pass(x, local, _joined(drawn.step_noise)) if len(local) else None
            norms = done.norms if done is not None else torch.zeros(0, dtype=stack.dtype)
            c_s = self.mechanism.thresholds(norms, local, drawn.hist_noise)
            expected = self._expected[id(stack)]
            # g_j = (C_j sigma_G z_j + sum_i min(1, C_j / ||g_i||) g_i) / E_j, z_j ~ N(0, I) drawn
            scale = (self.mechanism.noise_multiplier * c_s / expected).to(stack.dtype).tolist()
            if done is None:
                torch._foreach_zero_(stack.grads)
            else:
                per_part = torch.stack([c_s, expected]).to(stack.device, norms.dtype)  # [2, g]
                per_row = per_part if stack.single else per_part[:, local.to(stack.device)]  # one part: broadcast
                factors = clip_factors(norms, per_row[0]) if done.group_norms is None else \
                    self.mechanism.group_clip_factors(done.group_norms, per_row[0])
                stack.add_clipped_sum(done, factors / per_row[1], overwrite=True)  # no zero pass
        for pos, j in enumerate(stack.parts):  # + sigma_G C_j z_j / E_j, part by part as the worker draws them
            if j in noise.parts:
                noise.parts[j].result()
                torch._foreach_add_(stack.row_grads[pos], stack.row_noise[pos], alpha=scale[pos])
        noise.last.result()
        collective.sum_tensors_over_ranks_(list(stack.grads))  # several ranks: all clipped sums, rank 0's noise
        stack.add_post_processing_gradient(drawn.post_noise)  # data-independent term, last
        losses = (done.losses if done is not None else norms).detach().cpu().double()
        return _results(stack.parts, torch.bincount(local, minlength=k), losses, local, c_s)


def _results(
    parts: list[int], sizes: Tensor, losses: Tensor, local: Tensor, c_s: Tensor
) -> dict[int, StepResult]:
    """Each part's StepResult: mean loss of its records (NaN when none), C_s and realised size."""
    sums = torch.zeros(len(parts), dtype=torch.float64).index_add_(0, local, losses).tolist()
    rows = zip(parts, sums, sizes.tolist(), c_s.tolist())
    return {
        j: StepResult(loss=t / n if n else math.nan, clip_norm=c, batch_size=n)
        for j, t, n, c in rows
    }


def _joined(tensors: list[Tensor]) -> Tensor:
    """The tensors concatenated along the first dimension (the one itself, uncopied)."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors)


def _member(part: Tensor, parts: Sequence[int]) -> Tensor:
    """Boolean mask [B]: rows whose part is in ``parts``."""
    return torch.isin(part, torch.as_tensor(list(parts), dtype=torch.long))
