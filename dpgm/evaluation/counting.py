"""Counting-query evaluation (paper section 6.3): load, align, run baselines, tabulate.

The logic behind ``evaluate.py counting`` and ``benchmarks/counting_queries.py``. Baselines get
the same (epsilon, delta) as dpgm; they are registered by name in ``dpgm.evaluation.baselines``
(``BASELINES``, with their budget calibration), and ``run_baseline`` fits one and samples from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.data.csv import csv_header, load_csv
from dpgm.data.dataset import BinaryDataset
from dpgm.data.transactions import load_transactions
from dpgm.errors import ConfigError, DataError
from dpgm.evaluation.baselines import (
    BASELINES,
    Accounting,
    accountant_epsilon,
    baseline_options,
    marginals_parameters,
    mwem_pure_epsilon,
    options_among,
    run_baseline,
)
from dpgm.evaluation.queries import (
    QuerySet,
    answer,
    group_means,
    make_queries,
    relative_errors_from_counts,
)

#: The baselines (``BASELINES``, a registry) and their budgets live in dpgm/evaluation/baselines.py;
#: their names stay importable from here for the commands and benchmarks.
__all__ = [
    "BASELINES", "Accounting", "CountingEvaluation", "accountant_epsilon", "baseline_options", "is_csv",
    "load_records", "load_synthetic", "marginals_parameters", "mwem_pure_epsilon", "options_among",
    "present_label_column", "run_baseline", "start_evaluation",
]


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
