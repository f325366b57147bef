"""Shared machinery of the AIM, MST and MWEM+PGM baselines (private-pgm's mechanisms on top of ``mbi``).

Binary items are 2-valued attributes named "0".."m-1"; a clique is a sorted tuple of item
indices and its marginal a flat count vector in C order (first item = most significant bit),
as ``mbi``'s ``Factor.datavector`` lays it out. One module per job:

- workload.py: cliques, the workload, the exact (non-private) marginal counts;
- budget.py: the zCDP budget rho at (epsilon, delta) and the Gaussian measurements (privacy);
- fitting.py: ``mbi``, imported only when a fit runs: its domain, measurements and fit;
- inference.py: marginals and samples of the fitted model from its junction tree, in numpy;
- selection.py: the model-size filter, the exponential mechanism, one select-and-measure round;
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
from dpgm.evaluation.pgm.fitting import (
    attr,
    clique_attrs,
    fit_model,
    import_mbi,
    mbi_domain,
    measurement,
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
    MAX_HISTOGRAM_ITEMS,
    Clique,
    TrueMarginals,
    as_csc,
    powerset,
    workload_cliques,
)

__all__ = [
    "ALPHA",
    "CALIBRATION_MARGIN",
    "MAX_HISTOGRAM_ITEMS",
    "Clique",
    "JunctionTree",
    "PgmOptions",
    "PgmResult",
    "PgmRound",
    "RoundSchedule",
    "Timer",
    "TrueMarginals",
    "as_csc",
    "at_epsilon",
    "attr",
    "cap_reached",
    "check_plan",
    "clique_attrs",
    "default_n_out",
    "fit_model",
    "fitting_candidates",
    "import_mbi",
    "l1_errors",
    "mbi_domain",
    "measure",
    "measurement",
    "model_cliques",
    "model_size_mb",
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
