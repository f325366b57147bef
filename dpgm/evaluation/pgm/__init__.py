"""Shared machinery of the AIM, MST and MWEM+PGM baselines (private-pgm's mechanisms on top of ``mbi``).

Attributes are named "0".."d-1" and take ``sizes[j]`` values (binary items: every size 2); records
are a coded table (``CodedRecords``: codes [n, d] and the sizes) or binary items. A clique is a sorted
tuple of attribute indices and its marginal a flat count vector in C order (mixed radix, first
attribute most significant), as ``mbi``'s ``Factor.datavector`` lays it out. One module per job:

- workload.py: coded records, cliques, the workload, the exact (non-private) marginal counts;
- budget.py: the zCDP budget rho at (epsilon, delta) and the Gaussian measurements (privacy);
- fitting.py: ``mbi``, imported only when a fit runs: its domain, measurements and fit;
- inference.py: marginals and samples of the fitted model from its junction tree, in numpy;
- selection.py: the model-size filter, the exponential mechanism, one select-and-measure round;
- compression.py: MST's merging of an attribute's rare values (and undoing it when sampling);
- schedule.py: the rounds of AIM and MWEM+PGM, a rule on public inputs only;
- result.py: the options, rounds and result of a fit, and running one at (epsilon, delta).

``from dpgm.evaluation import pgm`` gives them all (aim.py, mst.py, mwem_pgm.py use it).
"""

from __future__ import annotations

from dpgm.evaluation.pgm.budget import (
    CALIBRATION_MARGIN,
    check_plan,
    measure,
    rho_for_epsilon,
    zcdp_event,
)
from dpgm.evaluation.pgm.compression import Compression, compression
from dpgm.evaluation.pgm.fitting import (
    attr,
    clique_attrs,
    fit_model,
    import_mbi,
    mbi_domain,
    measurement,
    merged_measurement,
    model_cliques,
)
from dpgm.evaluation.pgm.inference import JunctionTree
from dpgm.evaluation.pgm.result import (
    PgmOptions,
    PgmResult,
    PgmRound,
    Timer,
    at_epsilon,
    default_n_out,
    names_of,
    synthesize,
)
from dpgm.evaluation.pgm.schedule import ALPHA, RoundSchedule, cap_reached, split_round
from dpgm.evaluation.pgm.selection import (
    fitting_candidates,
    l1_errors,
    model_size_mb,
    select_and_measure,
    size_filter,
)
from dpgm.evaluation.pgm.workload import (
    MAX_HISTOGRAM_CELLS,
    MAX_HISTOGRAM_ITEMS,
    Clique,
    CodedRecords,
    Records,
    TrueMarginals,
    as_csc,
    as_sizes,
    n_attributes,
    powerset,
    workload_cliques,
)

__all__ = [
    "ALPHA",
    "CALIBRATION_MARGIN",
    "MAX_HISTOGRAM_CELLS",
    "MAX_HISTOGRAM_ITEMS",
    "Clique",
    "CodedRecords",
    "Compression",
    "JunctionTree",
    "PgmOptions",
    "PgmResult",
    "PgmRound",
    "Records",
    "RoundSchedule",
    "Timer",
    "TrueMarginals",
    "as_csc",
    "as_sizes",
    "at_epsilon",
    "attr",
    "cap_reached",
    "check_plan",
    "clique_attrs",
    "compression",
    "default_n_out",
    "fit_model",
    "fitting_candidates",
    "import_mbi",
    "l1_errors",
    "mbi_domain",
    "measure",
    "measurement",
    "merged_measurement",
    "model_cliques",
    "model_size_mb",
    "n_attributes",
    "names_of",
    "powerset",
    "rho_for_epsilon",
    "select_and_measure",
    "size_filter",
    "split_round",
    "synthesize",
    "workload_cliques",
    "zcdp_event",
]
