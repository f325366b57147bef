"""Mixture training (DPGM paper Alg. 1): one generative model per part, trained by DP-SGD.

Two schedules (docs/paper.md, note 5):
- "parallel" (default): every step Poisson-samples the WHOLE dataset at rate q and updates
  every part's model with the sampled records of its own part. Parts are disjoint, so each
  record enters one sampled Gaussian mechanism per step (parallel composition): one ledger
  entry per step, whatever k is. The number of updates per model is data-independent.
- "alternate": the paper's schedule, with the choice of model made from the RELEASED noisy
  part sizes (the paper uses true sizes, which leaks). One model steps per global step; its
  part is Poisson-sampled at rate q; one ledger entry per step.
One DP-SGD engine (dpsgd.DPSGD) steps the models. Under the parallel schedule models of one
architecture (VAEs or RBMs alike) run as one stack, one batched pass for all k (same mechanism,
same draws as one model at a time, much faster for small parts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from dpgm.clustering.base import size_shares
from dpgm.config import TrainingConfig
from dpgm.errors import ConfigError
from dpgm.models.binary_rows import BinaryRows
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DpEvent
from dpgm.privacy.mechanisms import floor_counts
from dpgm.training.chunked_sampling import ChunkedPoissonBatches
from dpgm.training.dpsgd import DPSGD, StepResult
from dpgm.training.mechanism import Mechanism, poisson_sample

#: Ledger stage name of DP-SGD training.
STAGE = "training"



def part_probabilities(noisy_sizes: np.ndarray) -> torch.Tensor:
    """Probability of each part, proportional to its released size (``size_shares``)."""
    return torch.as_tensor(size_shares(noisy_sizes), dtype=torch.float64)


class RecordStore:
    """The private records on the training device; gathers batches by index: rows of dense records, the
    ones (BinaryRows) of sparse ones, never a dense copy of a wide sparse batch."""

    def __init__(self, records: np.ndarray | sp.csr_matrix, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.sparse = sp.issparse(records)
        if self.sparse:
            self._csr = records.tocsr()
        else:
            self._dense = torch.as_tensor(np.asarray(records), dtype=torch.float32, device=self.device)

    def rows(self, index: np.ndarray) -> torch.Tensor | BinaryRows:
        if self.sparse:
            return BinaryRows.from_csr(self._csr[index], self.device)
        return self._dense[torch.as_tensor(index, device=self.device)]


def lr_factor(schedule: str, step: int, total: int) -> float:
    """The learning rate's multiplier at ``step`` (0-based) of ``total`` planned steps: 1 for
    ``constant``; from 1 down towards 0 for ``linear`` and ``cosine`` (training.lr_schedule)."""
    if schedule == "constant" or total <= 0:
        return 1.0
    t = min(step / total, 1.0)
    return 1.0 - t if schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * t))


def make_optimizer(cfg: TrainingConfig, params: Any) -> torch.optim.Optimizer:
    """The update rule applied after privatisation (post-processing)."""
    params = list(params)
    if cfg.optimizer == "adam":  # fused: one kernel per parameter (CPU and CUDA have one)
        fused = all(p.device.type in ("cpu", "cuda") for p in params)
        return torch.optim.Adam(params, lr=cfg.learning_rate, fused=fused)
    return torch.optim.SGD(params, lr=cfg.learning_rate)


@dataclass
class StepLog:
    """What one global step produced. ``clip_norms`` (C_s per stepping part) are released values;
    ``loss`` (mean data term over the private batch) and ``batch_sizes`` (realised) are NOT
    private: non-private diagnostics, never released, shown or logged only on request."""

    loss: float
    clip_norms: list[float]
    batch_sizes: list[int]


def _log(results: list[StepResult]) -> StepLog:
    """The StepLog of one global step from its per-model results (loss averaged over records)."""
    total = sum(r.batch_size for r in results)
    loss = sum(r.loss * r.batch_size for r in results if r.batch_size)
    return StepLog(loss=float(loss / total) if total else float("nan"), clip_norms=[r.clip_norm for r in results],
                   batch_sizes=[r.batch_size for r in results])


def rank_seed(generator: torch.Generator) -> int | None:
    """The seed of this rank's own streams, or None in one process (the run's ``generator`` serves).

    With several ranks, one draw of ``generator`` (the same on every rank, so the shared stream
    stays in step); ``step_generator`` turns it, the rank and the step into that step's stream,
    so every rank samples its records independently of the others (a Poisson sample of the union)
    and a run resumed at step s draws what the uninterrupted run drew there.
    """
    return None if collective.world_size() == 1 else int(torch.randint(2**62, (1,), generator=generator))


def step_generator(local: torch.Generator, seed: int, step: int) -> torch.Generator:
    """``local`` reseeded for ``step`` of this rank (its records' Poisson sample and model noise)."""
    words = np.random.SeedSequence([seed, collective.rank(), step]).generate_state(2, dtype=np.uint32)
    return local.manual_seed(int(words[0]) << 32 | int(words[1]))


class MixtureTrainer:
    """Alg. 1: k DP-SGD optimisers over the parts of a released partition.

    ``batched`` (default True) lets the parallel schedule run models of one architecture as one
    stack; False (and the alternate schedule, one model per step) steps them one by one.
    """

    def __init__(
        self,
        models: list[nn.Module],
        records: RecordStore | ChunkedPoissonBatches,
        assignments: np.ndarray | None,
        noisy_sizes: np.ndarray,
        cfg: TrainingConfig,
        *,
        generator: torch.Generator,
        batched: bool = True,
        total_steps: int = 0,
        secure_mode: bool = False,
    ) -> None:
        if len(models) != len(noisy_sizes):
            raise ValueError("one model per part is required")
        if cfg.lr_schedule != "constant" and total_steps < 1:
            raise ValueError("a learning-rate schedule needs the planned number of steps")
        self.total_steps, self.steps_taken = total_steps, 0
        self.models = models
        self.records = records
        self.cfg = cfg
        self.generator = generator
        self.rank_seed = rank_seed(generator)  # several ranks: each step's stream of this rank's records
        self.local_generator = generator if self.rank_seed is None else torch.Generator()
        if isinstance(records, ChunkedPoissonBatches):  # records in chunks: batches a window at a time
            if cfg.schedule != "parallel":
                raise ConfigError("training.schedule: records read in chunks (data.chunk_mb) need 'parallel'")
        else:
            self.n = len(assignments)
            self.parts = [np.flatnonzero(assignments == j) for j in range(len(models))]
            self._part_of = torch.as_tensor(assignments, dtype=torch.long)
        self.weights = np.asarray(noisy_sizes, dtype=float)
        self.optimizers = [make_optimizer(cfg, m.parameters()) for m in models]
        expected = [cfg.sampling_rate * float(size) for size in floor_counts(noisy_sizes)]
        self.engine = DPSGD(
            models,
            Mechanism.from_config(cfg),
            expected_batch_sizes=expected,
            optimizers=self.optimizers,
            generator=generator,
            batched=batched and cfg.schedule == "parallel",
            secure_mode=secure_mode,
            local_generator=self.local_generator,
            device_noise=cfg.device_noise,
        )
        self.averages = (
            [AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(cfg.ema_decay), use_buffers=False) for m in models]
            if cfg.ema_decay is not None else None
        )

    def event(self) -> DpEvent:
        """The ledger event of one global step (the same for every part and both schedules)."""
        return self.engine.event()

    def _sample(self, candidates: np.ndarray) -> np.ndarray:
        """Poisson sampling: each candidate joins independently with probability q."""
        return candidates[poisson_sample(len(candidates), self.cfg.sampling_rate, self.local_generator).numpy()]

    def step(self, accountant: Accountant) -> StepLog:
        """One global step; charged to ``accountant`` before any record is read."""
        factor = lr_factor(self.cfg.lr_schedule, self.steps_taken, self.total_steps)
        for optimizer in self.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = self.cfg.learning_rate * factor
        if self.rank_seed is not None:
            step_generator(self.local_generator, self.rank_seed, self.steps_taken)
        log = self._step(accountant)
        self.steps_taken += 1
        if self.averages is not None:
            for average, model in zip(self.averages, self.models):
                average.update_parameters(model)
        return log

    def released_models(self) -> list[nn.Module]:
        """What the run releases: the weight averages when ema_decay is set, else the models."""
        return [a.module for a in self.averages] if self.averages is not None else self.models

    def _step(self, accountant: Accountant) -> StepLog:
        """Charge the step's event, THEN read records. Parallel: a Poisson sample of all n records,
        every part's model steps on its own rows. Alternate: part j drawn by released size, then a
        Poisson sample of part j, and model j steps (docs/paper.md, note 5)."""
        accountant.spend(STAGE, self.event())
        for model in self.models:
            if not model.training:  # module.train() walks every submodule: only when needed
                model.train()
        if isinstance(self.records, ChunkedPoissonBatches):
            return _log(self.engine.step(*self.records.batch(self.steps_taken)))
        if self.cfg.schedule == "parallel":
            sampled = self._sample(np.arange(self.n))
            return _log(self.engine.step(self.records.rows(sampled), self._part_of[sampled]))
        j = int(torch.multinomial(part_probabilities(self.weights), 1, generator=self.generator))
        sampled = self._sample(self.parts[j])
        rows, part = self.records.rows(sampled), self._part_of[sampled]
        return _log(self.engine.step(rows, part, active=[j]))

    def state_dict(self) -> dict[str, Any]:
        state = {
            "models": [m.state_dict() for m in self.models],
            "optimizers": [o.state_dict() for o in self.optimizers],
            "steps_taken": self.steps_taken,
        }
        if self.averages is not None:
            state["averages"] = [a.state_dict() for a in self.averages]
        if self.rank_seed is not None:
            state["rank_seed"] = self.rank_seed
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for m, s in zip(self.models, state["models"]):
            m.load_state_dict(s)
        for o, s in zip(self.optimizers, state["optimizers"]):
            o.load_state_dict(s)
        self.steps_taken = int(state.get("steps_taken", 0))
        if self.rank_seed is not None and "rank_seed" in state:  # the same world size: the same streams per step
            self.rank_seed = int(state["rank_seed"])
        for a, s in zip(self.averages or [], state.get("averages", [])):
            a.load_state_dict(s)
