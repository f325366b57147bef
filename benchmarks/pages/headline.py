"""The results page's opening: the shipped generic rules beside AIM, MST, MWEM+PGM and independent marginals.

Read from ``rules_sweep.json`` (``benchmarks/rules_sweep.py``), which gathers the shipped rules' runs and each
peer's on the same records and held-out queries; the figures it draws go to docs/img/results/.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the results page's folder is the import root (``pages.*``)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from typing import Any

import rules_sweep

from pages import plots
from pages.common import load, print_sections, source, table

#: The sweep's summary and the file of the shipped rules' own runs (every setting, ten seeds).
SWEEP, SHIPPED_RUNS = "rules_sweep.json", "rules_lodo_shipped_now.json"
#: Where the figures go, relative to docs/ (the pages link them from there).
IMAGES = Path("img") / "results"
PEERS = {"mst": "MST", "mwem_pgm": "MWEM+PGM", "aim": "AIM"}


def datasets(cells: list[dict[str, Any]]) -> list[str]:
    """The datasets of the sweep, in its order."""
    return list(dict.fromkeys(c["dataset"] for c in cells))


def draw(docs: Path) -> list[Path]:
    """Every figure of the opening section, from the sweep's JSON, under docs/img/results/."""
    cells = load(SWEEP)["cells"]
    return [plots.overview(cells, docs / IMAGES / "overview.png"),
            *(plots.dataset_errors(cells, d, docs / IMAGES / f"errors_{d}.png") for d in datasets(cells))]


def targets_table(targets: dict[str, Any]) -> str:
    """Per epsilon and peer: on how many settings dpgm is at or below it, by each measure."""
    rows = []
    for eps, t in targets.items():
        of_all = f" of {t['settings']}"
        rows.append((eps, "independent marginals", f"{t['below_marginals_5_of_5']}{of_all} (below in 5 of 5)", "",
                     "", ""))
        rows += [(eps, PEERS[p], f"{t[p]['at_or_below_4_of_5']} of {t[p]['settings']}",
                  f"{t[p]['tvd2_at_or_below']} of {t[p]['settings']}",
                  f"{t[p]['tvd3_at_or_below']} of {t[p]['tvd3_settings']}",
                  f"{t[p]['tvd1_within']} of {t[p]['tvd1_settings']}") for p in rules_sweep.PEERS if t[p]["settings"]]
    return table(("epsilon", "dpgm beside", "query error at or below in 4 of 5 groups", "2-way TVD at or below",
                  "3-way TVD at or below", f"1-way TVD within {rules_sweep.TVD1_RATIO:g}x"), rows)


def span(values: list[int]) -> str:
    """'16' where every value is 16, else '14 to 16'."""
    return f"{min(values)}" if min(values) == max(values) else f"{min(values)} to {max(values)}"


def takeaway(data: dict[str, Any]) -> str:
    """The comparison in one sentence, its counts read off the sweep's targets and cells."""
    ts, cells = list(data["targets"].values()), data["cells"]
    peers = [t[p] for t in ts for p in rules_sweep.PEERS if t[p]["settings"]]
    sizes = [c["n_fit"] for c in cells]
    return (f"**On {span([t['settings'] for t in ts])} settings ({len(datasets(cells))} datasets, {min(sizes):,} to "
            f"{max(sizes):,} records fitted) at epsilon {' and at '.join(data['targets'])}, dpgm's 2-way marginal "
            f"TVD is at or below AIM's, MST's and MWEM+PGM's on {span([p['tvd2_at_or_below'] for p in peers])} of "
            f"them, its 3-way on {span([p['tvd3_at_or_below'] for p in peers])}, and its counting-query error at or "
            f"below theirs in at least 4 of 5 query length groups on {span([p['at_or_below_4_of_5'] for p in peers])}; "
            f"it is below independent marginals in all 5 groups on {span([t['below_marginals_5_of_5'] for t in ts])}."
            "**")


def tvd_table(cells: list[dict[str, Any]], eps: float) -> str:
    """One epsilon's 2-way marginal TVD of every method on every setting, the lowest in bold."""
    rows = []
    for c in (c for c in cells if c["epsilon"] == eps):
        values = [plots.of(c, who).get("tvd2") for who, *_ in plots.METHODS]
        best = min(v for v in values if v is not None)
        seeds = " / ".join(str(plots.of(c, who).get("seeds", "-")) for who in ("dpgm", *PEERS))
        rows.append((plots.setting_label(c), seeds,
                     *("-" if v is None else f"**{v:.4f}**" if v == best else f"{v:.4f}" for v in values)))
    return table(("data, records fitted", "seeds (dpgm / MST / MWEM+PGM / AIM)",
                  *(label for _, label, *_ in plots.METHODS)), rows)


def headline() -> str:
    """The opening section: what was measured, how often dpgm wins, the TVD tables and the figures."""
    data = load(SWEEP)
    cells, epsilons = data["cells"], sorted({c["epsilon"] for c in data["cells"]})
    per_eps = [part for eps in epsilons for part in (
        f"### Epsilon {eps:g}",
        (f"2-way marginal TVD to the held-out half (average over item pairs; lower is better, the lowest in bold) "
         f"at epsilon {eps:g}; each method's mean over its own seeds (the marginals ran on dpgm's), every method "
         "fitted on the same records and scored on the same held-out half on a seed."),
        tvd_table(cells, eps))]
    figures = [f"![{d}: mean relative error per query length group, every method]({IMAGES / f'errors_{d}.png'})"
               for d in datasets(cells)]
    return "\n\n".join([
        "## dpgm beside AIM, MST, MWEM+PGM and independent marginals",
        takeaway(data),
        ("Settings (a dataset and a number of records fitted) where dpgm's mean relative error on held-out counting "
         "queries is at or below the peer's in at least 4 of the 5 query length groups, and where its marginal TVDs "
         f"are at or below the peer's (single items: within {rules_sweep.TVD1_RATIO:g} times the peer's), on the seeds "
         "both ran; lower is better for every measure."),
        targets_table(data["targets"]),
        f"![Every setting's 2-way marginal TVD, each method, at epsilon 1 and 4]({IMAGES / 'overview.png'})",
        ("How it was measured: dpgm with its generic rules (`configs/transactions.yaml`: no tuning per dataset) and "
         "each peer fitted on the same records of seven public datasets (five click-streams and baskets, their 100 "
         "most frequent items or all of msnbc's 17; two categorical tables, mushroom and chess, as attribute=value "
         "items), every method at the same (epsilon, delta), delta 1/(100 N) for N the records' order of magnitude, "
         "each releasing as many records as it was fitted on; scored on the held-out half: 500 counting queries in "
         "5 length groups (mean relative error) and the 1-, 2- and 3-way marginals' total variation distance (TVD). "
         "Seeds fix the records, the queries and the noise. AIM ran under a public cap of 40 rounds "
         "(`benchmarks/rules_sweep.py`; the peers are `dpgm/evaluation/`'s implementations)."),
        *per_eps,
        "### The counting queries, dataset by dataset",
        ("Mean relative error of the held-out counting queries per length group (1: the shortest queries; log "
         "scale; lower is better): one row per epsilon, one panel per number of records fitted; each method's "
         "mean over its seeds."),
        *figures,
        "### Every figure of the comparison",
        ('??? note "The full table: scores, query groups, 1-, 2- and 3-way TVDs, seconds and AIM\'s rounds"\n\n'
         + "\n".join(f"    {line}" for line in ["```text", *rules_sweep.text(cells).split("\n"), "```"])),
        source(SWEEP, SHIPPED_RUNS)])


if __name__ == "__main__":
    raise SystemExit(print_sections(__doc__, lambda: [headline()]))
