"""The Python API: ``dpgm.fit(data, ...) -> Release``, ``Release.sample``, ``Release.save``, ``dpgm.load``.

In the style of scikit-learn and smartnoise-synth. The command-line fronts are thin layers over
``train``, ``resume`` and ``write_release`` below (run directories with checkpoints, as
train.py and generate.py need them); ``fit`` runs the same pipeline in a temporary directory. ``fit``
trains one run (partition, part means, DP-SGD, all charged to one ledger) and returns its
release: the only thing a user may share. Data: a dense 0/1 array, a scipy sparse matrix, a
pandas DataFrame of 0/1 columns (its column names become the item names) or a BinaryDataset.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.artifact import RELEASE_DIR, REPORT_FILE, ReleasedMixture, load_release, release_dir
from dpgm.config import config_from_dict, load_config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DpgmError

#: ``fit`` without a config: the generic rules from public quantities (configs/transactions.yaml).
GENERIC = {"rules": "public", "privacy": {"target_epsilon": 1.0}}


def as_dataset(data: Any, name: str = "data") -> BinaryDataset:
    """A BinaryDataset from an array, a sparse matrix, a DataFrame of 0/1 columns or a BinaryDataset."""
    if isinstance(data, BinaryDataset):
        return data
    if hasattr(data, "columns") and hasattr(data, "to_numpy"):  # a pandas DataFrame, without importing pandas
        return BinaryDataset(records=data.to_numpy(), item_names=[str(c) for c in data.columns], name=name)
    records = data.tocsr() if sp.issparse(data) else np.asarray(data)
    if records.ndim != 2:
        raise ConfigError(f"fit: data must be 2-d (records x items), got shape {records.shape}")
    return BinaryDataset(records=records, item_names=[str(j) for j in range(records.shape[1])], name=name)


@dataclass
class Release:
    """A trained run's release: models, noisy part sizes and the privacy report (safe to share)."""

    folder: Path
    mixture: ReleasedMixture

    @property
    def privacy_report(self) -> dict[str, Any]:
        return dict(self.mixture.report)

    @property
    def item_names(self) -> list[str]:
        return list(self.mixture.item_names)

    def sample(self, n: int | None = None, seed: int | None = None, *, labels: Sequence[int] | None = None,
               per_label: int | None = None, with_labels: bool = False) -> Any:
        """``n`` synthetic records as a dense 0/1 uint8 array (post-processing: no privacy cost).

        For a run partitioned by label (as ``generate.py --labels/--per-label``): ``labels`` keeps
        those labels (the noisy label histogram renormalised over them), ``per_label`` draws that
        many of each instead of ``n``, and ``with_labels`` returns (records, each record's label).
        """
        import torch

        from dpgm.release import check_counts, draw_plan, plan_chunks

        try:
            check_counts(n, per_label, ("n", "per_label"))
        except DpgmError as exc:
            raise ConfigError(f"sample: {exc}") from None
        if with_labels and self.mixture.part_labels is None:
            raise ConfigError("sample: with_labels needs a run partitioned by label (partition.method: label)")
        generator = torch.Generator()
        generator.manual_seed(seed if seed is not None else int(torch.seed()))
        plan = draw_plan(self.mixture, n, labels=labels, per_label=per_label)
        chunks = list(plan_chunks(self.mixture, plan, generator))
        records = np.concatenate([r for r, _ in chunks])
        if not with_labels:
            return records
        parts = np.concatenate([p for _, p in chunks])
        return records, np.asarray(self.mixture.part_labels.labels)[parts]

    def save(self, directory: str | Path) -> Path:
        """Copy the release folder to ``directory`` (created; must not exist); returns it."""
        target = Path(directory)
        if target.exists():
            raise ConfigError(f"save: {target} already exists")
        shutil.copytree(self.folder, target)
        return target


def train(config: str | Path, *, overrides: Sequence[str] = (), progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Train a run from a config file or shipped name (``--set`` style ``overrides``) into
    runs_dir/name; returns the run directory and its privacy report. The config is checked
    before torch loads, so a bad one fails at once."""
    cfg = load_config(config, list(overrides))
    from dpgm.pipeline.run import train as train_run

    return train_run(cfg, progress=progress)


def resume(run_dir: str | Path, *, progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Continue an interrupted run from its last checkpoint; returns its directory and privacy report."""
    from dpgm.pipeline.run import resume as resume_run

    return resume_run(run_dir, progress=progress)


def write_release(run: str | Path, out: str | Path, n: int | None, **options: Any) -> dict[str, Any]:
    """Draw synthetic records from a run's release into the file ``out`` (``dpgm.release.release``'s
    options: fmt, seed, threshold, labels, per_label, progress, mkdir); returns the release's report."""
    from dpgm.release import release

    return release(run, out, n, **options)


def load(directory: str | Path) -> Release:
    """The release saved in ``directory`` (a run directory or its release folder)."""
    return Release(folder=release_dir(directory), mixture=load_release(directory))


def fit(
    data: Any,
    *,
    config: str | Path | dict[str, Any] | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    seed: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> Release:
    """Train dpgm on ``data`` and return its release.

    ``config``: a shipped config's name, a YAML path or a dict (default: the generic rules);
    ``epsilon``/``delta`` set the whole run's budget; ``overrides`` are dotted keys with their
    values (``fit(x, **{"training.epochs": 5})``). The run's private folder is deleted. A ``seed``
    makes the run a replayable experiment: its report then says NOT DIFFERENTIALLY PRIVATE.
    """
    from dpgm.pipeline.run import train

    sets = [f"{key}={value}" for key, value in overrides.items()]
    sets += [f"privacy.target_epsilon={epsilon}"] if epsilon is not None else []
    sets += [f"privacy.delta={delta}"] if delta is not None else []
    sets += [f"seed={seed}"] if seed is not None else []
    with tempfile.TemporaryDirectory(prefix="dpgm-fit-") as tmp:
        sets += [f"runs_dir={tmp}", "name=fit", "keep_private=false"]
        if isinstance(config, dict) or config is None:
            cfg = config_from_dict(dict(config or GENERIC), sets)
        else:
            cfg = load_config(config, sets)
        run_dir, _ = train(cfg, data=as_dataset(data, name=cfg.name), progress=progress)
        kept = Path(tempfile.mkdtemp(prefix="dpgm-release-"))
        shutil.copytree(run_dir / RELEASE_DIR, kept, dirs_exist_ok=True)
    if not (kept / REPORT_FILE).is_file():  # pragma: no cover - train() always writes it
        raise ConfigError("fit: the run wrote no privacy report")
    return load(kept)
