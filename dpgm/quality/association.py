"""How strongly each pair of a declared table's columns go together, in the real data and the release: Cramér's V
on the schema's values (categories, a number's bins, missing a value of its own), for the report's heat map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.evaluation.table_data import Table


def cramers_v(counts: np.ndarray) -> float:
    """Cramér's V of a table of counts, sqrt(chi2 / (n (min(rows, columns) - 1))) over its non-empty rows and
    columns: 0 independent, 1 one column fixes the other; NaN where a side holds fewer than two values."""
    counts = np.asarray(counts, dtype=float)
    counts = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    if min(counts.shape) < 2:
        return float("nan")
    n = counts.sum()
    expected = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    return float(np.sqrt(min(chi2 / (n * (min(counts.shape) - 1)), 1.0)))


def contingency(table: Table, i: int, j: int) -> np.ndarray:
    """The counts of records holding each pair of values of columns ``i`` and ``j``."""
    sizes = table.schema.attribute_sizes
    pairs = table.codes[:, i] * sizes[j] + table.codes[:, j]
    return np.bincount(pairs, minlength=sizes[i] * sizes[j]).reshape(sizes[i], sizes[j])


def association_matrix(table: Table) -> np.ndarray:
    """Cramér's V between every two columns (symmetric; the diagonal 1 where a column holds two values or more)."""
    k = len(table.schema.columns)
    out = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(i, k):
            out[i, j] = out[j, i] = cramers_v(contingency(table, i, j))
    return out


@dataclass(frozen=True)
class Associations:
    """Cramér's V between every two columns, real and synthetic, in the schema's column order."""

    names: list[str]
    real: np.ndarray
    synthetic: np.ndarray

    def mean_difference(self) -> float | None:
        """The mean absolute difference of the two matrices over the pairs of columns (None: no pair measured)."""
        upper = np.triu_indices(len(self.names), k=1)
        gaps = np.abs(self.synthetic[upper] - self.real[upper])
        gaps = gaps[np.isfinite(gaps)]
        return float(gaps.mean()) if gaps.size else None


def associations(real: Table, synthetic: Table) -> Associations:
    """The association matrices of two tables read against the same schema."""
    return Associations(names=real.schema.names, real=association_matrix(real),
                        synthetic=association_matrix(synthetic))
