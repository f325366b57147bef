"""The quality report: one self-contained HTML page comparing a release with the real data.

``inputs`` loads the two datasets, ``compare`` computes what the page shows (item
frequencies, record lengths, pair co-occurrence and correlation, counting-query errors,
image samples, label counts), ``plots`` draws each as a PNG, ``page`` writes the HTML with
a plain-language summary. Looking at the real data is not differentially private: the
page is for the data custodian, not for publication.
"""

from __future__ import annotations

from dpgm.quality.compare import Comparison, compare
from dpgm.quality.inputs import NAMED_SOURCES, load_pair
from dpgm.quality.page import NOT_PRIVATE, build_report, write_report

__all__ = ["NAMED_SOURCES", "NOT_PRIVATE", "Comparison", "build_report", "compare", "load_pair", "write_report"]
