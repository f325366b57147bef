"""One training run end to end: load -> DP item choice -> DP partition -> noisy part means -> DP-SGD mixture.

The run directory (artifact.py) has a ``release/`` folder of DP outputs only and a ``private/``
folder (owner-only) with the checkpoint, deleted when the run completes unless
``keep_private`` is set. Everything the run shows (progress bar, TensorBoard, files, messages)
is a DP output on the ledger or data-independent; the mean loss on the private batch is shown
only with ``nonprivate_diagnostics``, and then every report says the run is NOT private.
"""

from __future__ import annotations

import copy
import secrets
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from dpgm.artifact import (
    CONFIG_FILE,
    LABEL_COLUMN,
    LEDGER_FILE,
    MODELS_FILE,
    REPORT_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    TENSORBOARD_DIR,
    PartLabels,
    RunLayout,
    not_private_warning,
    save_models,
)
from dpgm.clustering import make_partitioner
from dpgm.clustering.base import Partition
from dpgm.config import Config, load_config
from dpgm.data import (
    drop_short_records,
    drop_undeclared_labels,
    load_dataset,
    load_public_sample,
    noisy_top_item_ids,
    restrict_items,
)
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DpgmError, PrivacyBudgetError
from dpgm.imaging import image_grid, part_sample_grid, write_png_grid
from dpgm.io import atomic_write, atomic_write_json, atomic_write_text
from dpgm.models import build_model
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import (
    default_delta,
    records_magnitude,
    sigma_for_epsilon,
    steps_for_epochs,
)
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.events import DpEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.progress import EpsilonSource, StageBar, nothing_spent, progress_scope, stage_bar
from dpgm.report import dpgm_version, summary_markdown
from dpgm.rules import PublicFacts, apply_public_rules
from dpgm.threads import set_threads
from dpgm.training.dpsgd import step_event
from dpgm.training.empty_records import noisy_empty_count
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore
from dpgm.training.part_means import calibrate_to_means, noisy_part_means, start_at_means
from dpgm.training.record_lengths import noisy_length_shares

ITEMS_STAGE = "items"


class RunInterrupted(DpgmError):
    """SIGINT/SIGTERM: the run checkpointed and stopped; the message says how to resume."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _generators(seed: int | None) -> tuple[np.random.Generator, torch.Generator]:
    """One numpy and one torch generator: from the seed (an experiment), else from fresh OS
    entropy that is kept nowhere but in the private checkpoint's generator state."""
    g = torch.Generator()
    if seed is not None:
        g.manual_seed(seed)
        return np.random.default_rng(seed), g
    g.manual_seed(secrets.randbits(64))
    return secure_generator(), g  # released statistics' noise: OpenDP's exact samplers, OS CSPRNG


def released_config(cfg: Config) -> dict[str, Any]:
    """The config as written to release/: everything but the seed, which would let anyone replay
    the noise (docs/privacy.md, "Seeds"); a resume reads it back from the private checkpoint."""
    return {**cfg.to_dict(), "seed": None}


def _check_plan(cfg: Config, data: BinaryDataset) -> None:
    """Refuse impossible plans. Only public facts decide: a check such as "k is more than the
    number of records" would tell whoever reads the error one bit about n, so k > n runs (its
    extra parts are empty, and their noisy statistics are noise like any other)."""
    if cfg.partition.method == "label" and data.labels is None:
        raise ConfigError("partition.method: 'label' needs a dataset with labels")


def run_magnitude(cfg: Config, data: BinaryDataset) -> int:
    """N, the order of magnitude of the number of records: declared, else read off the data (and
    then listed as public); the one rounding rule behind the default delta and the rules."""
    return cfg.data.records_magnitude or records_magnitude(data.n_records)


def run_delta(cfg: Config, magnitude: int) -> float:
    """The run's delta: the config's, else 1/(100 N); a delta above 1/N is refused (it would allow
    releasing a whole record with probability delta, and a data set holds n >= N records)."""
    delta = cfg.privacy.delta or default_delta(magnitude)
    if delta > 1.0 / magnitude:
        raise ConfigError(f"privacy.delta = {delta:g} is above 1/N for the records' order of magnitude "
                          f"N = {magnitude}: choose delta well below 1/N (default 1/(100 N))")
    return delta


def public_inputs(cfg: Config, data: BinaryDataset, magnitude: int) -> list[dict[str, Any]]:
    """Every data-dependent quantity the run treats as public (declared by the user, not private)."""
    out = []
    if cfg.data.records_magnitude is None:
        uses = ["the check delta <= 1/N"] + (["rules: public"] if cfg.rules == "public" else [])
        uses += ["the default delta 1/(100 N)"] if cfg.privacy.delta is None else []
        out.append({"quantity": "order of magnitude of the number of records", "why": ", ".join(uses),
                    "value": f"N = {magnitude} (N <= n < 10 N)"})
    universe = data.meta.get("universe") or {"csv": "the CSV header"}.get(cfg.data.source, "the image format (one item per pixel)")
    out.append({"quantity": "item universe", "value": f"{data.n_items} items", "why": universe})
    if data.image_shape is not None:
        out.append({"quantity": "image shape", "value": list(data.image_shape), "why": "fixed by the data format"})
    if cfg.partition.method == "label":
        out.append({"quantity": "label set", "value": f"{cfg.partition.k} labels", "why": "declared as partition.k"})
    if cfg.partition.init == "public" and cfg.data.source == "mnist":
        out.append({"quantity": "public sample", "value": "the other MNIST split",
                    "why": "initial k-means centres come from published data"})
    return out


def privacy_report(cfg: Config, accountant: Accountant, partition_sizes: np.ndarray, steps: int,
                   public: list[dict[str, Any]], empty_size: float | None = None) -> dict[str, Any]:
    """The JSON report beside every release: epsilon, delta, relation, accountant, stages, public
    inputs, the noisy part sizes (and the noisy count of empty records, when they are a part)."""
    warning = not_private_warning(seed_fixed=cfg.seed is not None, diagnostics=cfg.nonprivate_diagnostics)
    report: dict[str, Any] = {"warning": warning} if warning else {}
    report.update(accountant.report())
    report["accountant"] = "rdp (moments accountant), tight RDP-to-DP conversion"
    report["fixed_seed"] = cfg.seed is not None
    report["public_inputs"] = public
    report["noisy_part_sizes"] = [float(s) for s in partition_sizes]
    if empty_size is not None:
        report["noisy_empty_records"] = float(empty_size)
    t = cfg.training
    report["plan"] = {"partition": cfg.partition.method, "k": len(partition_sizes), "model": cfg.model.kind,
                      "steps_taken": accountant.ledger.count(STAGE), "steps_planned": steps}
    if steps == 0:  # independent items: the noisy part means are the models, nothing was trained
        return report
    report["plan"].update({
        "schedule": t.schedule, "sampling_rate": t.sampling_rate, "noise_multiplier": t.noise_multiplier,
        "clipping": t.clipping, "calibrated_to_noisy_means": cfg.model.calibrate,
    })
    if t.clipping == "adaptive":
        report["plan"]["hist_noise_multiplier"] = t.hist_noise_multiplier
    else:
        report["plan"]["clip_norm"] = t.clip_norm
        if t.decoder_clip_share is not None:  # per-group clipping: the same sensitivity C, so the same event
            report["plan"]["decoder_clip_share"] = t.decoder_clip_share
    return report


def _calibrate_training_noise(cfg: Config, accountant: Accountant, steps: int) -> None:
    """Target-epsilon mode: smallest sigma_G keeping the WHOLE pipeline within the target."""
    t = cfg.training

    def event(sigma: float) -> DpEvent:
        return step_event(sampling_rate=t.sampling_rate, noise_multiplier=sigma, clipping=t.clipping,
                          hist_noise_multiplier=t.hist_noise_multiplier)

    try:
        t.noise_multiplier = sigma_for_epsilon(
            sampling_rate=t.sampling_rate, steps=steps, delta=accountant.delta,
            target_epsilon=cfg.privacy.target_epsilon, extra_rdp=accountant.rdp(), event_factory=event,
            bound=accountant.bound,
        )
    except (ValueError, PrivacyBudgetError) as exc:
        raise PrivacyBudgetError(
            f"privacy.target_epsilon = {cfg.privacy.target_epsilon} cannot cover {steps} training steps "
            f"after the partition stage ({exc}); with adaptive clipping the DPNorm histogram alone may "
            f"exceed it: raise training.hist_noise_multiplier, or lower epochs or sampling_rate") from None


def part_labels(cfg: Config) -> PartLabels | None:
    """Each part's label when the parts are labels (partition.method 'label': part j holds label
    j, the declared set 0..k-1), else None; the CSV label column keeps the data's name for it."""
    if cfg.partition.method != "label":
        return None
    column = cfg.data.label_column if cfg.data.source == "csv" and cfg.data.label_column else LABEL_COLUMN
    return PartLabels(labels=tuple(range(cfg.partition.k)), column=column)


def _sizes_table(sizes: np.ndarray) -> str:
    """The released (noisy) part sizes as a markdown table, for TensorBoard's text tab."""
    return "| part | noisy size |\n|---|---|\n" + "\n".join(f"| {j} | {s:.1f} |" for j, s in enumerate(sizes))


def _run_accountant(cfg: Config, delta: float, ledger: PrivacyLedger | None) -> Accountant:
    """The accountant of a run: its delta, budget and dependent-release bound, over ``ledger``."""
    p = cfg.privacy
    return Accountant(ledger, delta=delta, budget_epsilon=p.target_epsilon, bound=p.dependent_bound)


@contextmanager
def _stop_requests() -> Iterator[dict[str, int]]:
    """Turn SIGINT/SIGTERM into a flag the training loop checks between steps."""
    requested: dict[str, int] = {}

    def handler(signum: int, _frame: Any) -> None:
        requested["signal"] = signum

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class TrainingRun:
    """State of one run: data, accountant, partition, trainer; knows how to checkpoint."""

    accountant: Accountant | None = None  # made by ``start`` or ``resume``, after the data are loaded

    def __init__(self, cfg: Config, run_dir: Path, *, data: BinaryDataset | None = None, progress: bool = True,
                 spent_before: EpsilonSource | None = nothing_spent) -> None:
        """Load the data (``data`` replaces the config's data section); ``spent_before`` is the
        epsilon the loading bar shows: 0 for a fresh run, the checkpoint's on resume."""
        self.cfg, self.layout, self.progress = cfg, RunLayout(run_dir), progress
        self._spent_before = spent_before
        with self.shown():
            self.data = drop_short_records(data, cfg.data.min_items) if data is not None else load_dataset(cfg.data)
            if cfg.partition.method == "label":  # records outside the declared label set: out of the domain
                self.data = drop_undeclared_labels(self.data, cfg.partition.k)
        self.magnitude = run_magnitude(cfg, self.data)
        self.delta = run_delta(cfg, self.magnitude)
        self.ruled = self._apply_rules() if cfg.rules == "public" else {}
        _check_plan(cfg, self.data)
        self.public = public_inputs(cfg, self.data, self.magnitude)
        self.steps = 0 if cfg.model.kind == "independent" else steps_for_epochs(
            cfg.training.epochs, cfg.training.sampling_rate)  # independent items: no DP-SGD
        self.step = 0

    def _apply_rules(self) -> dict[str, Any]:
        """``rules: public``: the options the config leaves open, from public quantities (rules.py)."""
        facts = PublicFacts(n_items=self.data.n_items, records_magnitude=self.magnitude,
                            epsilon=float(self.cfg.privacy.target_epsilon), delta=self.delta,
                            min_items=self.cfg.data.min_items)
        return apply_public_rules(self.cfg, facts, self.cfg.stated)

    @property
    def run_dir(self) -> Path:
        return self.layout.root

    def epsilon_so_far(self) -> float | None:
        """The run's epsilon spent so far (the ledger's: public), for the progress bars."""
        if self.accountant is None:
            return self._spent_before() if self._spent_before is not None else None
        return self.accountant.spent().epsilon

    def shown(self) -> Any:
        """Scope of every bar the run shows: on unless ``progress`` is off, with its epsilon."""
        return progress_scope(enabled=self.progress, epsilon=self.epsilon_so_far)

    def _accountant(self, ledger: PrivacyLedger | None) -> Accountant:
        return _run_accountant(self.cfg, self.delta, ledger)

    # ---------------------------------------------------------------- stages
    def start(self) -> None:
        """Fresh run: item choice and partition (charged), part means, calibration, the trainer."""
        cfg = self.cfg
        rng, self.generator = _generators(cfg.seed)
        self.accountant = self._accountant(None)
        self._choose_items(rng)
        self._set_empty_records_aside(rng)
        public = load_public_sample(cfg.data) if cfg.partition.init == "public" else None
        with self.shown():
            self.partition: Partition = make_partitioner(cfg.partition, public=public).fit(self.data, self.accountant, rng)
        self.means = None
        if cfg.model.output_bias == "noisy_mean":
            self.means = noisy_part_means(
                self.data.records, self.partition.assignments, self.partition.noisy_sizes,
                clip=cfg.model.mean_clip, noise_multiplier=cfg.model.mean_noise_multiplier,
                accountant=self.accountant, rng=rng,
            )
        self.length_shares = None
        if cfg.model.length_noise_multiplier is not None:
            self.length_shares = noisy_length_shares(self.data, noise_multiplier=cfg.model.length_noise_multiplier,
                                                     accountant=self.accountant, rng=rng)
        if cfg.privacy.target_epsilon is not None and self.steps > 0:
            _calibrate_training_noise(cfg, self.accountant, self.steps)
        self._build_trainer()
        atomic_write_text(self.layout.in_release(CONFIG_FILE), yaml.safe_dump(released_config(cfg), sort_keys=False))

    def planned_epsilon(self) -> float:
        """Epsilon the run will have spent when all its steps are taken (after ``start``)."""
        remaining = self.steps - self.step
        if remaining == 0:
            return self.accountant.spent().epsilon
        return self.accountant.epsilon_if(self.trainer.event(), count=remaining)

    def _choose_items(self, rng: np.random.Generator) -> None:
        """``data.top_items``: keep the m items with the largest NOISY counts (charged, stage 'items')."""
        m = self.cfg.data.top_items
        columns = np.arange(self.data.n_items)
        if m is not None and m < self.data.n_items:
            columns = noisy_top_item_ids(self.data, m, noise_multiplier=self.cfg.data.top_items_noise_multiplier,
                                         accountant=self.accountant, rng=rng, stage=ITEMS_STAGE)
            self._restrict(columns)
        self.columns = columns

    def _set_empty_records_aside(self, rng: np.random.Generator) -> None:
        """``partition.empty_part_noise_multiplier``: count the empty records (charged) and keep the others."""
        self.empty_size = None
        sigma = self.cfg.partition.empty_part_noise_multiplier
        if sigma is not None:
            self.empty_size = noisy_empty_count(self.data, noise_multiplier=sigma, accountant=self.accountant, rng=rng)
            self.data = drop_short_records(self.data, 1)

    @property
    def release_min_items(self) -> int:
        """Fewest items of a released record: ``data.min_items``, at least 1 when the empty records are a part."""
        split = self.cfg.partition.empty_part_noise_multiplier is not None
        return max(self.cfg.data.min_items, 1) if split else self.cfg.data.min_items

    def _restrict(self, columns: np.ndarray) -> None:
        """Keep the chosen items; records left with fewer than ``data.min_items`` of them are
        dropped too (the same per-record rule as at load), so the models and the release agree."""
        self.data = drop_short_records(restrict_items(self.data, columns), self.cfg.data.min_items)

    def _build_trainer(self) -> None:
        """One model per part (output biases at the noisy part means when released) and the trainer."""
        models = [build_model(self.cfg.model, self.data.n_items, generator=self.generator).to(self.cfg.device)
                  for _ in range(self.partition.k)]
        if self.means is not None:
            for model, probs in zip(models, self.means):
                start_at_means(model, probs)
        self.trainer = MixtureTrainer(
            models, RecordStore(self.data.records, self.cfg.device), self.partition.assignments,
            self.partition.noisy_sizes, self.cfg.training, generator=self.generator, total_steps=self.steps,
            secure_mode=self.cfg.privacy.secure_mode,
        )

    def resume(self, checkpoint: dict[str, Any]) -> None:
        """Continue from a checkpoint: ledger, step counter and random state come back together.

        The trainer is rebuilt first and its state loaded after, and the generator state is
        restored LAST, so building the models consumes no draw of the resumed stream: a
        resumed run is bit-identical to an uninterrupted one.
        """
        self.generator = torch.Generator()
        self.accountant = self._accountant(PrivacyLedger.from_json(checkpoint["ledger"]))
        self.columns = np.asarray(checkpoint["columns"])
        if len(self.columns) < self.data.n_items:
            self._restrict(self.columns)  # the private choice, not redone
        self.empty_size = checkpoint.get("empty_size")
        if self.empty_size is not None:
            self.data = drop_short_records(self.data, 1)  # the count is not redone
        self.partition = Partition(assignments=checkpoint["assignments"].numpy(),
                                   noisy_sizes=checkpoint["noisy_sizes"].numpy())
        means = checkpoint["noisy_means"]
        self.means = None if means is None else means.numpy()
        lengths = checkpoint.get("length_shares")
        self.length_shares = None if lengths is None else lengths.numpy()
        self.step = int(checkpoint["step"])
        self._build_trainer()
        self.trainer.load_state_dict(checkpoint["trainer"])
        self.generator.set_state(checkpoint["generator"])

    def checkpoint(self) -> None:
        """Atomically save everything needed to resume, owner-only; ledger and step counter in ONE file."""
        state = {
            "step": self.step,
            "trainer": self.trainer.state_dict(),
            "ledger": self.accountant.ledger.to_json(),
            "assignments": torch.as_tensor(self.partition.assignments),
            "noisy_sizes": torch.as_tensor(self.partition.noisy_sizes),
            "columns": torch.as_tensor(self.columns),
            "noisy_means": None if self.means is None else torch.as_tensor(self.means),
            "length_shares": None if self.length_shares is None else torch.as_tensor(self.length_shares),
            "empty_size": self.empty_size,
            "generator": self.generator.get_state(),
            "delta": self.delta,  # public (in the report): lets a resume show the epsilon spent before loading
            "seed": self.cfg.seed,  # never in release/ (``released_config``); a resumed run still says it is seeded
        }
        with atomic_write(self.layout.checkpoint, "wb", private=True) as fh:
            torch.save(state, fh)

    # ---------------------------------------------------------------- loop
    def train(self, stop: dict[str, int]) -> None:
        """Run the remaining steps; checkpoint every ``checkpoint_every`` steps, every
        ``checkpoint_seconds`` and when ``stop`` is set by SIGINT/SIGTERM (then raise
        RunInterrupted with the resume command)."""
        from torch.utils.tensorboard import SummaryWriter

        t = self.cfg.training
        writer = SummaryWriter(str(self.layout.in_release(TENSORBOARD_DIR)), purge_step=self._purge_step())
        if self.step == 0:
            writer.add_text("partition/noisy_sizes", _sizes_table(self.partition.noisy_sizes), 0)
        # a checkpoint past step 0 came with its samples (``_save``); the first one, at step 0, did not
        last_save, saved_at = time.monotonic(), (self.step if self.step > 0 else None)
        with self.shown():
            bar = stage_bar("DP-SGD", self.steps, unit="step", initial=self.step)
        try:
            while self.step < self.steps and not stop:
                try:
                    log = self.trainer.step(self.accountant)
                except PrivacyBudgetError as exc:
                    bar.write(f"stopping before step {self.step + 1}: {exc}")
                    break
                self.step += 1
                bar.advance()
                if self.step % t.log_every == 0 or self.step == self.steps:
                    self._log(writer, bar, log)
                if self.step % t.checkpoint_every == 0 or time.monotonic() - last_save > t.checkpoint_seconds:
                    self._save(writer)
                    last_save, saved_at = time.monotonic(), self.step
            if stop:
                if saved_at != self.step:  # each step's samples once, even when a stop follows a checkpoint
                    self._save(writer)
                signum = stop["signal"]
                raise RunInterrupted(
                    f"stopped by {signal.Signals(signum).name} after step {self.step} of {self.steps}; "
                    f"checkpoint saved. Resume with: python train.py --resume {self.run_dir}", 128 + signum)
        finally:
            bar.close()
            writer.flush()
        if saved_at != self.step:  # the last step's samples and checkpoint, once
            self._save(writer)
        writer.close()

    def _purge_step(self) -> int:
        """TensorBoard's purge step: a resumed run hides what the interrupted one wrote after its checkpoint.

        ``_save`` flushes every point up to step s before the checkpoint at s, so a resume from
        s > 0 keeps steps <= s and drops later ones (it writes them again). From step 0 only the
        partition sizes may be there, perhaps in part (the first checkpoint precedes them): all
        go, and they are written again. So no (tag, step) shows twice and none is lost.
        """
        return self.step + 1 if self.step > 0 else 0

    def _save(self, writer: Any) -> None:
        """Samples and TensorBoard to disk first, then the checkpoint (see ``_purge_step``)."""
        self._write_samples(writer)
        writer.flush()
        self.checkpoint()

    def _log(self, writer: Any, bar: StageBar, log: Any) -> None:
        """Show and log DP outputs only: epsilon spent (the bar shows it) and the released clipping thresholds."""
        eps = self.accountant.spent().epsilon
        clip = float(np.mean(log.clip_norms))
        shown = {"clip": f"{clip:.3g}"}
        writer.add_scalar("privacy/epsilon", eps, self.step)
        writer.add_scalar("train/clip_norm", clip, self.step)
        if self.cfg.nonprivate_diagnostics:  # the mean loss on the private batch: NOT private
            shown["loss(nonprivate)"] = f"{log.loss:.2f}"
            writer.add_scalar("nonprivate/train_loss", log.loss, self.step)
        bar.show(**shown)

    def _write_samples(self, writer: Any) -> None:
        if self.data.image_shape is None:
            return
        g = torch.Generator()
        g.manual_seed(0)
        images = part_sample_grid(self.trainer.released_models(), self.data.image_shape, g)
        write_png_grid(self.layout.in_release(SAMPLES_FILE), images, nrow=8)
        writer.add_image("samples", image_grid(images, nrow=8), self.step, dataformats="HW")

    def released_models(self) -> list[torch.nn.Module]:
        """The trained models, calibrated to the noisy part means when ``model.calibrate`` is set."""
        models = self.trainer.released_models()
        if not self.cfg.model.calibrate:
            return models
        if self.means is None:
            raise ConfigError(f"{self.run_dir}: model.calibrate is set but the checkpoint holds no noisy part means")
        models = copy.deepcopy(models)  # the trainer's state (and the checkpoint) stay uncalibrated
        for model, probs in zip(models, self.means):
            calibrate_to_means(model, probs, min_items=self.release_min_items,
                               total=self.cfg.model.calibrate == "total")
        return models

    def finish(self) -> dict[str, Any]:
        """Write the release (calibrated if asked), the ledger and the report; drop private/ unless kept."""
        folder = self.layout.release
        save_models(folder, self.released_models(), self.partition.noisy_sizes, self.cfg.model,
                    self.data.item_names, self.data.image_shape, self.data.meta.get("item_ids"),
                    min_items=self.release_min_items, part_labels=part_labels(self.cfg),
                    length_shares=self.length_shares, empty_size=self.empty_size)
        self.accountant.ledger.save(folder / LEDGER_FILE)
        report = privacy_report(self.cfg, self.accountant, self.partition.noisy_sizes, self.steps, self.public,
                                self.empty_size)
        atomic_write_json(folder / REPORT_FILE, report)
        version, commit = dpgm_version()
        atomic_write_text(folder / SUMMARY_FILE,
                          summary_markdown(report, dataset=self.data.name, version=version, commit=commit))
        if not self.cfg.keep_private:
            self.layout.remove_private()
        return report


def train(cfg: Config, *, data: BinaryDataset | None = None, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Fresh run from a config; returns the run directory and the privacy report.

    ``data`` replaces the config's data section (for benchmarks that hold the records already).
    A run that fails before its first checkpoint leaves no run directory behind.
    """
    set_threads(cfg.threads)
    layout = RunLayout(Path(cfg.runs_dir) / cfg.name)
    layout.check_writable()  # a runs_dir that is a file or read-only fails before the data load
    if layout.checkpoint.exists() or layout.in_release(MODELS_FILE).exists():
        raise ConfigError(f"{layout.root} already holds a run: use --resume {layout.root} or another name (--set name=...)")
    if layout.exists():  # killed before its first checkpoint: nothing to resume, start again
        _remove_failed(layout, created_root=False)
    run = TrainingRun(cfg, layout.root, data=data, progress=progress)
    created = not layout.root.exists()
    layout.create()
    with _stop_requests() as stop:  # SIGINT/SIGTERM from here on: checkpoint, then stop
        try:
            run.start()
            run.checkpoint()  # the partition is never redone on resume: its charges are in this file
        except BaseException:
            _remove_failed(layout, created)
            raise
        run.train(stop)
    return layout.root, run.finish()


def _remove_failed(layout: RunLayout, created_root: bool) -> None:
    """Undo a run that failed before its first checkpoint (nothing worth resuming was made)."""
    shutil.rmtree(layout.release, ignore_errors=True)
    shutil.rmtree(layout.private, ignore_errors=True)
    if created_root and layout.root.is_dir() and not any(layout.root.iterdir()):
        layout.root.rmdir()


def _checkpoint_epsilon(cfg: Config, checkpoint: dict[str, Any]) -> EpsilonSource | None:
    """The epsilon a checkpoint's ledger holds, before the data are loaded again (None: its delta,
    which may depend on n, is not known yet: a checkpoint from before dpgm stored it)."""
    delta = checkpoint.get("delta") or cfg.privacy.delta
    if delta is None:
        return None
    epsilon = _run_accountant(cfg, delta, PrivacyLedger.from_json(checkpoint["ledger"])).spent().epsilon
    return lambda: epsilon


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
    run = TrainingRun(cfg, layout.root, progress=progress, spent_before=_checkpoint_epsilon(cfg, checkpoint))
    run.resume(checkpoint)
    with _stop_requests() as stop:
        run.train(stop)
    return layout.root, run.finish()

