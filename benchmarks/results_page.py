"""The documentation's results pages, generated from benchmarks/results/.

Every figure on the pages is read from a benchmark's JSON, and every table names the file it
comes from (with the commit and date of its provenance where the file has one). The sections live
in ``benchmarks/pages/``, one module per subject; this script assembles them. After a benchmark
writes new JSON, regenerate the pages:

    python benchmarks/results_page.py            # rewrite docs/results.md
    python benchmarks/results_page.py --check    # exit 1 if docs/results.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pages.clustering import partition_release, partitioners, subspace
from pages.common import ROOT, load, source, table
from pages.costs import THREADS_ALL, THREADS_WAIT, generic_time, threads_busy, timings
from pages.counting import counting
from pages.images import partition_tos, train_on_synthetic
from pages.peers import (
    PEERS_AIM,
    PEERS_AIM_EPS4,
    PEERS_EPS2_MERGE,
    PEERS_MST,
    PEERS_MST_EPS2,
    PEERS_MWEM_PGM,
    PEERS_MWEM_PGM_EPS2,
    PEERS_MWEM_PGM_EPS4,
    PEERS_TABLES_AIM,
    PEERS_TABLES_MST,
    PEERS_TABLES_MWEM_PGM,
    PEERS_TABLES_TVD3,
    peers,
)
from pages.privacy import accounting
from pages.rules import capacity_section, dependence_section, generic_rules, rules_sweep_section
from pages.throughput import distributed, large_data, mnist_gpu, throughput, throughput_gpu

PAGE = ROOT / "docs" / "results.md"



def audit() -> str:
    """The audits per setting: the claim, the weakened runs' true epsilon, the lower bound and its cap, honest,
    with the noise cut tenfold and with it off (``--noise-scale``)."""
    data = load("audit.json")
    rows = [(r["setting"], r["audited"], f"x{r['noise_scale']:g}", f"{r['claimed_epsilon']:.3g}",
             f"{r['true_epsilon']:.3g}", f"{r['lower_bound']:.2f} ({r['epsilon_cap']:.2f})", r["right"],
             "refuted" if r["lower_bound"] > r["claimed_epsilon"] else "not refuted")
            for r in data["results"]]
    return "\n\n".join([
        "## Empirical privacy audit",
        ("`python -m dpgm.audit` (`benchmarks/audit.py`): a lower bound on epsilon at 95% confidence, for each "
         "setting run honestly, with every noise secretly cut tenfold and with it off (`--noise-scale`: the claim "
         "stays the honest run's). DP-SGD by the one-run audit (Steinke, Nasr, Jagielski 2023) with gradient "
         "canaries read off every step's released gradient, its guesses sized so that the cap (the bound if every "
         "guess is right) clears the claim; the statistics releases by a threshold test over runs on two "
         "neighbours (Clopper-Pearson), each release at its own epsilon 1. Right: correct guesses (DP-SGD) or "
         "runs told apart (releases). Every weakened run is refuted, no honest one is."),
        table(("setting", "audited", "noise", "claimed epsilon", "true epsilon", "lower bound (cap)", "right",
               "verdict"), rows),
        source("audit.json")])


def page() -> str:
    intro = (
        "# Results\n\n"
        "Every figure on this page is read from a JSON file in `benchmarks/results/` by "
        "`benchmarks/results_page.py`, and each table names its file (with the commit and date "
        "of its provenance where it has one). The command behind every file, and the outputs "
        "not shown here (clustering accuracy, compressive k-means, the searches that chose the "
        "tuned configs and the generic rules), are listed in `benchmarks/results/README.md`. "
        "Unless a table says otherwise, the machine had 2 cores.")
    busy = [threads_busy("config_timings_busy.json", "Threads beside another job: every shipped config", THREADS_ALL),
            threads_busy("threads_busy.json", "Threads and wait policies (before)", THREADS_WAIT)]
    sections = (timings(), *filter(None, busy), generic_time(), generic_rules(), dependence_section(), *filter(None, [capacity_section()]), *filter(None, [rules_sweep_section(), peers("rules_lodo_seven_mst.json", "The generic rules beside MST on the seven datasets",
                                   PEERS_MST),
                             peers("rules_lodo_seven_aim.json", "The generic rules beside AIM on the seven datasets",
                                   PEERS_AIM),
                             peers("rules_lodo_seven_mwem_pgm.json",
                                   "The generic rules beside MWEM+PGM on the seven datasets", PEERS_MWEM_PGM),
                             peers("rules_lodo_seven_aim_eps4.json", "The generic rules beside AIM at epsilon 4",
                                   PEERS_AIM_EPS4),
                             peers("rules_lodo_seven_mwem_pgm_eps4.json",
                                   "The generic rules beside MWEM+PGM at epsilon 4", PEERS_MWEM_PGM_EPS4),
                             peers("rules_lodo_eps2_mst.json", "The generic rules beside MST at epsilon 2",
                                   PEERS_MST_EPS2),
                             peers("rules_lodo_eps2_mwem_pgm.json", "The generic rules beside MWEM+PGM at epsilon 2",
                                   PEERS_MWEM_PGM_EPS2),
                             peers("rules_lodo_eps2_merge.json", "The rules with one group below a measured "
                                   "dependence, at epsilon 2", PEERS_EPS2_MERGE),
                             peers("rules_lodo_tables_seeds10.json", "The declared tables beside MST", PEERS_TABLES_MST),
                             peers("rules_lodo_tables_tvd3.json", "The declared tables beside MST: 3-way marginals",
                                   PEERS_TABLES_TVD3),
                             peers("rules_lodo_tables_aim.json", "The declared tables beside AIM", PEERS_TABLES_AIM),
                             peers("rules_lodo_tables_mwem_pgm.json", "The declared tables beside MWEM+PGM",
                                   PEERS_TABLES_MWEM_PGM)]),
                counting(), train_on_synthetic(),
                *filter(None, [partitioners(), partition_release(), partition_tos(), subspace(), distributed(),
                                large_data()]), accounting(),
                throughput(), throughput_gpu(), mnist_gpu(), audit())
    return "\n\n".join((intro, *sections)) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {PAGE.relative_to(ROOT)} differs from the generated page")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python benchmarks/results_page.py")
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
