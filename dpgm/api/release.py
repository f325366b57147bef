"""A release in memory: the models (or a baseline's model), the report and the release folder's
files, drawn from and saved without a run directory."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.api.kinds import as_dense
from dpgm.artifact import (
    ReleasedMixture,
    load_release,
    read_report,
    release_dir,
)
from dpgm.errors import ConfigError, DpgmError
from dpgm.privacy.verdict import stamped

#: The methods a Synthesizer knows: dpgm's own run, then the registered baselines.
DPGM = "dpgm"
#: A baseline's saved model: its metadata (JSON) and its arrays (npz, loaded without pickle).
BASELINE_FILE, BASELINE_ARRAYS = "baseline.json", "baseline.npz"


def _read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its path relative to it (a release folder is small)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()


@dataclass
class Release:
    """A fitted release held in memory: the model(s), the privacy report and the release folder's
    files (safe to share when the report's verdict has no warning). A Synthesizer holds one as
    ``release_``; ``dpgm`` runs have a ``mixture`` (the k trained models, noisy part sizes),
    baselines a ``baseline`` model."""

    report: dict[str, Any]
    item_names: list[str]
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    mixture: ReleasedMixture | None = field(default=None, repr=False)
    baseline: Any = field(default=None, repr=False)
    method: str = DPGM

    @property
    def privacy_report(self) -> dict[str, Any]:
        """The release's privacy report, its verdict first (not private and why, or weak)."""
        return stamped(self.report)

    @classmethod
    def read(cls, directory: str | Path) -> Release:
        """The release saved in ``directory`` (a run directory or its release folder)."""
        folder = release_dir(directory)
        if (folder / BASELINE_FILE).is_file():
            return cls._read_baseline(folder)
        mixture = load_release(directory)
        return cls(report=mixture.report, item_names=list(mixture.item_names), files=_read_files(folder),
                   mixture=mixture)

    @classmethod
    def _read_baseline(cls, folder: Path) -> Release:
        from dpgm.evaluation.baselines import model_from_state

        report = read_report(folder)
        try:
            meta = json.loads((folder / BASELINE_FILE).read_bytes())
            with np.load(folder / BASELINE_ARRAYS, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in saved.files}
            model = model_from_state(meta, arrays)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DpgmError(f"{folder}: cannot load the baseline release ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        return cls(report=report, item_names=list(meta["item_names"]), files=_read_files(folder),
                   baseline=model, method=str(meta.get("method", meta.get("kind"))))

    def draw(self, n: int | None = None, seed: int | None = None, *, labels: Sequence[int] | None = None,
             per_label: int | None = None) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray | None]:
        """``n`` synthetic records (dense uint8, or CSR from a baseline) and each one's label
        (None unless the run was partitioned by label); see ``sample``."""
        from dpgm.release import check_counts

        try:
            check_counts(n, per_label, ("n", "per_label"))
        except DpgmError as exc:
            raise ConfigError(f"sample: {exc}") from None
        if self.mixture is None:
            if labels is not None or per_label is not None:
                raise ConfigError(f"sample: labels and per_label need a dpgm run partitioned by label, "
                                  f"not the {self.method} baseline")
            return self.baseline.sample(n, np.random.default_rng(seed)).records, None
        import torch

        from dpgm.release import draw_plan, plan_chunks

        generator = torch.Generator()
        generator.manual_seed(seed if seed is not None else int(torch.seed()))
        plan = draw_plan(self.mixture, n, labels=labels, per_label=per_label)
        chunks = list(plan_chunks(self.mixture, plan, generator))
        records = np.concatenate([r for r, _ in chunks])
        if self.mixture.part_labels is None:
            return records, None
        parts = np.concatenate([p for _, p in chunks])
        return records, np.asarray(self.mixture.part_labels.labels)[parts]

    def sample(self, n: int | None = None, seed: int | None = None, *, labels: Sequence[int] | None = None,
               per_label: int | None = None, with_labels: bool = False) -> Any:
        """``n`` synthetic records as a dense 0/1 uint8 array (post-processing: no privacy cost).

        For a run partitioned by label (as ``generate.py --labels/--per-label``): ``labels`` keeps
        those labels (the noisy label histogram renormalised over them), ``per_label`` draws that
        many of each instead of ``n``, and ``with_labels`` returns (records, each record's label).
        """
        self._check_labels(with_labels)
        records, got = self.draw(n, seed, labels=labels, per_label=per_label)
        records = as_dense(records)
        return (records, got) if with_labels else records

    def _check_labels(self, with_labels: bool) -> None:
        if with_labels and (self.mixture is None or self.mixture.part_labels is None):
            raise ConfigError("sample: with_labels needs a run partitioned by label (partition.method: label)")

    def save(self, directory: str | Path) -> Path:
        """Write the release folder to ``directory`` (created; must not exist); returns it."""
        target = Path(directory)
        if target.exists():
            raise ConfigError(f"save: {target} already exists")
        try:
            for name, content in self.files.items():
                path = target / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
        except OSError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise DpgmError(f"save: cannot write {target} ({exc.strerror or type(exc).__name__})") from None
        return target
