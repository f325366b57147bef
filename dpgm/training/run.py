"""One training run end to end: load -> DP item choice -> DP partition -> noisy part means -> DP-SGD mixture.

The run directory holds the resolved config, the release (``models.pt``), the ledger,
``privacy_report.json``, sample grids for image data, TensorBoard logs and a checkpoint.
The checkpoint and the TensorBoard logs are PRIVATE (per-record part assignments, batch
losses): share only what generate.py writes.
"""

from __future__ import annotations

import copy
import secrets
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from tqdm import tqdm

from dpgm.clustering import make_partitioner
from dpgm.clustering.base import Partition
from dpgm.config import Config, load_config
from dpgm.data import load_dataset, load_public_sample, noisy_top_item_ids, restrict_items
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError, PrivacyBudgetError
from dpgm.io import atomic_write, atomic_write_json, atomic_write_text
from dpgm.models import build_model
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import default_delta, sigma_for_epsilon, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.release import REPORT_FILE, image_grid, part_sample_grid, save_release, write_png_grid
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore
from dpgm.training.part_means import calibrate_to_means, noisy_part_means, start_at_means

CONFIG_FILE = "config.yaml"
CHECKPOINT_FILE = "checkpoint.pt"
LEDGER_FILE = "ledger.json"
SAMPLES_FILE = "samples.png"
ITEMS_STAGE = "items"


def _generators(seed: int | None) -> tuple[np.random.Generator, torch.Generator]:
    """One numpy and one torch generator, from the seed or from OS entropy."""
    seed_value = seed if seed is not None else secrets.randbits(63)
    g = torch.Generator()
    g.manual_seed(seed_value)
    return np.random.default_rng(seed_value), g


def _check_plan(cfg: Config, data: BinaryDataset) -> None:
    if cfg.partition.k > data.n_records:
        raise DataError(f"{data.where}: partition.k = {cfg.partition.k} parts for only {data.n_records} records")
    if cfg.partition.method == "label" and data.labels is None:
        raise ConfigError("partition.method: 'label' needs a dataset with labels")


def privacy_report(cfg: Config, accountant: Accountant, partition_sizes: np.ndarray, steps: int) -> dict[str, Any]:
    """The JSON report beside every release: epsilon, delta, relation, accountant, stages."""
    report = accountant.report()
    report["accountant"] = "rdp (moments accountant), tight RDP-to-DP conversion"
    report["fixed_seed"] = cfg.seed is not None
    report["noisy_part_sizes"] = [float(s) for s in partition_sizes]
    report["plan"] = {
        "partition": cfg.partition.method, "k": len(partition_sizes), "schedule": cfg.training.schedule,
        "steps_taken": accountant.ledger.count(STAGE), "steps_planned": steps,
        "sampling_rate": cfg.training.sampling_rate, "noise_multiplier": cfg.training.noise_multiplier,
        "clipping": cfg.training.clipping, "hist_noise_multiplier": cfg.training.hist_noise_multiplier,
        "calibrated_to_noisy_means": cfg.model.calibrate,
    }
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


class TrainingRun:
    """State of one run: data, accountant, partition, trainer; knows how to checkpoint."""

    def __init__(self, cfg: Config, run_dir: Path, *, data: BinaryDataset | None = None, progress: bool = True) -> None:
        self.cfg, self.run_dir, self.progress = cfg, run_dir, progress
        self.data = data if data is not None else load_dataset(cfg.data)
        _check_plan(cfg, self.data)
        self.delta = cfg.privacy.delta or default_delta(self.data.n_records)
        self.steps = steps_for_epochs(cfg.training.epochs, cfg.training.sampling_rate)
        self.step = 0

    def _accountant(self, ledger: PrivacyLedger | None) -> Accountant:
        p = self.cfg.privacy
        return Accountant(ledger, delta=self.delta, budget_epsilon=p.target_epsilon, bound=p.dependent_bound)

    # ---------------------------------------------------------------- stages
    def start(self) -> None:
        """Fresh run: partition (charged), calibrate if asked, build the trainer."""
        cfg = self.cfg
        rng, self.generator = _generators(cfg.seed)
        self.accountant = self._accountant(None)
        self._choose_items(rng)
        public = load_public_sample(cfg.data) if cfg.partition.init == "public" else None
        self.partition: Partition = make_partitioner(cfg.partition, public=public).fit(self.data, self.accountant, rng)
        self.means = None
        if cfg.model.output_bias == "noisy_mean":
            self.means = noisy_part_means(
                self.data.records, self.partition.assignments, self.partition.noisy_sizes,
                clip=cfg.model.mean_clip, noise_multiplier=cfg.model.mean_noise_multiplier,
                accountant=self.accountant, rng=rng,
            )
        if cfg.privacy.target_epsilon is not None:
            _calibrate_training_noise(cfg, self.accountant, self.steps)
        self._build_trainer(self.means)
        atomic_write_text(self.run_dir / CONFIG_FILE, yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    def _choose_items(self, rng: np.random.Generator) -> None:
        """``data.top_items``: keep the m items with the largest NOISY counts (charged, stage 'items')."""
        m = self.cfg.data.top_items
        columns = np.arange(self.data.n_items)
        if m is not None and m < self.data.n_items:
            columns = noisy_top_item_ids(self.data, m, noise_multiplier=self.cfg.data.top_items_noise_multiplier,
                                         accountant=self.accountant, rng=rng, stage=ITEMS_STAGE)
            self.data = restrict_items(self.data, columns)
        self.columns = columns

    def _build_trainer(self, output_probs: np.ndarray | None = None) -> None:
        """One model per part (output biases from ``output_probs`` [k, n_items] if given) and the trainer."""
        models = [build_model(self.cfg.model, self.data.n_items, generator=self.generator).to(self.cfg.device)
                  for _ in range(self.partition.k)]
        if output_probs is not None:
            for model, probs in zip(models, output_probs):
                start_at_means(model, probs)
        self.trainer = MixtureTrainer(
            models, RecordStore(self.data.records, self.cfg.device), self.partition.assignments,
            self.partition.noisy_sizes, self.cfg.training,
            generator=self.generator,
        )

    def resume(self, checkpoint: dict[str, Any]) -> None:
        """Continue from a checkpoint: ledger, step counter and random state come back together."""
        self.generator = torch.Generator()
        self.generator.set_state(checkpoint["generator"])
        ledger = PrivacyLedger.from_json(checkpoint["ledger"])
        self.accountant = self._accountant(ledger)
        self.columns = np.asarray(checkpoint.get("columns", torch.arange(self.data.n_items)))
        if len(self.columns) < self.data.n_items:
            self.data = restrict_items(self.data, self.columns)  # the private choice, not redone
        self.partition = Partition(assignments=checkpoint["assignments"].numpy(),
                                   noisy_sizes=checkpoint["noisy_sizes"].numpy())
        means = checkpoint.get("noisy_means")
        self.means = None if means is None else means.numpy()
        self.step = int(checkpoint["step"])
        self._build_trainer()
        self.trainer.load_state_dict(checkpoint["trainer"])

    def checkpoint(self) -> None:
        """Atomically save everything needed to resume; ledger and step counter in ONE file."""
        state = {
            "step": self.step,
            "trainer": self.trainer.state_dict(),
            "ledger": self.accountant.ledger.to_json(),
            "assignments": torch.as_tensor(self.partition.assignments),
            "noisy_sizes": torch.as_tensor(self.partition.noisy_sizes),
            "columns": torch.as_tensor(self.columns),
            "noisy_means": None if self.means is None else torch.as_tensor(self.means),
            "generator": self.generator.get_state(),
        }
        with atomic_write(self.run_dir / CHECKPOINT_FILE, "wb") as fh:
            torch.save(state, fh)

    # ---------------------------------------------------------------- loop
    def train(self) -> None:
        """Run the remaining steps with a progress bar, TensorBoard logs and checkpoints."""
        from torch.utils.tensorboard import SummaryWriter

        t = self.cfg.training
        writer = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=self.step or None)
        for j, size in enumerate(self.partition.noisy_sizes):
            writer.add_scalar("partition/noisy_size", float(size), j)
        bar = tqdm(total=self.steps, initial=self.step, disable=not self.progress, desc="DP-SGD", unit="step")
        try:
            while self.step < self.steps:
                try:
                    log = self.trainer.step(self.accountant)
                except PrivacyBudgetError as exc:
                    bar.write(f"stopping before step {self.step + 1}: {exc}")
                    break
                self.step += 1
                bar.update(1)
                if self.step % t.log_every == 0 or self.step == self.steps:
                    eps = self.accountant.spent().epsilon
                    bar.set_postfix(loss=f"{log.loss:.2f}", eps=f"{eps:.3f}")
                    writer.add_scalar("train/loss", log.loss, self.step)
                    writer.add_scalar("privacy/epsilon", eps, self.step)
                    writer.add_scalar("train/clip_norm", float(np.mean(log.clip_norms)), self.step)
                if self.step % t.checkpoint_every == 0:
                    self.checkpoint()
                    self._write_samples(writer)
        finally:
            bar.close()
        self.checkpoint()
        self._write_samples(writer)
        writer.close()

    def _write_samples(self, writer: Any) -> None:
        if self.data.image_shape is None:
            return
        g = torch.Generator()
        g.manual_seed(0)
        images = part_sample_grid(self.trainer.released_models(), self.data.image_shape, g)
        write_png_grid(self.run_dir / SAMPLES_FILE, images, nrow=8)
        writer.add_image("samples", image_grid(images, nrow=8), self.step, dataformats="HW")

    def released_models(self) -> list[torch.nn.Module]:
        """The trained models, calibrated to the noisy part means when ``model.calibrate`` is set."""
        models = self.trainer.released_models()
        if not self.cfg.model.calibrate:
            return models
        if self.means is None:
            raise ConfigError(f"{self.run_dir}: model.calibrate is set but the checkpoint holds no noisy part means "
                              "(written by an older dpgm); set model.calibrate=false in its config.yaml")
        models = copy.deepcopy(models)  # the trainer's state (and the checkpoint) stay uncalibrated
        for model, probs in zip(models, self.means):
            calibrate_to_means(model, probs)
        return models

    def finish(self) -> dict[str, Any]:
        """Write the release (calibrated if asked), the ledger and the privacy report."""
        save_release(self.run_dir, self.released_models(), self.partition.noisy_sizes, self.cfg.model,
                     self.data.item_names, self.data.image_shape, self.data.meta.get("item_ids"))
        self.accountant.ledger.save(self.run_dir / LEDGER_FILE)
        report = privacy_report(self.cfg, self.accountant, self.partition.noisy_sizes, self.steps)
        atomic_write_json(self.run_dir / REPORT_FILE, report)
        return report


def train(cfg: Config, *, data: BinaryDataset | None = None, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Fresh run from a config; returns the run directory and the privacy report.

    ``data`` replaces the config's data section (for benchmarks that hold the records already).
    """
    run_dir = Path(cfg.runs_dir) / cfg.name
    if (run_dir / CHECKPOINT_FILE).exists():
        raise ConfigError(f"{run_dir} already holds a run: use --resume {run_dir} or another name (--set name=...)")
    run_dir.mkdir(parents=True, exist_ok=True)
    run = TrainingRun(cfg, run_dir, data=data, progress=progress)
    run.start()
    run.checkpoint()  # the partition is never redone on resume: its charges are in this file
    run.train()
    return run_dir, run.finish()


def resume(run_dir: str | Path, *, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Continue an interrupted run from its last checkpoint."""
    run_dir = Path(run_dir)
    if not (run_dir / CHECKPOINT_FILE).is_file():
        raise ConfigError(f"{run_dir}: no {CHECKPOINT_FILE} to resume from")
    cfg = load_config(run_dir / CONFIG_FILE)
    run = TrainingRun(cfg, run_dir, progress=progress)
    run.resume(torch.load(run_dir / CHECKPOINT_FILE, map_location="cpu", weights_only=True))
    run.train()
    return run_dir, run.finish()
