"""The documentation's results pages, generated from benchmarks/results/.

Every figure on the pages is read from a benchmark's JSON, and every table names the file it
comes from (with the commit and date of its provenance where the file has one). The sections live
in ``benchmarks/pages/``, one module per subject; this script assembles them. After a benchmark
writes new JSON, regenerate the pages:

    python benchmarks/results_page.py            # rewrite docs/results.md, docs/results-rules.md, docs/img/results/
    python benchmarks/results_page.py --check    # exit 1 if a page is out of date or an image missing
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from pages.clustering import partition_release, partitioners, subspace
from pages.common import ROOT, load, source, table
from pages.costs import THREADS_ALL, THREADS_WAIT, generic_time, threads_busy, timings
from pages.counting import counting
from pages.headline import draw, headline
from pages.images import partition_tos, train_on_synthetic
from pages.no_cliff import draw as draw_no_cliff
from pages.no_cliff import no_cliff_section
from pages.peers import earlier, epsilon_two
from pages.privacy import accounting
from pages.rules import capacity_section, dependence_section, generic_rules, rules_sweep_section
from pages.tables import (
    candidate_runs,
    deep_section,
    eps_section,
    large_section,
    seeds_section,
    tables_section,
)
from pages.throughput import (
    distributed,
    large_data,
    mixture_views,
    mnist_gpu,
    noise_bound,
    noise_core,
    second_machine,
    throughput,
    throughput_gpu,
    wide,
    wide_wall,
)

#: The folder the pages and their images are written to.
DOCS = ROOT / "docs"



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


RESULTS_INTRO = (
    "# Results\n\n"
    "How dpgm compares with AIM, MST and MWEM+PGM, then images, clustering, privacy, speed and scale. Every "
    "figure is read from `benchmarks/results/*.json` by `benchmarks/results_page.py`; each table names its file "
    "and commit, and `benchmarks/results/README.md` the command behind it. How the generic rules were chosen is "
    "in the [appendix](results-rules.md). Unless a table says otherwise, the machine had 2 cores.")
RULES_INTRO = (
    "# Appendix: how the generic rules were chosen\n\n"
    "The search behind the generic rules (`dpgm/rules.py`) that the [results page](results.md) compares with "
    "AIM, MST and MWEM+PGM: every rule family tried on seven datasets, scored by leave-one-dataset-out, what was "
    "kept and what was lost, the leads measured without privacy, and the earlier versions of the rules beside "
    "the peers. Generated, like the results page, by `benchmarks/results_page.py` from `benchmarks/results/`.")


def results() -> str:
    """The results page: the headline comparison first, then what else a user needs."""
    busy = [threads_busy("config_timings_busy.json", "Threads beside another job: every shipped config", THREADS_ALL),
            threads_busy("threads_busy.json", "Threads and wait policies (before)", THREADS_WAIT)]
    sections = (headline(), no_cliff_section(), epsilon_two(), tables_section(), seeds_section(), eps_section(),
                large_section(), *candidate_runs(), deep_section(),
                generic_time(), timings(), train_on_synthetic(), partition_tos(), partitioners(), partition_release(),
                subspace(), audit(), accounting(), throughput(),
                noise_bound(), second_machine(), noise_core(), mixture_views(), throughput_gpu(), mnist_gpu(), distributed(), large_data(), wide(), wide_wall(), *busy,
                counting())
    return "\n\n".join((RESULTS_INTRO, *filter(None, sections))) + "\n"


def rules_appendix() -> str:
    """The appendix: the search for the generic rules and the earlier versions beside the peers."""
    sections = (generic_rules(), rules_sweep_section(), dependence_section(), capacity_section(), earlier())
    return "\n\n".join((RULES_INTRO, *filter(None, sections))) + "\n"


#: Each generated page and the function that writes it.
PAGES = {DOCS / "results.md": results, DOCS / "results-rules.md": rules_appendix}


def missing_images(text: str) -> list[str]:
    """The images a page links (``![...](img/...)``) that are not under docs/."""
    return [link for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text) if not (DOCS / link).is_file()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a page differs from the generated one or links an image that is not there")
    args = parser.parse_args(argv)
    texts = {path: make() for path, make in PAGES.items()}
    if args.check:
        stale = [path for path, text in texts.items() if not path.is_file() or path.read_text() != text]
        absent = [link for text in texts.values() for link in missing_images(text)]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python benchmarks/results_page.py")
        for link in absent:
            print(f"docs/{link} is missing: run python benchmarks/results_page.py")
        return 1 if stale or absent else 0
    for image in [*draw(DOCS), *draw_no_cliff(DOCS)]:
        print(f"wrote {image.relative_to(ROOT)}")
    for path, text in texts.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
