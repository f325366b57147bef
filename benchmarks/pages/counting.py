"""The first protocol (`counting_queries.py`): counting queries and marginals on three datasets."""

from __future__ import annotations

from typing import Any

import sweep_report as sweep

from pages.common import METHODS, RESULTS, load, num, seconds, source, table

GOWALLA_10_SEEDS = ("gowalla_eps1_10seeds_dpgm.json", "gowalla_eps1_10seeds_mst.json")


def group_means(cell: dict[str, Any]) -> list[str]:
    return [num((cell["groups"].get(str(g)) or {}).get("mean")) for g in sweep.GROUPS]


def tvd_means(cell: dict[str, Any]) -> list[str]:
    return [num((cell["tvd"].get(m) or {}).get("mean")) for m in sweep.TVDS]


def counting() -> str:
    """The sweep at epsilon 1 on the full datasets, and dpgm's standing at every setting."""
    data = load("sweep_report/summary.json")
    cells = {(c["dataset"], c["size"], c["epsilon"], c["method"]): c for c in data["cells"]}
    queries, marginals = [], []
    for ds in sorted({k[0] for k in cells if k[1] == "all" and k[2] == 1.0}):
        here = {k[3] for k in cells if k[:3] == (ds, "all", 1.0)}
        for method in sweep.method_order(here):
            cell = cells[(ds, "all", 1.0, method)]
            queries.append((ds, METHODS.get(method, method), *group_means(cell)))
            marginals.append((ds, METHODS.get(method, method), *tvd_means(cell),
                              seconds(cell["seconds"]["mean"]), cell["seeds"]))
    aim_limits = {load(f"sweep/{p.name}")["settings"].get("aim_time_limit")
                  for p in (RESULTS / "sweep").glob("*_baselines.json")}
    wins = [(w["dataset"] + ("" if w["size"] == "all" else f", {int(w['size']):,} records"),
             f"{w['epsilon']:g}", w["groups <= AIM"], w["groups < MWEM"],
             w["groups < marginals"], f"{yes(w['2-way <= MST'])} / {yes(w['3-way <= MST'])}",
             num(w["1-way / MST"], 2)) for w in data["wins"]]
    return "\n\n".join([
        "## Counting queries and marginals: the first protocol, on three datasets",
        ("`benchmarks/counting_queries.py` on msnbc (17 items), retail and gowalla (their 100 most "
        "frequent items): 1,000 random item-set queries per dataset in 5 length groups, the mean "
        "relative error per group, and the average total variation distance (TVD) of the 1-, 2- "
        "and 3-way marginals; dpgm with the generic config (`configs/transactions.yaml`), "
        "marginals: independent noisy item frequencies; every "
        "method at the same epsilon through the same accountant, means over the seeds. AIM ran "
        f"with a time limit of {', '.join(f'{t:g}' for t in sorted(aim_limits))} s. One thread "
        "per run on a shared 2-core machine, so the seconds are upper bounds. Aggregated by "
        "`benchmarks/sweep_report.py` from `benchmarks/results/sweep/*.json`."),
        "### At epsilon 1",
        "Mean relative error of the counting queries, per length group:",
        table(("dataset", "method", *(f"group {g}" for g in sweep.GROUPS)), queries),
        "Average TVD of the marginals, and the seconds per run:",
        table(("dataset", "method", "TVD 1-way", "2-way", "3-way", "seconds", "seeds"),
              marginals),
        "### dpgm against the baselines at every epsilon and size",
        ("Groups (of 5) where dpgm's mean error is at or below AIM's, below MWEM's and below "
        "independent marginals'; whether dpgm's 2- and 3-way TVDs are at or below MST's; dpgm's "
        "1-way TVD over MST's. The whole dataset, or a random sample of that many records."),
        table(("data", "epsilon", "groups <= AIM", "< MWEM", "< marginals",
               "2-/3-way TVD <= MST", "1-way TVD / MST"), wins),
        source("sweep_report/summary.json"),
        gowalla_pairs()])


def yes(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def gowalla_pairs() -> str:
    """gowalla's marginals with 10 seeds, where 3 seeds left dpgm and MST level on pairs."""
    runs, _ = sweep.merge({name: load(name) for name in GOWALLA_10_SEEDS})
    cells = sweep.aggregate(runs)
    rows = []
    for method in sweep.method_order({k[3] for k in cells}):
        cell = cells[("gowalla", "all", 1.0, method)]
        rows.append((METHODS.get(method, method),
                     *(sweep.fmt(cell["tvd"][m]) for m in sweep.TVDS),
                     seconds(cell["seconds"]["mean"]), cell["seeds"]))
    return "\n\n".join([
        "### gowalla's marginals over 10 seeds",
        "The same protocol at epsilon 1 with 10 seeds for dpgm and MST (mean ± sd).",
        table(("method", "TVD 1-way", "2-way", "3-way", "seconds", "seeds"), rows),
        source(*GOWALLA_10_SEEDS)])
