"""``dpgm.Synthesizer`` (scikit-learn style) and the functions the command-line fronts call."""

from __future__ import annotations

import copy
import io
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Tags

from dpgm.api.kinds import InputKind, NotFittedError, as_dataset
from dpgm.api.release import BASELINE_ARRAYS, BASELINE_FILE, DPGM, Release, json_bytes
from dpgm.artifact import (
    LEDGER_FILE,
    RELEASE_DIR,
    REPORT_FILE,
    release_dir,
)
from dpgm.config import DEFAULT_CONFIG, Config, config_from_dict, load_config
from dpgm.data.table import TableInput
from dpgm.errors import ConfigError, DpgmError
from dpgm.privacy.verdict import stamped
from dpgm.tables import table_schema

#: What ``Synthesizer.save`` adds to a release folder: the method, the input kind and the parameters.
SYNTHESIZER_FILE = "synthesizer.json"


def _settings(options: dict[str, Any]) -> dict[str, Any]:
    """Config settings by dotted key: ``{"training": {"epochs": 1}}`` and ``{"training.epochs": 1}``
    both give ``{"training.epochs": 1}``; a top-level key stays as it is."""
    out: dict[str, Any] = {}
    for key, value in options.items():
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


def _refuse_unknown(caller: str, unknown: dict[str, Any]) -> None:
    """A TypeError for keyword arguments that are not parameters, naming where options go."""
    if unknown:
        name = next(iter(unknown))
        raise TypeError(f"{caller} got an unexpected keyword argument {name!r}: config and baseline options go "
                        f"in options= (options={{{name!r}: ...}})")


class Synthesizer(BaseEstimator):
    """Differentially private synthetic data, a scikit-learn estimator.

    ``Synthesizer(epsilon=1.0).fit(data).sample(1000)``. The constructor stores its parameters
    as given (``get_params``, ``set_params``, ``sklearn.base.clone``); ``fit`` checks them and
    returns the synthesizer, with its release in ``release_``.

    Args:
        epsilon: the whole run's budget (``privacy.target_epsilon``; None: the config's).
        delta: the run's delta (None: the config's, by default 1/(100 N) for the power of ten
            N <= n < 10 N).
        config: ``method="dpgm"`` only: a shipped config's name (``"transactions"``, the generic
            rules; ``"digits"``, ...), a YAML path, a dict or a ``dpgm.config.Config``.
        method: ``"dpgm"`` (the mixture of generative models) or a registered baseline:
            ``"marginals"``, ``"mwem"``, ``"aim"``, ``"mst"``, ``"mwem_pgm"`` (the last three
            need the optional package mbi).
        options: for dpgm, config options over ``config``: sections as dicts
            (``{"training": {"epochs": 5}}``) or dotted keys (``{"training.epochs": 5}``); for a
            baseline, the fields of the options dataclass it registers
            (``dpgm.evaluation.baselines.MarginalsOptions``, ``MwemOptions``, ...: ``{"mechanism": "laplace"}``).
        schema: a declared table (a DataFrame of categories and numbers): a schema file's path, its dict
            or a ``dpgm.tables.TableSchema`` (docs/guide/tables.md); public, listed in the privacy report.
        seed: makes the run a replayable experiment, whose report says NOT DIFFERENTIALLY
            PRIVATE. Leave it out for a private release.
        progress: show the progress bars.
        **unknown: any other keyword is a TypeError that says options go in ``options``.
    """

    def __init__(self, epsilon: float | None = 1.0, *, delta: float | None = None,
                 config: str | Path | dict[str, Any] | Config | None = DEFAULT_CONFIG, method: str = DPGM,
                 options: dict[str, Any] | None = None, seed: int | None = None, progress: bool = False,
                 schema: Any = None, **unknown: Any) -> None:
        _refuse_unknown("Synthesizer()", unknown)
        self.epsilon = epsilon
        self.delta = delta
        self.config = config
        self.method = method
        self.options = options
        self.seed = seed
        self.progress = progress
        self.schema = schema

    def __sklearn_tags__(self) -> Tags:
        """Sparse input is taken, no value below 0 is, and every fit draws fresh noise."""
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.non_deterministic = True
        return tags

    # ---------------------------------------------------------------- fitting

    def fit(self, data: Any, y: Any = None, *, run_dir: str | Path | None = None) -> Synthesizer:
        """Train on ``data`` and keep the release in memory; returns self.

        ``data``: a pandas DataFrame of 0/1 (or bool) columns, a scipy sparse matrix, a numpy
        array or a ``BinaryDataset``. ``y`` is not used (scikit-learn's place for it, which a
        Pipeline fills; labels for ``partition.method: label`` come in a BinaryDataset). The run
        works in a temporary folder removed before ``fit`` returns; ``run_dir`` keeps the run
        directory there instead (``release/`` as train.py writes it; it must not hold a run yet).
        """
        kind = InputKind.of(data)
        table = None if self.schema is None else TableInput.of(self.schema, data)
        data = data if table is None else table.dataset(data)
        if self.method == DPGM:
            release = self._fit_dpgm(data, run_dir)
        else:
            release = self._fit_baseline(data, run_dir)
        meta = {"method": self.method, "input": kind.to_dict(), "params": self._saved_params(),
                "table": None if table is None else table.to_dict()}
        release.files[SYNTHESIZER_FILE] = json_bytes(meta)
        if run_dir is not None:
            (release_dir(run_dir) / SYNTHESIZER_FILE).write_bytes(release.files[SYNTHESIZER_FILE])
        self.release_, self.input_, self.table_ = release, kind, table
        self.n_features_in_ = len(release.item_names)
        return self

    def fit_sample(self, data: Any, n: int, seed: int | None = None) -> Any:
        """``fit(data)``, then ``sample(n, seed)``."""
        return self.fit(data).sample(n, seed)

    def _option_settings(self) -> dict[str, Any]:
        """``options`` by dotted key, checked: a dict, without the seed (a parameter of its own,
        which the saved parameters leave out)."""
        if self.options is None:
            return {}
        if not isinstance(self.options, dict):
            raise ConfigError(f"Synthesizer: options must be a dict, not {type(self.options).__name__}")
        settings = _settings(self.options)
        if "seed" in settings:
            raise ConfigError("Synthesizer: the seed is a parameter of its own (seed=...), not an option")
        return settings

    def _run_config(self, runs_dir: str, name: str | None = None, *, temporary: bool) -> Config:
        """The run's config: ``config`` with the options, epsilon, delta and seed set over it."""
        settings = self._option_settings()
        settings.update({key: value for key, value in (("privacy.target_epsilon", self.epsilon),
                                                      ("privacy.delta", self.delta), ("seed", self.seed),
                                                      ("data.schema", self._declared_schema()))
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
        from dpgm.progress import progress_scope

        options = baseline_options(self.method, self._option_settings())
        if self.epsilon is None:
            raise ConfigError(f"Synthesizer: method {self.method!r} needs epsilon")
        dataset = as_dataset(data)
        with progress_scope(enabled=self.progress):
            fitted = fit_baseline(self.method, dataset, epsilon=self.epsilon, delta=self.delta,
                                  rng=np.random.default_rng(self.seed), options=options)
        report = stamped({**fitted.report, "fixed_seed": self.seed is not None})  # a seed: not private
        meta, arrays = model_state(fitted.model)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files = {REPORT_FILE: json_bytes(report), LEDGER_FILE: fitted.accountant.ledger.to_json().encode(),
                 BASELINE_FILE: json_bytes({**meta, "method": self.method}), BASELINE_ARRAYS: buffer.getvalue()}
        release = Release(report=report, item_names=list(dataset.item_names), files=files, baseline=fitted.model,
                          method=self.method)
        if run_dir is not None:
            folder = Path(run_dir) / RELEASE_DIR
            if folder.exists():
                raise ConfigError(f"{run_dir} already holds a release: choose another run_dir")
            release.save(folder)
        return release

    def _declared_schema(self) -> dict[str, Any] | None:
        """The declared table's schema as the run's config holds it (data.schema), or None."""
        return None if self.schema is None else table_schema(self.schema).to_dict()

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
        params["schema"] = self._declared_schema()
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
        table = getattr(self, "table_", None)
        if table is not None:
            out = table.restore(records, seed)
        else:
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
    def _known_params(cls, saved: dict[str, Any]) -> dict[str, Any]:
        """Saved parameters as the constructor takes them: a saved key that is not a parameter
        is an option (a synthesizer.json may keep options at its top level)."""
        names = set(cls._get_param_names())
        params = {key: value for key, value in saved.items() if key in names}
        extra = {key: value for key, value in saved.items() if key not in names}
        if extra:
            params["options"] = {**(params.get("options") or {}), **extra}
        return params

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
        params = cls._known_params(meta.get("params") or {})
        if not params:
            report = release.report
            params = {"epsilon": report.get("budget_epsilon") or report.get("epsilon"),
                      "delta": report.get("delta"), "config": None, "method": release.method}
        synth = cls(**params)
        synth.release_ = release
        synth.input_ = InputKind.from_dict(meta["input"]) if "input" in meta else InputKind("array")
        synth.table_ = TableInput.from_dict(meta["table"]) if meta.get("table") else None
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


def fit(data: Any, *, epsilon: float | None = None, delta: float | None = None,
        config: str | Path | dict[str, Any] | Config | None = DEFAULT_CONFIG, method: str = DPGM,
        options: dict[str, Any] | None = None, seed: int | None = None, progress: bool = False,
        schema: Any = None, **unknown: Any) -> Synthesizer:
    """``Synthesizer(...).fit(data)`` in one call: train on ``data`` and return the fitted synthesizer.

    The parameters are the Synthesizer's, except that ``epsilon=None`` (the default) keeps the
    config's budget (the generic rules': 1.0); ``options`` are config options
    (``fit(x, options={"training.epochs": 5})``). A ``seed`` makes the run a replayable
    experiment: its report then says NOT DIFFERENTIALLY PRIVATE.
    """
    _refuse_unknown("fit()", unknown)
    return Synthesizer(epsilon=epsilon, delta=delta, config=config, method=method, options=options, seed=seed,
                       progress=progress, schema=schema).fit(data)
