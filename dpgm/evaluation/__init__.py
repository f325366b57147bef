"""Evaluation of synthetic data against the real data (not private: it reads the real data).

A declared table's metrics are exported here; the other evaluations are imported from their modules.
"""

from __future__ import annotations

from dpgm.evaluation.table_data import Table, read_table, table_of
from dpgm.evaluation.table_metrics import TableMetrics, WorkloadError, evaluate_table, wasserstein, workload_error
from dpgm.evaluation.train_on_synthetic import TrainOnSynthetic, train_on_synthetic

__all__ = ["Table", "TableMetrics", "TrainOnSynthetic", "WorkloadError", "evaluate_table", "read_table", "table_of",
           "train_on_synthetic", "wasserstein", "workload_error"]
