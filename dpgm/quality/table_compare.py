"""What the quality report of a declared table shows, as numbers: each column's share of records per value
(a category, a bin of a number, missing values last) in the real data and the release, the association of every
pair of columns (``dpgm.quality.association``), beside the table metrics (``dpgm.evaluation.table_metrics``) and
the release's own privacy. Not private: it reads the real data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.evaluation.table_data import Table
from dpgm.evaluation.table_metrics import TableMetrics
from dpgm.quality.association import Associations, associations
from dpgm.quality.release_privacy import ReleasePrivacy
from dpgm.tables import Codec


@dataclass(frozen=True)
class ColumnShares:
    """One column: its codec, its values' labels and the share of records holding each, real and synthetic."""

    codec: Codec
    labels: list[str]
    real: np.ndarray
    synthetic: np.ndarray
    tvd: float
    wasserstein: float | None  # numeric columns only (divided by the bounds' width)

    @property
    def name(self) -> str:
        return self.codec.column.name

    @property
    def missing(self) -> tuple[float, float] | None:
        """The share of missing values (real, synthetic) when the column may hold them."""
        return (float(self.real[-1]), float(self.synthetic[-1])) if self.codec.column.missing else None


@dataclass(frozen=True)
class TableComparison:
    """The report's numbers for one release of a declared table against the real table."""

    real_name: str
    synthetic_name: str
    columns: list[ColumnShares]
    metrics: TableMetrics
    privacy: ReleasePrivacy
    associations: Associations

    @property
    def n_real(self) -> int:
        return self.metrics.n_real

    @property
    def n_synthetic(self) -> int:
        return self.metrics.n_synthetic


def value_shares(table: Table, j: int) -> np.ndarray:
    """The share of records holding each value of column ``j`` (missing last)."""
    return np.bincount(table.codes[:, j], minlength=table.schema.attribute_sizes[j]) / table.n


def compare_tables(real: Table, synthetic: Table, metrics: TableMetrics, privacy: ReleasePrivacy) -> TableComparison:
    """Every column's shares and every pair's association beside the metrics computed on the same tables."""
    columns = [ColumnShares(codec=codec, labels=real.schema.values[j], real=value_shares(real, j),
                            synthetic=value_shares(synthetic, j), tvd=metrics.workload.columns[codec.column.name],
                            wasserstein=metrics.wasserstein.get(codec.column.name))
               for j, codec in enumerate(real.schema.codecs)]
    return TableComparison(real_name=real.name, synthetic_name=synthetic.name, columns=columns, metrics=metrics,
                           privacy=privacy, associations=associations(real, synthetic))
