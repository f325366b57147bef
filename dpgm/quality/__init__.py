"""The quality report: one self-contained HTML page comparing a release with the real data.

``inputs`` loads the two datasets, ``compare`` computes what the page shows (item
frequencies, record lengths, pair co-occurrence and correlation, counting-query errors,
image samples, label counts), ``plots`` draws each as a PNG, ``page`` writes the HTML with
a plain-language summary. A declared table has its own view: ``table_compare`` (each column's
shares beside the table metrics), ``association`` (Cramér's V of every pair of columns), ``table_plots`` (a
figure per column, the association heat map), ``table_page`` (the
release's privacy verdict first, the workload error, train-on-synthetic), with the release's
privacy report read by ``release_privacy``. Looking at the real data is not differentially
private: the page is for the data custodian, not for publication.
"""

from __future__ import annotations

from dpgm.quality.compare import Comparison, compare
from dpgm.quality.inputs import NAMED_SOURCES, load_pair
from dpgm.quality.page import NOT_PRIVATE, build_report, write_report
from dpgm.quality.release_privacy import release_privacy
from dpgm.quality.table_compare import TableComparison, compare_tables
from dpgm.quality.table_page import build_table_report

__all__ = ["NAMED_SOURCES", "NOT_PRIVATE", "Comparison", "TableComparison", "build_report", "build_table_report",
           "compare", "compare_tables", "load_pair", "release_privacy", "write_report"]
