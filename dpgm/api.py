"""The Python API: ``dpgm.Synthesizer`` (scikit-learn style), ``dpgm.fit`` and ``dpgm.load``.

    synth = dpgm.Synthesizer(epsilon=1.0).fit(frame)   # a DataFrame of 0/1 columns
    synthetic = synth.sample(1000)                      # a DataFrame with the same columns
    synth.save("my_release"); dpgm.load("my_release")

``Synthesizer`` keeps its parameters as given (``get_params``/``set_params``, so
``sklearn.base.clone`` works); ``fit`` trains one run (partition, part means, DP-SGD, all charged
to one ledger) or a DP baseline (``method="marginals"``, ``"mwem"``, ``"aim"``, ``"mst"``,
``"mwem_pgm"``, from ``dpgm.evaluation.baselines.BASELINES``) and holds its release in memory:
the only thing a user may share. A run needs a folder, a temporary one removed before ``fit``
returns unless ``run_dir`` keeps it. ``sample`` returns the kind of data ``fit`` was given: a
pandas DataFrame (same columns and dtypes), a scipy CSR matrix, a numpy array or a BinaryDataset.

The command-line fronts are thin layers over ``train``, ``resume`` and ``write_release`` below
(run directories with checkpoints, as train.py and generate.py need them).
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from dpgm.artifact import (
    LEDGER_FILE,
    RELEASE_DIR,
    REPORT_FILE,
    ReleasedMixture,
    load_release,
    not_private_warning,
    read_report,
    release_dir,
)
from dpgm.config import Config, config_from_dict, load_config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DpgmError

__all__ = ["GENERIC", "InputKind", "NotFittedError", "Release", "Synthesizer", "as_dataset", "fit", "load",
           "resume", "train", "write_release"]

#: The config a Synthesizer uses unless told: the generic rules from public quantities.
DEFAULT_CONFIG = "transactions"
#: ``fit`` without a config: the generic rules from public quantities (configs/transactions.yaml).
GENERIC = {"rules": "public", "privacy": {"target_epsilon": 1.0}}
#: What ``Synthesizer.save`` adds to a release folder: the method, the input kind and the parameters.
SYNTHESIZER_FILE = "synthesizer.json"
#: A baseline's saved model: its metadata (JSON) and its arrays (npz, loaded without pickle).
BASELINE_FILE, BASELINE_ARRAYS = "baseline.json", "baseline.npz"
#: The methods a Synthesizer knows: dpgm's own run, then the registered baselines.
DPGM = "dpgm"

InputKindName = Literal["array", "sparse", "dataframe", "dataset"]


class NotFittedError(DpgmError, ValueError, AttributeError):
    """A Synthesizer was asked for samples, a report or a save before ``fit`` (as scikit-learn's)."""


def as_dataset(data: Any, name: str = "data") -> BinaryDataset:
    """A BinaryDataset from an array, a sparse matrix, a DataFrame of 0/1 columns or a BinaryDataset."""
    if isinstance(data, BinaryDataset):
        return data
    if _is_frame(data):
        return BinaryDataset(records=data.to_numpy(), item_names=[str(c) for c in data.columns], name=name)
    records = data.tocsr() if sp.issparse(data) else np.asarray(data)
    if records.ndim != 2:
        raise ConfigError(f"fit: data must be 2-d (records x items), got shape {records.shape}")
    return BinaryDataset(records=records, item_names=[str(j) for j in range(records.shape[1])], name=name)


def _is_frame(data: Any) -> bool:
    """A pandas DataFrame, recognised without importing pandas."""
    return hasattr(data, "columns") and hasattr(data, "to_numpy") and hasattr(data, "dtypes")


def _kept_dtype(dtype: Any) -> str:
    """The dtype synthetic records get for an input of ``dtype``: bool, integer and float dtypes
    are kept (0/1 fits each), anything else (object, pandas extension types) becomes uint8."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return "bool" if str(dtype).lower() == "boolean" else "uint8"
    return dt.name if dt.kind in "biuf" else "uint8"


def _json_label(label: Any) -> Any:
    """A column label as JSON keeps it: str, int, float and bool as they are, others as text."""
    if isinstance(label, (bool, np.bool_)):
        return bool(label)
    if isinstance(label, (int, np.integer)):
        return int(label)
    if isinstance(label, (float, np.floating)):
        return float(label)
    return label if isinstance(label, str) else str(label)


@dataclass(frozen=True)
class InputKind:
    """What ``fit`` was given, so that ``sample`` returns the same kind (saved with a release)."""

    kind: InputKindName
    dtype: str = "uint8"  # array, sparse: the records' dtype
    columns: list[Any] | None = None  # dataframe: the column labels
    dtypes: list[str] | None = None  # dataframe: each column's dtype
    sparse_array: bool = False  # sparse: a scipy sparse array (csr_array) rather than a matrix
    dense: bool = True  # dataset: records dense (else CSR)
    image_shape: tuple[int, int] | None = None  # dataset: the image shape, if any

    @classmethod
    def of(cls, data: Any) -> InputKind:
        if isinstance(data, BinaryDataset):
            return cls("dataset", dense=not sp.issparse(data.records), image_shape=data.image_shape)
        if _is_frame(data):
            return cls("dataframe", columns=[_json_label(c) for c in data.columns],
                       dtypes=[_kept_dtype(d) for d in data.dtypes])
        if sp.issparse(data):
            return cls("sparse", dtype=_kept_dtype(data.dtype), sparse_array=isinstance(data, sp.sparray))
        return cls("array", dtype=_kept_dtype(np.asarray(data).dtype))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> InputKind:
        shape = saved.get("image_shape")
        return cls(**{**saved, "image_shape": tuple(shape) if shape else None})

    def restore(self, records: np.ndarray | sp.csr_matrix, item_names: list[str],
                labels: np.ndarray | None = None) -> Any:
        """``records`` (dense 0/1 or CSR) as this kind of data."""
        if self.kind == "dataset":
            out = sp.csr_matrix(records) if not self.dense else _dense(records)
            return BinaryDataset(records=out, item_names=list(item_names), labels=labels, name="synthetic",
                                 image_shape=self.image_shape)
        if self.kind == "sparse":
            matrix = sp.csr_array if self.sparse_array else sp.csr_matrix
            return matrix(records, dtype=np.dtype(self.dtype))
        if self.kind == "array":
            return _dense(records).astype(self.dtype, copy=False)
        import pandas as pd  # a DataFrame went in, so pandas is there

        dense = _dense(records)
        columns = self.columns if self.columns is not None and len(self.columns) == dense.shape[1] else item_names
        dtypes = self.dtypes if self.dtypes is not None and len(self.dtypes) == dense.shape[1] else ["uint8"]
        if len(set(dtypes)) == 1:
            frame = pd.DataFrame(dense.astype(dtypes[0], copy=False))
        else:
            frame = pd.DataFrame({j: dense[:, j].astype(dt) for j, dt in enumerate(dtypes)})
        frame.columns = list(columns)
        return frame


def _dense(records: np.ndarray | sp.spmatrix) -> np.ndarray:
    return records.toarray().astype(np.uint8, copy=False) if sp.issparse(records) else np.asarray(records)


def _read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its path relative to it (a release folder is small)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()


@dataclass
class Release:
    """A fitted release held in memory: the model(s), the privacy report and the release folder's
    files (safe to share). A Synthesizer holds one as ``release_``; ``dpgm`` runs have a
    ``mixture`` (the k trained models, noisy part sizes), baselines a ``baseline`` model."""

    report: dict[str, Any]
    item_names: list[str]
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    mixture: ReleasedMixture | None = field(default=None, repr=False)
    baseline: Any = field(default=None, repr=False)
    method: str = DPGM

    @property
    def privacy_report(self) -> dict[str, Any]:
        return dict(self.report)

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
        records = _dense(records)
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


def _settings(sections: dict[str, Any]) -> dict[str, Any]:
    """Config settings by dotted key: ``training={"epochs": 1}`` and ``**{"training.epochs": 1}``
    both give ``{"training.epochs": 1}``; a top-level key stays as it is."""
    out: dict[str, Any] = {}
    for key, value in sections.items():
        if "." not in key and isinstance(value, dict):
            out.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            out[key] = value
    return out


def _put(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    *heads, last = dotted.split(".")
    for head in heads:
        node = node.setdefault(head, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{dotted}: {head!r} is not a section")
    node[last] = value


class Synthesizer:
    """Differentially private synthetic data, in the style of scikit-learn.

    ``Synthesizer(epsilon=1.0).fit(data).sample(1000)``. Parameters are kept as given
    (``get_params``); ``fit`` returns the synthesizer, with its release in ``release_``.

    Args:
        epsilon: the whole run's budget (``privacy.target_epsilon``; None: the config's).
        delta: the run's delta (None: the config's, by default 1/(100 N) for the power of ten
            N <= n < 10 N).
        config: ``method="dpgm"`` only: a shipped config's name (``"transactions"``, the generic
            rules; ``"digits"``, ...), a YAML path, a dict or a ``dpgm.config.Config``.
        method: ``"dpgm"`` (the mixture of generative models) or a registered baseline:
            ``"marginals"``, ``"mwem"``, ``"aim"``, ``"mst"``, ``"mwem_pgm"`` (the last three
            need the optional package mbi).
        seed: makes the run a replayable experiment, whose report says NOT DIFFERENTIALLY
            PRIVATE. Leave it out for a private release.
        progress: show the progress bars.
        **sections: for dpgm, config options: a section as a dict (``training={"epochs": 5}``)
            or dotted keys (``**{"training.epochs": 5}``); for a baseline, its options
            (``dpgm.evaluation.baselines.BaselineOptions``: ``rounds=20``, ``mechanism="laplace"``).
    """

    def __init__(self, epsilon: float | None = 1.0, delta: float | None = None,
                 config: str | Path | dict[str, Any] | Config | None = DEFAULT_CONFIG, method: str = DPGM,
                 seed: int | None = None, progress: bool = False, **sections: Any) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.config = config
        self.method = method
        self.seed = seed
        self.progress = progress
        self.sections = sections

    # ---------------------------------------------------------------- parameters

    _PARAMS = ("epsilon", "delta", "config", "method", "seed", "progress")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as given (the sections flattened in, as they were passed)."""
        return {**{name: getattr(self, name) for name in self._PARAMS}, **self.sections}

    def set_params(self, **params: Any) -> Synthesizer:
        """Change parameters (a name that is not a constructor argument is a section); returns self."""
        for name, value in params.items():
            if name in self._PARAMS:
                setattr(self, name, value)
            else:
                self.sections[name] = value
        return self

    def __repr__(self) -> str:
        defaults = {"epsilon": 1.0, "delta": None, "config": DEFAULT_CONFIG, "method": DPGM, "seed": None,
                    "progress": False}
        shown = [f"{k}={v!r}" for k, v in self.get_params().items() if k not in defaults or v != defaults[k]]
        return f"Synthesizer({', '.join(shown)})"

    # ---------------------------------------------------------------- fitting

    def fit(self, data: Any, *, run_dir: str | Path | None = None) -> Synthesizer:
        """Train on ``data`` and keep the release in memory; returns self.

        ``data``: a pandas DataFrame of 0/1 (or bool) columns, a scipy sparse matrix, a numpy
        array or a ``BinaryDataset``. The run works in a temporary folder removed before ``fit``
        returns; ``run_dir`` keeps the run directory there instead (``release/`` as train.py
        writes it; it must not hold a run yet).
        """
        kind = InputKind.of(data)
        if self.method == DPGM:
            release = self._fit_dpgm(data, run_dir)
        else:
            release = self._fit_baseline(data, run_dir)
        meta = {"method": self.method, "input": kind.to_dict(), "params": self._saved_params()}
        release.files[SYNTHESIZER_FILE] = _json_bytes(meta)
        if run_dir is not None:
            (release_dir(run_dir) / SYNTHESIZER_FILE).write_bytes(release.files[SYNTHESIZER_FILE])
        self.release_, self.input_ = release, kind
        self.n_features_in_ = len(release.item_names)
        return self

    def fit_sample(self, data: Any, n: int, seed: int | None = None) -> Any:
        """``fit(data)``, then ``sample(n, seed)``."""
        return self.fit(data).sample(n, seed)

    def _run_config(self, runs_dir: str, name: str | None = None, *, temporary: bool) -> Config:
        """The run's config: ``config`` with the sections, epsilon, delta and seed set over it."""
        settings = _settings(self.sections)
        settings.update({key: value for key, value in (("privacy.target_epsilon", self.epsilon),
                                                      ("privacy.delta", self.delta), ("seed", self.seed))
                         if value is not None})
        base = DEFAULT_CONFIG if self.config is None else self.config
        stated: frozenset[str] | None = None
        if isinstance(base, dict):
            data = copy.deepcopy(base)
        else:
            cfg = base if isinstance(base, Config) else load_config(base)
            data, stated = cfg.to_dict(), cfg.stated
        for key, value in settings.items():
            _put(data, key, value)
        data["runs_dir"] = runs_dir
        if name is not None:
            data["name"] = name
        if temporary:
            data["keep_private"] = False
        cfg = config_from_dict(data)
        if stated is not None:  # what the user's config and arguments state, not every default
            cfg.stated = stated | frozenset(settings)
        return cfg

    def _fit_dpgm(self, data: Any, run_dir: str | Path | None) -> Release:
        from dpgm.pipeline.run import train

        if run_dir is not None:
            run_dir = Path(run_dir)
            cfg = self._run_config(str(run_dir.parent), run_dir.name, temporary=False)
            folder, _ = train(cfg, data=as_dataset(data, name=cfg.name), progress=self.progress)
            return Release.read(folder)
        with tempfile.TemporaryDirectory(prefix="dpgm-fit-") as tmp:
            cfg = self._run_config(tmp, temporary=True)
            folder, _ = train(cfg, data=as_dataset(data, name=cfg.name), progress=self.progress)
            return Release.read(folder)  # models and files in memory before the folder goes

    def _fit_baseline(self, data: Any, run_dir: str | Path | None) -> Release:
        from dpgm.evaluation.baselines import baseline_options, fit_baseline, model_state
        from dpgm.privacy.calibrate import default_delta, records_magnitude
        from dpgm.progress import progress_scope

        options = baseline_options(self.method, _settings(self.sections))
        if self.epsilon is None:
            raise ConfigError(f"Synthesizer: method {self.method!r} needs epsilon")
        dataset = as_dataset(data)
        public: list[dict[str, Any]] = []
        delta = self.delta
        if delta is None:
            magnitude = records_magnitude(dataset.n_records)
            delta = default_delta(dataset.n_records)
            public.append({"quantity": "order of magnitude of the number of records", "value": magnitude,
                           "why": "the default delta 1/(100 N)"})
        with progress_scope(enabled=self.progress):
            fitted = fit_baseline(self.method, dataset, epsilon=float(self.epsilon), delta=float(delta),
                                  rng=np.random.default_rng(self.seed), options=options)
        warning = not_private_warning(seed_fixed=self.seed is not None, diagnostics=False)
        report = {"warning": warning} if warning else {}
        report.update(fitted.report)
        report.update(fixed_seed=self.seed is not None, public_inputs=public)
        meta, arrays = model_state(fitted.model)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files = {REPORT_FILE: _json_bytes(report), LEDGER_FILE: fitted.accountant.ledger.to_json().encode(),
                 BASELINE_FILE: _json_bytes({**meta, "method": self.method}), BASELINE_ARRAYS: buffer.getvalue()}
        release = Release(report=report, item_names=list(dataset.item_names), files=files, baseline=fitted.model,
                          method=self.method)
        if run_dir is not None:
            folder = Path(run_dir) / RELEASE_DIR
            if folder.exists():
                raise ConfigError(f"{run_dir} already holds a release: choose another run_dir")
            release.save(folder)
        return release

    def _saved_params(self) -> dict[str, Any]:
        """The parameters as JSON keeps them (a Config or a path as text), without the seed: as
        the released config, the release never holds a seed that would let anyone replay its
        noise (docs/privacy.md, "Seeds"; the report says ``fixed_seed``)."""
        params = {**self.get_params(), "seed": None}
        config = params["config"]
        if isinstance(config, Config):
            config = config.to_dict()
        if isinstance(config, dict) and config.get("seed") is not None:
            config = {**config, "seed": None}
        params["config"] = str(config) if isinstance(config, Path) else config
        return json.loads(json.dumps(params, default=str))

    # ---------------------------------------------------------------- the fitted release

    def _fitted(self) -> Release:
        release = getattr(self, "release_", None)
        if release is None:
            raise NotFittedError("this Synthesizer is not fitted yet: call fit(data) first (or dpgm.load a saved one)")
        return release

    def sample(self, n: int | None = None, seed: int | None = None, *, labels: Sequence[int] | None = None,
               per_label: int | None = None, with_labels: bool = False) -> Any:
        """``n`` synthetic records, of the kind ``fit`` was given (post-processing: no privacy cost).

        A DataFrame comes back as a DataFrame with the same columns (bool columns stay bool), a
        sparse matrix as a CSR matrix, an array as an array, a BinaryDataset as a BinaryDataset.
        ``seed`` makes the draw repeatable. A run partitioned by label also takes ``labels``,
        ``per_label`` and ``with_labels`` (as ``Release.sample``).
        """
        release = self._fitted()
        release._check_labels(with_labels)
        records, got = release.draw(n, seed, labels=labels, per_label=per_label)
        out = self.input_.restore(records, release.item_names, got if with_labels else None)
        return (out, got) if with_labels else out

    @property
    def privacy_report(self) -> dict[str, Any]:
        """The run's privacy report (``privacy_report.json``): epsilon, delta, the stages' epsilons..."""
        return self._fitted().privacy_report

    @property
    def item_names(self) -> list[str]:
        return list(self._fitted().item_names)

    def save(self, path: str | Path) -> Path:
        """Write the release folder (models, ledger, privacy report and ``synthesizer.json``, which
        restores the input's kind and column names) to ``path``; it must not exist yet."""
        return self._fitted().save(path)

    @classmethod
    def load(cls, path: str | Path) -> Synthesizer:
        """A fitted Synthesizer from a saved release folder or a train.py run directory."""
        release = Release.read(path)
        meta: dict[str, Any] = {}
        if SYNTHESIZER_FILE in release.files:
            try:
                meta = json.loads(release.files[SYNTHESIZER_FILE])
            except ValueError:
                raise DpgmError(f"{path}: broken {SYNTHESIZER_FILE} (not valid JSON)") from None
        params = dict(meta.get("params") or {})
        if not params:
            report = release.report
            params = {"epsilon": report.get("budget_epsilon") or report.get("epsilon"),
                      "delta": report.get("delta"), "config": None, "method": release.method}
        synth = cls(**params)
        synth.release_ = release
        synth.input_ = InputKind.from_dict(meta["input"]) if "input" in meta else InputKind("array")
        synth.n_features_in_ = len(release.item_names)
        return synth


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


def load(directory: str | Path) -> Synthesizer:
    """The fitted Synthesizer saved in ``directory`` (``Synthesizer.save``'s folder, a release
    folder or a train.py run directory)."""
    return Synthesizer.load(directory)


def fit(
    data: Any,
    *,
    config: str | Path | dict[str, Any] | Config | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    seed: int | None = None,
    progress: bool = False,
    method: str = DPGM,
    **overrides: Any,
) -> Synthesizer:
    """``Synthesizer(...).fit(data)`` in one call: train on ``data`` and return the fitted synthesizer.

    ``config``: a shipped config's name, a YAML path or a dict (default: the generic rules,
    ``GENERIC``); ``epsilon``/``delta`` set the whole run's budget (None: the config's);
    ``overrides`` are dotted keys with their values (``fit(x, **{"training.epochs": 5})``). A
    ``seed`` makes the run a replayable experiment: its report then says NOT DIFFERENTIALLY PRIVATE.
    """
    return Synthesizer(epsilon=epsilon, delta=delta, config=GENERIC if config is None else config,
                       method=method, seed=seed, progress=progress, **overrides).fit(data)

