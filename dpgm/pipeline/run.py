"""One run end to end: load the records, then its stages in order (dpgm.stages), then the release.

The run directory (artifact.py) has a ``release/`` folder of DP outputs only and a ``private/``
folder (owner-only) with the checkpoint, deleted when the run completes unless
``keep_private`` is set. Everything the run shows (progress bar, TensorBoard, files, messages)
is a DP output on the ledger or data-independent; the mean loss on the private batch is shown
only with ``nonprivate_diagnostics``, and then every report says the run is NOT private.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpgm.artifact import CONFIG_FILE, LEDGER_FILE, MODELS_FILE, REPORT_FILE, SUMMARY_FILE, RunLayout, save_models
from dpgm.config import Config, load_config
from dpgm.data import drop_short_records, drop_undeclared_labels, load_dataset, narrowed
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.io import atomic_write, atomic_write_json, atomic_write_text
from dpgm.pipeline.plan import (
    apply_rules,
    check_components,
    check_plan,
    check_world,
    checkpoint_epsilon,
    generators,
    noisy_records,
    privacy_report,
    public_inputs,
    released_texts,
    run_accountant,
    run_delta,
    run_magnitude,
)
from dpgm.pipeline.signals import stop_requests
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.progress import EpsilonSource, elapsed, nothing_spent, progress_scope, timed, timing_scope
from dpgm.report import dpgm_version, summary_markdown
from dpgm.stages import Stage, StageContext, planned_stages, released_payload
from dpgm.stages.training import RunInterrupted, TrainingStage, release_min_items
from dpgm.threads import set_threads

__all__ = ["RunInterrupted", "TrainingRun", "resume", "train"]


class TrainingRun:
    """One run: the data, the accountant and the planned stages; runs, checkpoints and resumes them."""

    accountant: Accountant | None = None  # made after the data are loaded, or by ``resume``

    def __init__(self, cfg: Config, run_dir: Path, *, data: BinaryDataset | None = None, progress: bool = True,
                 spent_before: EpsilonSource | None = nothing_spent, checkpoint: dict[str, Any] | None = None) -> None:
        """Load the data (``data`` replaces the config's data section) and plan; ``spent_before`` is the
        epsilon the loading bar shows: 0 for a fresh run, the ``checkpoint``'s on resume (whose noisy count
        of the records the rules read again: none is drawn)."""
        self.cfg, self.layout, self.progress = cfg, RunLayout(run_dir), progress
        self._spent_before = spent_before
        check_components(cfg)
        with self.shown(), timed("loading"):
            self.data = drop_short_records(data, cfg.data.min_items) if data is not None else load_dataset(cfg.data)
            if cfg.partition.method == "label":  # records outside the declared label set: out of the domain
                self.data = drop_undeclared_labels(self.data, cfg.partition.k)
        self.magnitude = run_magnitude(cfg, self.data)
        self.delta = run_delta(cfg, self.magnitude)
        self.fresh = generators(cfg.seed) if checkpoint is None else None
        if self.fresh:  # the ledger starts here: the rules' noisy count of the records is its first entry
            self.accountant = run_accountant(cfg, self.delta, None)
        self.records = None if cfg.rules != "public" else (
            noisy_records(cfg, self.data, self.delta, self.accountant, self.fresh[0]) if self.fresh
            else checkpoint.get("noisy_records"))  # a resume reads its released count again
        self.ruled, self.rules_why = apply_rules(cfg, self.data, self.magnitude, self.delta, self.records)
        self.public = public_inputs(cfg, self.data, self.magnitude)
        self.stages = planned_stages(cfg)
        check_plan(cfg, self.data, self.stages)
        self.training = next(stage for stage in self.stages if isinstance(stage, TrainingStage))

    @property
    def run_dir(self) -> Path:
        return self.layout.root

    @property
    def steps(self) -> int:
        return self.training.steps

    def output(self, name: str) -> Any:
        """A stage's public output (None when the plan has no such stage)."""
        return self.context.output(name)

    def epsilon_so_far(self) -> float | None:
        """The run's epsilon spent so far (the ledger's: public), for the progress bars."""
        if self.accountant is None:
            return self._spent_before() if self._spent_before is not None else None
        return self.accountant.spent().epsilon

    def shown(self) -> Any:
        """Scope of every bar the run shows: on unless ``progress`` is off, with its epsilon."""
        return progress_scope(enabled=self.progress, epsilon=self.epsilon_so_far)

    def _context(self, ledger: PrivacyLedger | None, rng: np.random.Generator, generator: torch.Generator) -> None:
        self.accountant = run_accountant(self.cfg, self.delta, ledger)
        self.context = StageContext(self.cfg, self.data, self.accountant, rng, generator, shown=self.shown)

    # ---------------------------------------------------------------- stages
    def start(self) -> None:
        """Fresh run: every stage in order, each narrowing the records the next ones see."""
        self._context(self.accountant.ledger, *self.fresh)
        for stage in self.stages:
            stage.output = timed(stage.name)(stage.run)(self.context)
            self._after(stage)
        if collective.rank() == 0:  # every rank of a distributed run releases the same: rank 0 writes
            for name, text in released_texts(self.cfg).items():  # the config, a declared table's schema
                atomic_write_text(self.layout.in_release(name), text)

    def _after(self, stage: Stage) -> None:
        self.context.data = narrowed(self.context.data, stage.narrow)
        self.context.stages[stage.name] = stage

    def planned_epsilon(self) -> float:
        """Epsilon the run will have spent when all its steps are taken (after ``start``)."""
        return self.training.planned_epsilon(self.accountant)

    def resume(self, checkpoint: dict[str, Any]) -> None:
        """Continue from a checkpoint: ledger, stages' outputs and random state come back together.

        No stage draws again. The trainer is rebuilt first and its state loaded after, and the
        generator state is restored LAST, so building the models consumes no draw of the resumed
        stream: a resumed run is bit-identical to an uninterrupted one.
        """
        check_world(checkpoint, self.layout.root)
        own = self.layout.rank_state(collective.rank())
        generator = torch.Generator()
        self._context(PrivacyLedger.from_json(checkpoint["ledger"]), np.random.default_rng(), generator)
        for stage in self.stages:
            stage.resume(self.context, checkpoint["stages"][stage.name])
            if stage.name in own:  # this rank's own records' state, not rank 0's
                stage.load_rank_state_dict(own[stage.name])
            self._after(stage)
        generator.set_state(checkpoint["generator"])

    def checkpoint(self) -> None:
        """Atomically save everything needed to resume, owner-only; ledger and stages in ONE file (rank 0's)."""
        if collective.rank() != 0:
            return
        state = {
            "stages": {stage.name: stage.state_dict() for stage in self.stages},
            "ledger": self.accountant.ledger.to_json(),
            "generator": self.context.generator.get_state(),
            "delta": self.delta,  # public (in the report): lets a resume show the epsilon spent before loading
            "noisy_records": self.records,  # released: the n the rules read, read again on resume
            "seed": self.cfg.seed,  # never in release/ (``released_config``); a resumed run still says it is seeded
            "world": collective.world_size(),  # a resume needs as many ranks (each reads its own state)
        }
        with atomic_write(self.layout.checkpoint, "wb", private=True) as fh:
            torch.save(state, fh)

    def save_rank_state(self) -> None:
        """Ranks but 0 save what only they hold (``RunLayout.save_rank_state``); all wait for all (private/ stays)."""
        self.layout.save_rank_state(collective.rank(), self.stages)
        collective.barrier()

    def train(self, stop: dict[str, int]) -> None:
        """The DP-SGD steps left (``TrainingStage.train``), checkpointing the whole run."""
        timed("training")(self.training.train)(self.context, self.layout, stop, self.checkpoint)

    def released_models(self) -> list[torch.nn.Module]:
        """The trained models, calibrated to the noisy part means when ``model.calibrate`` is set."""
        return self.training.released_models(self.output("part_means"))

    def finish(self) -> dict[str, Any]:
        """Write the release (calibrated if asked), the ledger and the report; drop private/ unless kept."""
        folder, data, sizes = self.layout.release, self.context.data, self.training.noisy_sizes
        report = privacy_report(self.cfg, self.accountant, sizes, self.steps, self.public,
                                {stage.name: stage for stage in self.stages}, self.rules_why, self.records)
        if collective.rank() != 0:
            return report
        save_models(folder, self.released_models(), sizes, self.training.model, data.item_names,
                    data.image_shape, data.meta.get("item_ids"), min_items=release_min_items(self.cfg),
                    stages=released_payload(self.stages))
        report |= {"nonprivate_seconds": elapsed()} if self.cfg.nonprivate_diagnostics else {}  # they grow with n
        self.accountant.ledger.save(folder / LEDGER_FILE)
        atomic_write_json(folder / REPORT_FILE, report)
        version = dict(zip(("version", "commit"), dpgm_version()))
        atomic_write_text(folder / SUMMARY_FILE, summary_markdown(report, dataset=data.name, **version))
        if not self.cfg.keep_private:
            self.layout.remove_private()
        return report


@timing_scope()  # the wall seconds of its steps (``finish``)
def train(cfg: Config, *, data: BinaryDataset | None = None, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Fresh run from a config; returns the run directory and the privacy report.

    ``data`` replaces the config's data section (for benchmarks that hold the records already).
    A run that fails before its first checkpoint leaves no run directory behind.
    """
    set_threads(cfg.threads)
    layout, lead = RunLayout(Path(cfg.runs_dir) / cfg.name), collective.rank() == 0  # rank 0 writes the files
    if lead:
        layout.check_writable()  # a runs_dir that is a file or read-only fails before the data load
    if lead and (layout.checkpoint.exists() or layout.in_release(MODELS_FILE).exists()):
        raise ConfigError(f"{layout.root} already holds a run: use --resume {layout.root} "
                          f"or another name (--set name=...)")
    if lead and layout.exists():  # killed before its first checkpoint: nothing to resume, start again
        layout.remove_unfinished(created_root=False)
    run = TrainingRun(cfg, layout.root, data=data, progress=progress)
    created = lead and layout.create()
    with stop_requests() as stop:  # SIGINT/SIGTERM from here on: checkpoint, then stop
        try:
            run.start()
            run.checkpoint()  # the partition is never redone on resume: its charges are in this file
            run.save_rank_state()
        except BaseException:
            if lead:
                layout.remove_unfinished(created_root=created)
            raise
        run.train(stop)
    return layout.root, run.finish()


@timing_scope()
def resume(run_dir: str | Path, *, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Continue an interrupted run from its last checkpoint."""
    layout = RunLayout(Path(run_dir))
    if not layout.checkpoint.is_file():
        if layout.exists() and not layout.in_release(MODELS_FILE).exists():
            raise ConfigError(f"{run_dir}: the run stopped before its first checkpoint (nothing was trained): "
                              f"start it again with --config")
        raise ConfigError(f"{run_dir}: no private/checkpoint.pt to resume from (finished, or not a run directory)")
    cfg = load_config(layout.in_release(CONFIG_FILE))
    set_threads(cfg.threads)
    checkpoint = torch.load(layout.checkpoint, map_location="cpu", weights_only=True)
    cfg.seed = checkpoint.get("seed")
    run = TrainingRun(cfg, layout.root, progress=progress, spent_before=checkpoint_epsilon(cfg, checkpoint),
                      checkpoint=checkpoint)
    run.resume(checkpoint)
    with stop_requests() as stop:
        run.train(stop)
    return layout.root, run.finish()

