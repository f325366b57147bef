"""Counting-query evaluation (paper section 6.3): load, align, run baselines, tabulate.

The logic behind ``evaluate.py counting`` and ``benchmarks/counting_queries.py``. Baselines get
the same (epsilon, delta) as dpgm: with ``accounting="rdp"`` (default) each baseline's noise
is calibrated so that the RDP accountant's epsilon at delta equals the target (pure-DP
mechanisms then use a larger pure epsilon, which the report also gives); ``"pure"`` spends
exactly the target as pure epsilon (Laplace marginals and MWEM only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from dpgm.data.csv import csv_header, load_csv
from dpgm.data.dataset import BinaryDataset
from dpgm.data.transactions import load_transactions
from dpgm.errors import ConfigError, DataError
from dpgm.evaluation.aim import AimOptions, fit_aim
from dpgm.evaluation.marginals import Mechanism, fit_marginals, marginals_event
from dpgm.evaluation.mst import fit_mst
from dpgm.evaluation.mwem import MwemBudget, fit_mwem
from dpgm.evaluation.mwem_pgm import MwemPgmOptions, fit_mwem_pgm
from dpgm.evaluation.queries import (
    QuerySet,
    answer,
    group_means,
    make_queries,
    relative_errors_from_counts,
)
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate, releases_epsilon, sigma_for_epsilon
from dpgm.privacy.events import DpEvent
from dpgm.progress import epsilon_of, progress_scope

BASELINES = ("mwem", "marginals", "aim", "mst", "mwem_pgm")
Accounting = Literal["rdp", "pure"]


def is_csv(path: str | Path) -> bool:
    return str(path).lower().removesuffix(".gz").endswith(".csv")


def present_label_column(path: str | Path, label_column: str | None) -> str | None:
    """``label_column`` when ``path`` is a CSV file whose header names it, else None."""
    if label_column is None or not is_csv(path):
        return None
    return label_column if label_column in csv_header(path) else None


def load_records(
    path: str | Path,
    *,
    top_items: int | None = None,
    limit: int | None = None,
    label_column: str | None = None,
) -> BinaryDataset:
    """A CSV file (``.csv[.gz]``, header of item names, 0/1 rows) or else a transactions file.

    ``label_column``: read that CSV column as the records' labels when the header has it.
    """
    if is_csv(path):
        if top_items is not None:
            raise ConfigError(f"{path}: --top-items applies to transaction files, not CSV")
        return load_csv(path, limit=limit, label_column=present_label_column(path, label_column))
    return load_transactions(path, top_items=top_items, limit=limit)


def load_synthetic(path: str | Path, real: BinaryDataset, *, label_column: str | None = None) -> BinaryDataset:
    """Synthetic records in the real data's item order.

    CSV columns are matched to the real item names (any order). Transaction ids index the
    real dataset's items as loaded (after --top-items), as ``generate.py`` writes them.
    ``label_column``: read that CSV column as labels when the header has it (not an item).
    """
    if is_csv(path):
        syn = load_csv(path, label_column=present_label_column(path, label_column))
        where = {name: j for j, name in enumerate(syn.item_names)}
        missing = [name for name in real.item_names if name not in where]
        extra = sorted(set(syn.item_names) - set(real.item_names))
        if missing or extra:
            raise DataError(
                f"{path}: columns do not match the real items (missing {missing[:5]}, unexpected {extra[:5]})"
            )
        records = syn.records[:, [where[name] for name in real.item_names]]
    else:
        syn = load_transactions(path)
        if syn.n_items > real.n_items:
            raise DataError(f"{path}: item id {syn.n_items - 1} is outside the real data's {real.n_items} items")
        records = sp.hstack(
            [syn.records, sp.csr_matrix((syn.n_records, real.n_items - syn.n_items), dtype=np.uint8)],
            format="csr",
        )
    return BinaryDataset(records=records, item_names=list(real.item_names), labels=syn.labels, name=syn.name,
                         source=str(path), image_shape=real.image_shape)


def accountant_epsilon(events: Sequence[tuple[DpEvent, int]], delta: float) -> float:
    """Epsilon at ``delta`` that the RDP accountant gives the composition of ``events``."""
    return releases_epsilon(events, delta)


def mwem_pure_epsilon(
    epsilon: float, delta: float, *, rounds: int, n_fraction: float, accounting: Accounting
) -> float:
    """Total pure epsilon for MWEM: the target itself, or calibrated to the accountant's epsilon."""
    if accounting == "pure":
        return epsilon

    def plan(scale: float) -> list[tuple[DpEvent, int]]:  # noise scale = 1 / MWEM's total epsilon
        return MwemBudget(epsilon=1.0 / scale, rounds=rounds, n_fraction=n_fraction).events()

    return 1.0 / calibrate(plan, target_epsilon=epsilon, delta=delta)


def marginals_parameters(
    epsilon: float, delta: float, *, mechanism: Mechanism, accounting: Accounting
) -> dict[str, float]:
    """``{"epsilon": e}`` (Laplace) or ``{"noise_multiplier": s}`` (Gaussian) meeting the target.

    "rdp": calibrated with ``sigma_for_epsilon`` (one release; Laplace as scale 1/e).
    """
    if accounting == "pure":
        if mechanism == "gaussian":
            raise ConfigError("marginals: the gaussian mechanism has no pure-epsilon guarantee (use laplace)")
        return {"epsilon": epsilon}
    if mechanism == "laplace":
        scale = sigma_for_epsilon(steps=1, delta=delta, target_epsilon=epsilon,
                                  event_factory=lambda s: marginals_event("laplace", epsilon=1.0 / s))
        return {"epsilon": 1.0 / scale}
    sigma = sigma_for_epsilon(steps=1, delta=delta, target_epsilon=epsilon,
                              event_factory=lambda s: marginals_event("gaussian", noise_multiplier=s))
    return {"noise_multiplier": sigma}


@dataclass
class BaselineOptions:
    """Settings of the baselines (defaults follow the DPGM paper: MWEM with T = 50 rounds)."""

    accounting: Accounting = "rdp"
    rounds: int = 50
    n_fraction: float = 0.05
    repeat_updates: int = 10
    support_size: int = 10_000
    mechanism: Mechanism = "gaussian"
    max_length: int | None = None
    aim: AimOptions = field(default_factory=AimOptions)
    mwem_pgm: MwemPgmOptions = field(default_factory=MwemPgmOptions)


def run_baseline(
    method: str,
    real: BinaryDataset,
    queries: QuerySet,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    options: BaselineOptions | None = None,
    n_synthetic: int | None = None,
) -> tuple[BinaryDataset, dict[str, Any]]:
    """Fit ``method`` (mwem, marginals, aim, mst or mwem_pgm) at (epsilon, delta) and sample a synthetic dataset.

    Returns the synthetic records (``n_synthetic``, default the released noisy n) and the
    privacy report of the baseline's own accountant (budget = epsilon, enforced per charge).
    """
    opts = options or BaselineOptions()
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"--epsilon must be > 0, got {epsilon}")
    accountant = Accountant(delta=delta, budget_epsilon=epsilon)
    report: dict[str, Any] = {"method": method, "accounting": opts.accounting}
    with progress_scope(epsilon=epsilon_of(accountant)):  # the baseline's bars show its own epsilon
        if method == "mwem":
            pure = mwem_pure_epsilon(
                epsilon, delta, rounds=opts.rounds, n_fraction=opts.n_fraction, accounting=opts.accounting
            )
            model = fit_mwem(
                real, queries, epsilon=pure, accountant=accountant, rng=rng, rounds=opts.rounds,
                n_fraction=opts.n_fraction, repeat_updates=opts.repeat_updates, support_size=opts.support_size,
            )
            report.update(pure_epsilon=pure, rounds=opts.rounds, domain=type(model.domain).__name__)
        elif method == "marginals":
            params = marginals_parameters(epsilon, delta, mechanism=opts.mechanism, accounting=opts.accounting)
            model = fit_marginals(
                real, accountant=accountant, rng=rng, mechanism=opts.mechanism, max_length=opts.max_length, **params
            )
            pure = params.get("epsilon")
            report.update(pure_epsilon=pure, mechanism=opts.mechanism, **params)
        elif method in ("aim", "mst", "mwem_pgm"):
            if opts.accounting == "pure":
                raise ConfigError(f"{method}: a zCDP mechanism, no pure-epsilon accounting")
            if method == "aim":
                model = fit_aim(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant, options=opts.aim)
            elif method == "mwem_pgm":
                model = fit_mwem_pgm(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant,
                                     options=opts.mwem_pgm)
            else:
                model = fit_mst(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant)
            report.update(rho=model.rho, rounds=len(model.rounds), fit_seconds=model.seconds)
        else:
            raise ConfigError(f"unknown baseline {method!r} (choose from {', '.join(BASELINES)})")
    n = round(model.n_noisy) if n_synthetic is None else n_synthetic
    report.update(accountant.report())
    return model.sample(max(n, 1), rng), report


@dataclass
class CountingEvaluation:
    """Relative errors of each method on one query workload against one real dataset."""

    queries: QuerySet
    n_real: int
    real_counts: np.ndarray
    errors: dict[str, np.ndarray] = field(default_factory=dict)
    privacy: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, method: str, synthetic: BinaryDataset, privacy: dict[str, Any] | None = None) -> None:
        """Answer the workload on ``synthetic`` and store its relative errors under ``method``."""
        counts = answer(synthetic, self.queries)
        self.errors[method] = relative_errors_from_counts(
            self.real_counts, counts, self.n_real, synthetic.n_records
        )
        if privacy is not None:
            self.privacy[method] = privacy

    def group_means(self) -> dict[str, dict[int, float]]:
        return {method: group_means(err, self.queries) for method, err in self.errors.items()}

    def results(self, **keys: Any) -> list[dict[str, Any]]:
        """Flat rows {**keys, method, group, rel_error} (the benchmark's JSON format)."""
        return [
            {**keys, "method": method, "group": g, "rel_error": value}
            for method, means in self.group_means().items()
            for g, value in means.items()
        ]

    def table(self) -> str:
        """One row per length group: its length range and the mean relative error per method."""
        methods = list(self.errors)
        head = f"{'group':>5}  {'lengths':>9}  " + "  ".join(f"{m:>12}" for m in methods)
        lines = [head, "-" * len(head)]
        means = self.group_means()
        for g in range(1, self.queries.groups + 1):
            span = f"1..{self.queries.group_max_length(g)}"
            lines.append(f"{g:>5}  {span:>9}  " + "  ".join(f"{means[m][g]:>12.4g}" for m in methods))
        lines.append(f"{'all':>5}  {'':>9}  " + "  ".join(f"{self.errors[m].mean():>12.4g}" for m in methods))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_real": self.n_real,
            "n_queries": len(self.queries),
            "maxlen": self.queries.maxlen,
            "group_max_lengths": {g: self.queries.group_max_length(g) for g in range(1, self.queries.groups + 1)},
            "group_means": self.group_means(),
            "overall_mean": {m: float(e.mean()) for m, e in self.errors.items()},
            "privacy": self.privacy,
            "results": self.results(),
        }


def start_evaluation(real: BinaryDataset, n_queries: int, rng: np.random.Generator) -> CountingEvaluation:
    """Draw the paper's workload for ``real`` (maxlen = its largest record) and answer it."""
    maxlen = int(real.record_lengths().max())
    queries = make_queries(real.n_items, max(maxlen, 1), n_queries, rng)
    return CountingEvaluation(queries=queries, n_real=real.n_records, real_counts=answer(real, queries))
