"""DP-SGD: one generative model per part, trained on its part's records (paper Alg. 1, step 3).

The stage builds the models (output biases at the noisy part means when they were released),
calibrates the gradient noise to what the budget has left after the statistics stages
(``privacy.target_epsilon``), and takes the steps; every step is charged before its noise is
drawn (``dpgm.training.mixture``). What it shows is public: epsilon spent and the released
clipping thresholds; the loss on the private batch only with ``nonprivate_diagnostics``.
"""

from __future__ import annotations

import copy
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from dpgm.artifact import SAMPLES_FILE, TENSORBOARD_DIR, RunLayout
from dpgm.config import Config
from dpgm.data.chunks import ChunkedRecords
from dpgm.errors import ConfigError, DpgmError, PrivacyBudgetError
from dpgm.imaging import image_grid, part_sample_grid, write_png_grid
from dpgm.models import STATISTICS_ONLY, build_model
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.progress import StageBar, stage_bar
from dpgm.stages.base import Stage, StageContext
from dpgm.stages.model_choice import STAGE as CHOICE
from dpgm.stages.model_choice import TRAINED, choice, chosen_model, training_plan
from dpgm.stages.part_means import calibrate_to_means, release_min_items, start_at_means
from dpgm.training.chunked_sampling import ChunkedPoissonBatches
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore, rank_seed


class RunInterrupted(DpgmError):
    """SIGINT/SIGTERM: the run checkpointed and stopped; the message says how to resume."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Unwritten:
    """A TensorBoard writer that writes nothing (the ranks other than rank 0)."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def training_steps(cfg: Config) -> int:
    """DP-SGD's steps of the configured model (none for ``models.STATISTICS_ONLY`` kinds)."""
    t = cfg.training
    return 0 if cfg.model.kind in STATISTICS_ONLY else steps_for_epochs(t.epochs, t.sampling_rate)


def dpsgd_releases(cfg: Config, sigma: float) -> tuple[tuple[DpEvent, int], ...]:
    """What DP-SGD charges at noise multiplier ``sigma``: its steps' events."""
    t = cfg.training
    event = step_event(sampling_rate=t.sampling_rate, noise_multiplier=sigma, clipping=t.clipping,
                       hist_noise_multiplier=t.hist_noise_multiplier)
    return ((event, training_steps(cfg)),)


def training_noise(cfg: Config, accountant: Accountant, n_items: int) -> float:
    """Target-epsilon mode: the smallest sigma_G keeping the WHOLE run within the target (with the choice of
    a tree in the plan when ``model.tree_above`` is set: dpgm.stages.model_choice)."""
    try:
        return calibrate(training_plan(cfg, n_items, lambda sigma: dpsgd_releases(cfg, sigma)),
                         target_epsilon=cfg.privacy.target_epsilon, delta=accountant.delta,
                         extra_rdp=accountant.rdp(), orders=accountant.orders, bound=accountant.bound)
    except (ValueError, PrivacyBudgetError) as exc:
        raise PrivacyBudgetError(
            f"privacy.target_epsilon = {cfg.privacy.target_epsilon} cannot cover {training_steps(cfg)} training "
            f"steps after the partition stage ({exc}); with adaptive clipping the DPNorm histogram alone may "
            f"exceed it: raise training.hist_noise_multiplier, or lower epochs or sampling_rate") from None


def choice_entry(cfg: Config, accountant: Accountant, n_items: int, taken: int, sigma: float | None = None) -> DpEvent:
    """The ledger entry of a choice of model, its trained branch at ``sigma`` (default: the sigma_G that branch
    gets here, ``training_noise`` or the configured one)."""
    if sigma is None:
        sigma = (cfg.training.noise_multiplier if cfg.privacy.target_epsilon is None
                 else training_noise(cfg, accountant, n_items))
    return choice(cfg, n_items, dpsgd_releases(cfg, sigma), taken)


def _sizes_table(sizes: np.ndarray) -> str:
    """The released (noisy) part sizes as a markdown table, for TensorBoard's text tab."""
    return "| part | noisy size |\n|---|---|\n" + "\n".join(f"| {j} | {s:.1f} |" for j, s in enumerate(sizes))


class TrainingStage(Stage):
    """The models and their DP-SGD steps (none for ``models.STATISTICS_ONLY`` kinds: the released
    statistics are the models). The loop is ``train``; ``run`` only plans it and builds the models."""

    name = STAGE
    streams = True
    line = "train one generative model per group by DP-SGD ({steps} steps)"
    trains = True

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.model, self.steps, self.step = cfg.model, training_steps(cfg), 0
        self.trainer: MixtureTrainer | None = None  # None where no DP-SGD step is planned
        self.models: list[torch.nn.Module] = []
        self.noisy_sizes: np.ndarray | None = None  # the released part sizes the models are mixed by

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return True

    def run(self, ctx: StageContext) -> None:
        self._choose(ctx)
        cfg, items = self.cfg, ctx.data.n_items
        if self.steps > 0 and cfg.privacy.target_epsilon is not None:
            cfg.training.noise_multiplier = training_noise(cfg, ctx.accountant, items)
        if self.steps > 0 and cfg.model.tree_above > 0:  # the choice of model, charged before the first step
            sigma = cfg.training.noise_multiplier
            ctx.accountant.spend(CHOICE, choice_entry(cfg, ctx.accountant, items, TRAINED, sigma))
        self._build(ctx)

    def _choose(self, ctx: StageContext) -> None:
        """The model this run fits (a tree where dpgm.stages.model_choice picks one) and its DP-SGD steps."""
        self.model = chosen_model(self.cfg, ctx.output("dependence"))
        self.steps = 0 if self.model.kind in STATISTICS_ONLY else training_steps(self.cfg)

    def _build(self, ctx: StageContext) -> None:
        """One model per part (output biases at the noisy part means when released, trees from the
        item pairs) and the trainer."""
        cfg, partition, means = self.cfg, ctx.output("partition"), ctx.output("part_means")
        trees, self.noisy_sizes = ctx.output("item_pairs"), partition.noisy_sizes
        models = [build_model(self.model, ctx.data.n_items, generator=ctx.generator).to(cfg.device)
                  for _ in range(partition.k)]
        if means is not None:
            for model, probs in zip(models, means):
                start_at_means(model, probs)
        if trees is not None:
            for j, model in enumerate(models):  # a tree of items or of attributes: its own arrays by name
                model.set_tree(**{name: torch.as_tensor(value[j]) for name, value in trees.items()})
        self.models = models
        if isinstance(ctx.data, ChunkedRecords):  # one pass over the file draws a window of steps' batches
            seed = int(torch.randint(2**62, (1,), generator=ctx.generator))  # on resume: the saved one
        if self.steps == 0:  # no DP-SGD step: no trainer, no copy of the records, no optimiser (seconds of imports)
            rank_seed(ctx.generator)  # the one draw a trainer takes on several ranks: the same stream after it
            self.trainer = None
            return
        if isinstance(ctx.data, ChunkedRecords):
            records = ChunkedPoissonBatches(ctx.data, partition.parts_of, cfg.training.sampling_rate,
                                            cfg.training.chunk_window, seed, cfg.device)
        else:
            records = RecordStore(ctx.data.records, cfg.device)
        self.trainer = MixtureTrainer(
            models, records, partition.assignments, partition.noisy_sizes,
            cfg.training, generator=ctx.generator, total_steps=self.steps, secure_mode=cfg.privacy.secure_mode,
        )

    def state_dict(self) -> dict[str, Any]:
        if self.trainer is None:
            return {"step": self.step, "models": [m.state_dict() for m in self.models]}
        state = {"step": self.step, "trainer": self.trainer.state_dict()}
        if isinstance(self.trainer.records, ChunkedPoissonBatches):
            state["chunk_seed"] = self.trainer.records.seed
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        if self.trainer is None:
            for model, saved in zip(self.models, state["models"]):
                model.load_state_dict(saved)
            return
        self.trainer.load_state_dict(state["trainer"])
        if "chunk_seed" in state:
            self.trainer.records.seed = int(state["chunk_seed"])

    def resume(self, ctx: StageContext, state: dict[str, Any]) -> None:
        self._choose(ctx)
        self._build(ctx)
        self.load_state_dict(state)

    def planned_epsilon(self, accountant: Accountant) -> float:
        """Epsilon the run will have spent when all its steps are taken."""
        remaining = self.steps - self.step
        if remaining == 0:
            return accountant.spent().epsilon
        return accountant.epsilon_if(self.trainer.event(), count=remaining)

    # ---------------------------------------------------------------- the loop
    def train(self, ctx: StageContext, layout: RunLayout, stop: dict[str, int], checkpoint: Callable[[], None]) -> None:
        """Take the remaining steps; save every ``checkpoint_every`` steps, every ``checkpoint_seconds``
        and when ``stop`` is set by SIGINT/SIGTERM (then raise RunInterrupted with the resume command)."""
        from torch.utils.tensorboard import SummaryWriter

        t = self.cfg.training
        writer = (SummaryWriter(str(layout.in_release(TENSORBOARD_DIR)), purge_step=self._purge_step())
                  if collective.rank() == 0 else _Unwritten())  # several ranks: rank 0 writes
        if self.step == 0:
            writer.add_text("partition/noisy_sizes", _sizes_table(ctx.output("partition").noisy_sizes), 0)
        # a checkpoint past step 0 came with its samples (``_save``); the first one, at step 0, did not
        last_save, saved_at = time.monotonic(), (self.step if self.step > 0 else None)

        def save() -> None:  # samples and TensorBoard to disk first, then the checkpoint (``_purge_step``)
            self._write_samples(ctx, layout, writer)
            writer.flush()
            checkpoint()

        with ctx.shown():
            bar = stage_bar("DP-SGD", self.steps, unit="step", initial=self.step)
        try:
            while self.step < self.steps and not stop:
                try:
                    log = self.trainer.step(ctx.accountant)
                except PrivacyBudgetError as exc:
                    bar.write(f"stopping before step {self.step + 1}: {exc}")
                    break
                self.step += 1
                bar.advance()
                if self.step % t.log_every == 0 or self.step == self.steps:
                    self._log(ctx.accountant, writer, bar, log)
                if self.step % t.checkpoint_every == 0 or time.monotonic() - last_save > t.checkpoint_seconds:
                    save()
                    last_save, saved_at = time.monotonic(), self.step
            if stop:
                if saved_at != self.step:  # each step's samples once, even when a stop follows a checkpoint
                    save()
                signum = stop["signal"]
                raise RunInterrupted(
                    f"stopped by {signal.Signals(signum).name} after step {self.step} of {self.steps}; "
                    f"checkpoint saved. Resume with: python train.py --resume {layout.root}", 128 + signum)
        finally:
            bar.close()
            writer.flush()
        if saved_at != self.step:  # the last step's samples and checkpoint, once
            save()
        writer.close()

    def _purge_step(self) -> int:
        """TensorBoard's purge step: a resumed run hides what the interrupted one wrote after its checkpoint.

        ``save`` flushes every point up to step s before the checkpoint at s, so a resume from
        s > 0 keeps steps <= s and drops later ones (it writes them again). From step 0 only the
        partition sizes may be there, perhaps in part (the first checkpoint precedes them): all
        go, and they are written again. So no (tag, step) shows twice and none is lost.
        """
        return self.step + 1 if self.step > 0 else 0

    def _log(self, accountant: Accountant, writer: Any, bar: StageBar, log: Any) -> None:
        """Show and log DP outputs only: epsilon spent (the bar shows it) and the released clipping thresholds."""
        eps = accountant.spent().epsilon
        clip = float(np.mean(log.clip_norms))
        shown = {"clip": f"{clip:.3g}"}
        writer.add_scalar("privacy/epsilon", eps, self.step)
        writer.add_scalar("train/clip_norm", clip, self.step)
        if self.cfg.nonprivate_diagnostics:  # the mean loss on the private batch: NOT private
            shown["loss(nonprivate)"] = f"{log.loss:.2f}"
            writer.add_scalar("nonprivate/train_loss", log.loss, self.step)
        bar.show(**shown)

    def _write_samples(self, ctx: StageContext, layout: RunLayout, writer: Any) -> None:
        if ctx.data.image_shape is None or collective.rank() != 0:
            return
        g = torch.Generator()
        g.manual_seed(0)
        images = part_sample_grid(self._trained(), ctx.data.image_shape, g)
        write_png_grid(layout.in_release(SAMPLES_FILE), images, nrow=8)
        writer.add_image("samples", image_grid(images, nrow=8), self.step, dataformats="HW")

    def _trained(self) -> list[torch.nn.Module]:
        """The trainer's released models (its weight averages, say), or the models where no step was planned."""
        return self.models if self.trainer is None else self.trainer.released_models()

    def released_models(self, means: np.ndarray | None) -> list[torch.nn.Module]:
        """The trained models, calibrated to the noisy part means ``means`` when ``model.calibrate`` is set."""
        models = self._trained()
        if not self.model.calibrate:
            return models
        if means is None:
            raise ConfigError("model.calibrate is set but the run holds no noisy part means")
        models = copy.deepcopy(models)  # the trainer's state (and the checkpoint) stay uncalibrated
        for model, probs in zip(models, means):
            calibrate_to_means(model, probs, min_items=release_min_items(self.cfg),
                               total=self.model.calibrate == "total")
        return models
