"""A run directory on disk: what training writes and the release reads (docs/privacy.md).

    runs/<name>/release/   DP outputs only (safe to share when privacy_report.json's verdict has no
                           warning: dpgm.privacy.verdict): config.yaml, models.pt (weights,
                           noisy part sizes, each part's label when parts are labels), ledger.json,
                           privacy_report.json, samples.png for images, tensorboard/ (epsilon,
                           released thresholds and sizes)
    runs/<name>/private/   checkpoint.pt (per-record part assignments, generator state):
                           directory 0700, files 0600, deleted when the run completes unless kept

Both ``dpgm.training`` (writer) and ``dpgm.release`` (reader) import this module, never each
other. ``models.pt`` holds plain tensors and built-ins only (loads with weights_only=True).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.config import ModelConfig, moved_model_keys
from dpgm.errors import DpgmError
from dpgm.io import OutputError, atomic_write, check_folder

if TYPE_CHECKING:  # torch is imported where models are saved or loaded: CLIs check paths first, fast
    from torch import nn

RELEASE_DIR, PRIVATE_DIR = "release", "private"
CONFIG_FILE = "config.yaml"
MODELS_FILE = "models.pt"
LEDGER_FILE = "ledger.json"
REPORT_FILE = "privacy_report.json"
SUMMARY_FILE = "privacy_report.md"
SAMPLES_FILE = "samples.png"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINT_FILE = "checkpoint.pt"
#: Output formats of a release (release.py writes them).
FORMATS = ("csv", "transactions", "png")
#: Most records one release may draw: ten times the largest data set dpgm ships a config for
#: (msnbc, 989,818 records). More is never needed to mimic a data set, and would take hours and
#: many GB (MNIST: 1.6 kB of CSV a record); draw several releases with other seeds instead.
MAX_RECORDS = 10_000_000
#: Most images in one PNG grid (50 x 50): the grid is built in memory; an MNIST one is then
#: 5,650 pixels square, and a person cannot look at more anyway.
MAX_PNG_IMAGES = 2_500

@dataclass(frozen=True)
class RunLayout:
    """The paths of one run directory."""

    root: Path

    @property
    def release(self) -> Path:
        return self.root / RELEASE_DIR

    @property
    def private(self) -> Path:
        return self.root / PRIVATE_DIR

    @property
    def checkpoint(self) -> Path:
        return self.private / CHECKPOINT_FILE

    def rank_checkpoint(self, rank: int) -> Path:
        """The private state of rank ``rank`` > 0 of a run on several ranks (``save_rank_state``)."""
        return self.private / f"rank-{rank}.pt"

    def save_rank_state(self, rank: int, stages: list[Any]) -> None:
        """Atomically save what only rank ``rank`` > 0 holds (each stage's ``rank_state_dict``: its records'
        parts), owner-only, beside rank 0's checkpoint; rank 0's state is the checkpoint itself."""
        import torch

        if rank == 0:
            return
        state = {stage.name: own for stage in stages if (own := stage.rank_state_dict()) is not None}
        self.private.mkdir(mode=0o700, parents=True, exist_ok=True)
        with atomic_write(self.rank_checkpoint(rank), "wb", private=True) as fh:
            torch.save(state, fh)

    def rank_state(self, rank: int) -> dict[str, Any]:
        """What ``save_rank_state`` saved for ``rank`` (rank 0: nothing, its state is the checkpoint)."""
        import torch

        if rank == 0:
            return {}
        if not self.rank_checkpoint(rank).is_file():
            raise DpgmError(f"{self.root}: rank {rank}'s state was never saved (the run stopped as it began): "
                            "start it again with --config")
        return torch.load(self.rank_checkpoint(rank), map_location="cpu", weights_only=True)

    def in_release(self, name: str) -> Path:
        return self.release / name

    def exists(self) -> bool:
        """True when the folder already holds a run (finished or not)."""
        return self.release.exists() or self.private.exists()

    def check_writable(self) -> None:
        """One-line OutputError, before any work, when the run directory cannot be made here
        (``runs_dir`` or the run's folder is a file, or is read-only)."""
        check_folder(self.root, f"run directory {self.root}")

    def create(self) -> bool:
        """Make release/ (usual permissions) and private/ (owner only, 0700); True if the root is new."""
        created = not self.root.exists()
        try:
            self.release.mkdir(parents=True, exist_ok=True)
            self.private.mkdir(mode=0o700, exist_ok=True)
            os.chmod(self.private, 0o700)  # mkdir's mode is filtered by the umask
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise OutputError(f"run directory {self.root}: cannot create it ({reason})") from None
        return created

    def remove_private(self) -> None:
        """Delete private/ (checkpoint and all): the run is complete and its release written."""
        shutil.rmtree(self.private, ignore_errors=True)

    def remove_unfinished(self, *, created_root: bool) -> None:
        """Undo a run that failed before its first checkpoint (nothing worth resuming was made): its
        release/ and private/, and the run folder itself when the run created it and it is empty."""
        shutil.rmtree(self.release, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)
        if created_root and self.root.is_dir() and not any(self.root.iterdir()):
            self.root.rmdir()


def release_dir(path: str | Path) -> Path:
    """The release folder of a run: ``path/release`` for a run directory, else ``path`` itself."""
    path = Path(path)
    return path / RELEASE_DIR if (path / RELEASE_DIR).is_dir() else path


def read_summary(path: str | Path) -> str:
    """The run's privacy report for people (``privacy_report.md`` in its release folder)."""
    summary = release_dir(path) / SUMMARY_FILE
    if not summary.is_file():
        raise DpgmError(f"{path}: no {RELEASE_DIR}/{SUMMARY_FILE} (a run made before dpgm wrote one)")
    return summary.read_text()


def check_release(path: str | Path) -> Path:
    """The release folder of a finished run with a readable privacy report, or a one-line error
    (no torch needed)."""
    folder = release_dir(path)
    if not (folder / MODELS_FILE).is_file():
        raise DpgmError(f"{path}: no {RELEASE_DIR}/{MODELS_FILE} (is this a finished train.py run directory?)")
    read_report(folder)
    return folder


def check_record_limit(count: int | None, name: str) -> None:
    """One-line error when ``count`` (``name``'s value) is over MAX_RECORDS (no torch needed)."""
    if count is not None and count > MAX_RECORDS:
        raise DpgmError(f"{name} must be <= {MAX_RECORDS:,} (the most records one release may "
                        f"draw), got {count:,}")


def read_report(folder: Path) -> dict[str, Any]:
    """The privacy report of a release folder; a missing or broken one is a one-line error that
    names it (the report is public: its line and column may be shown)."""
    report_path = folder / REPORT_FILE
    try:
        report = json.loads(report_path.read_bytes())
    except FileNotFoundError:
        raise DpgmError(f"{report_path}: not found; no release without a privacy report") from None
    except json.JSONDecodeError as exc:
        raise DpgmError(f"{report_path}: broken privacy report (not valid JSON at line "
                        f"{exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = type(exc).__name__
        raise DpgmError(f"{report_path}: cannot read the privacy report ({reason})") from None
    if not isinstance(report, dict) or not isinstance(report.get("epsilon"), (int, float)):
        raise DpgmError(f"{report_path}: broken privacy report (no epsilon)")
    return report


#: Name of the release's label column when the data declare none (MNIST, digits).
LABEL_COLUMN = "label"


@dataclass(frozen=True)
class PartLabels:
    """The label of each part when the run partitioned by label (part j holds label ``labels[j]``).

    ``labels`` is the declared (public) label set, ``column`` the name of the label column a
    CSV release writes (the data's own label column, so a release loads like its source).
    """

    labels: tuple[int, ...]
    column: str = LABEL_COLUMN

    def part_of(self, label: int) -> int:
        """The part holding ``label``; a label outside the declared set is a one-line error."""
        if label not in self.labels:
            declared = ",".join(map(str, self.labels))
            raise DpgmError(f"--labels: {label} is not a declared label (this run's labels: {declared})")
        return self.labels.index(label)


@dataclass
class ReleasedMixture:
    """The k trained models with the released (noisy) part sizes and the data's shape."""

    models: list[nn.Module]
    noisy_sizes: np.ndarray
    item_names: list[str]
    image_shape: tuple[int, int] | None
    report: dict[str, Any]
    item_ids: list[int]  # each column's id in the source file's item universe (transactions output)
    min_items: int = 0  # data.min_items: the release draws again every record with fewer items
    part_labels: PartLabels | None = None  # each part's label when the run partitioned by label
    length_shares: np.ndarray | None = None  # noisy shares of records of each length 0..m (drawn to follow)
    empty_size: float | None = None  # noisy count of empty records, a part of their own (after the k models)
    pair_edges: np.ndarray | None = None  # [e, 2] item pairs whose frequencies the release follows
    pair_targets: np.ndarray | None = None  # [m + e] item then pair frequencies (``dpgm.stages.release_pairs``)
    pairs_pool: int = 1  # draws per released record among which it picks by weight (``model.pairs_pool``)

    @property
    def n_items(self) -> int:
        return len(self.item_names)


def save_models(
    folder: Path,
    models: list[nn.Module],
    noisy_sizes: np.ndarray,
    model_cfg: ModelConfig,
    item_names: list[str],
    image_shape: tuple[int, int] | None,
    item_ids: list[int] | None = None,
    *,
    min_items: int = 0,
    stages: Mapping[str, Any] | None = None,
) -> None:
    """Write ``folder/models.pt``; ``item_ids`` maps each column to its id in the source data,
    ``min_items`` is the declared least number of items per record (``data.min_items``), ``stages``
    what the run's stages add to it (``dpgm.stages.released_payload``: each part's label, the noisy
    count of empty records, the length shares and the pairs the release follows), public values only."""
    import torch

    payload = {
        # each model's own values (a stacked model's parameters are views of its stack: dpgm.training.stacked)
        "state_dicts": [{k: v.detach().cpu().clone() for k, v in m.state_dict().items()} for m in models],
        "noisy_sizes": torch.as_tensor(np.asarray(noisy_sizes, dtype=np.float64)),
        "model": {"kind": model_cfg.kind, "options": dict(model_cfg.options)},  # which model, of which shape
        "item_names": list(item_names),
        "item_ids": [int(i) for i in item_ids] if item_ids is not None else list(range(len(item_names))),
        "image_shape": list(image_shape) if image_shape else None,
        "min_items": int(min_items),
        **(stages or {}),
    }
    with atomic_write(folder / MODELS_FILE, "wb") as fh:
        torch.save(payload, fh)


def load_release(path: str | Path) -> ReleasedMixture:
    """Load a run's release (a run directory or its release/ folder); no code is unpickled."""
    import torch

    from dpgm.models import build_model

    folder = check_release(path)
    report = read_report(folder)
    models_path = folder / MODELS_FILE
    try:
        payload = torch.load(models_path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 (a corrupt or foreign file fails in many ways)
        first_line = str(exc).strip().split("\n", 1)[0]
        raise DpgmError(f"{models_path}: cannot load the release "
                        f"({exc.__class__.__name__}: {first_line})") from None
    cfg = ModelConfig(**moved_model_keys(payload["model"]))  # an older release states its shape in flat keys
    n_items = len(payload["item_names"])
    models = []
    for state in payload["state_dicts"]:
        model = build_model(cfg, n_items)
        model.load_state_dict(state)
        model.eval()
        models.append(model)
    shape = payload["image_shape"]
    return ReleasedMixture(
        models=models,
        noisy_sizes=payload["noisy_sizes"].numpy(),
        item_names=list(payload["item_names"]),
        image_shape=tuple(shape) if shape else None,
        report=report,
        item_ids=list(payload.get("item_ids", range(n_items))),
        min_items=int(payload.get("min_items", 0)),
        part_labels=_part_labels(payload.get("part_labels")),
        length_shares=None if payload.get("length_shares") is None else payload["length_shares"].numpy(),
        empty_size=payload.get("empty_size"),
        **_pairs(payload.get("pairs")),
    )


def _pairs(saved: dict[str, Any] | None) -> dict[str, Any]:
    """The ``pairs`` entry of models.pt as ReleasedMixture fields (absent: the release follows no pairs)."""
    if saved is None:
        return {}
    return {"pair_edges": saved["edges"].numpy(), "pair_targets": saved["targets"].numpy(), "pairs_pool": saved["pool"]}


def _part_labels(saved: dict[str, Any] | None) -> PartLabels | None:
    """The ``part_labels`` entry of models.pt (absent in releases made before dpgm wrote it)."""
    return None if saved is None else PartLabels(labels=tuple(saved["labels"]), column=saved["column"])
