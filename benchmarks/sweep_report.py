"""Aggregate counting_queries.py JSON files (a sweep) into per-dataset plots and tables.

Reads each file's ``settings``, ``results`` and ``runs`` (partial files are fine). ``dpgm`` is
labelled ``dpgm (generic)`` (``--config`` ending in transactions.yaml), else ``dpgm (<config
stem>)`` (the dataset's own config when unset). Size: ``all``, ``--subsample`` n or ``first N``
(``--limit``). A run found in two files is taken from the later one (with a warning).

    python benchmarks/sweep_report.py benchmarks/results/sweep/*.json \\
        --out-dir benchmarks/results/sweep_report --markdown benchmarks/results/sweep_report/tables.md \\
        --json benchmarks/results/sweep_report/summary.json
    python benchmarks/sweep_report.py --self-test
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json

GROUPS = (1, 2, 3, 4, 5)
TVDS = ("tvd_oneway", "tvd_twoway", "tvd_threeway")
ORDER = ("aim", "mst", "mwem", "marginals")
GENERIC = "dpgm (generic)"
#: What fixes the query workload (the commit: its query generator); files differing in it may not compare.
WORKLOAD = ("queries", "top_items", "limit", "seed", "accounting", "commit")
RunKey = tuple[str, str, float, str, int]   # dataset, size, epsilon, method label, seed
CellKey = tuple[str, str, float, str]       # dataset, size, epsilon, method label


def method_label(method: str, config: str | None, dataset: str) -> str:
    """``dpgm`` named by its config (``None``: configs/<dataset>.yaml); other methods unchanged."""
    if method != "dpgm":
        return method
    if config is not None and str(config).endswith("transactions.yaml"):
        return GENERIC
    return f"dpgm ({Path(config).stem if config else dataset})"


def size_label(settings: dict[str, Any]) -> str:
    """``all``, the subsample n, or ``first N`` when ``--limit`` cut the data first."""
    sub, limit = settings.get("subsample"), settings.get("limit")
    return " of ".join([str(sub)] * bool(sub) + [f"first {limit}"] * bool(limit)) or "all"


def run_key(row: dict[str, Any], settings: dict[str, Any]) -> RunKey:
    """(dataset, size, epsilon, method label, seed) of a results or runs row."""
    label = method_label(row["method"], settings.get("config"), row["dataset"])
    return row["dataset"], size_label(settings), float(row["epsilon"]), label, int(row.get("seed", 0))


def merge(payloads: dict[str, dict[str, Any]]) -> tuple[dict[RunKey, dict[str, Any]], list[str]]:
    """One record per run: ``{groups: {g: err}, tvd: {metric: value}, seconds, file}``, and warnings."""
    runs: dict[RunKey, dict[str, Any]] = {}
    workloads: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    replaced: Counter[tuple[str, str]] = Counter()
    for path, data in payloads.items():
        s, mine = data["settings"], {}
        for row in data.get("results", []):
            rec = mine.setdefault(run_key(row, s), {"groups": {}, "tvd": {}, "seconds": None, "file": path})
            if "group" in row:
                rec["groups"][int(row["group"])] = row["rel_error"]
            elif row.get("metric") in TVDS:
                rec["tvd"][row["metric"]] = row["value"]
        for row in data.get("runs", []):  # a run without results rows is left out
            mine.get(run_key(row, s), {})["seconds"] = row["seconds"]
        replaced.update((runs[k]["file"], path) for k in mine if k in runs)
        commit = ((data.get("provenance") or {}).get("commit") or "?")[:8]
        for ds, size in {k[:2] for k in mine}:
            top = (s.get("top_items_by_dataset") or {}).get(ds, s.get("top_items"))
            values = {**s, "commit": commit, "top_items": top}
            workloads[(ds, size)][json.dumps([values.get(w) for w in WORKLOAD])] = path
        runs.update(mine)
    warnings = [f"{n} runs of {old} replaced by the same runs in {new}" for (old, new), n in replaced.items()]
    warnings += [f"{ds} {size}: files differ in {'/'.join(WORKLOAD)}, so their query workloads may "
                 "differ: " + "; ".join(f"{v}: {k}" for k, v in seen.items())
                 for (ds, size), seen in workloads.items() if len(seen) > 1]
    return runs, warnings


def stat(values: Sequence[float | None]) -> dict[str, Any] | None:
    """Mean, sample standard deviation (None for one value) and count of the values given; None if none."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else None
    return {"mean": float(v.mean()), "sd": sd, "n": len(v)} if len(v) else None


def aggregate(runs: dict[RunKey, dict[str, Any]]) -> dict[CellKey, dict[str, Any]]:
    """Per (dataset, size, epsilon, method): mean/sd over seeds of each group error, TVD and seconds."""
    by_cell: dict[CellKey, list[dict[str, Any]]] = defaultdict(list)
    for (ds, size, eps, label, _), rec in runs.items():
        by_cell[(ds, size, eps, label)].append(rec)
    return {key: {"seeds": len(recs),
                  "groups": {g: stat([r["groups"].get(g) for r in recs]) for g in GROUPS},
                  "tvd": {m: stat([r["tvd"].get(m) for r in recs]) for m in TVDS},
                  "seconds": stat([r["seconds"] for r in recs])} for key, recs in by_cell.items()}


def method_order(labels: set[str]) -> list[str]:
    """dpgm variants first, then AIM, MST, MWEM, marginals, then anything else."""
    rank = {m: i for i, m in enumerate(ORDER)}
    return sorted(labels, key=lambda m: (0 if m.startswith("dpgm") else 1 + rank.get(m, len(ORDER)), m))


def _stat(cell: dict[str, Any] | None, *path: Any) -> dict[str, Any] | None:
    """The statistic at ``path`` in a cell (``"groups", 1``), None where absent."""
    for p in path:
        cell = None if cell is None else cell.get(p)
    return cell


def wins(cells: dict[CellKey, dict[str, Any]], ds: str, size: str, eps: float) -> dict[str, Any] | None:
    """How ``dpgm (generic)`` compares with the baselines at one (dataset, size, epsilon); None if absent."""
    def mean(method: str, *path: Any) -> float | None:
        return (_stat(cells.get((ds, size, eps, method)), *path) or {}).get("mean")

    def groups(other: str, strict: bool) -> str:
        pairs = [(mean(GENERIC, "groups", g), mean(other, "groups", g)) for g in GROUPS]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        return f"{sum(a < b if strict else a <= b for a, b in pairs)}/{len(pairs)}" if pairs else "n/a"

    def tvd(other: str, metric: str) -> bool | None:
        a, b = mean(GENERIC, "tvd", metric), mean(other, "tvd", metric)
        return None if a is None or b is None else a <= b

    if (ds, size, eps, GENERIC) not in cells:
        return None
    one, mst1 = mean(GENERIC, "tvd", "tvd_oneway"), mean("mst", "tvd", "tvd_oneway")
    return {"groups <= AIM": groups("aim", False), "groups < MWEM": groups("mwem", True),
            "groups < marginals": groups("marginals", True),
            "2-way <= AIM": tvd("aim", "tvd_twoway"), "3-way <= AIM": tvd("aim", "tvd_threeway"),
            "2-way <= MST": tvd("mst", "tvd_twoway"), "3-way <= MST": tvd("mst", "tvd_threeway"),
            "1-way / MST": None if one is None or not mst1 else one / mst1}


def fmt(stat: dict[str, Any] | None, sd: bool = True) -> str:
    """``mean ± sd`` (sd where defined and asked for); ``–`` where nothing was measured."""
    if stat is None:
        return "–"
    return f"{stat['mean']:.3g}" + (f" ± {stat['sd']:.2g}" if sd and stat["sd"] is not None else "")


def tables(cells: dict[CellKey, dict[str, Any]], warnings: list[str]) -> str:
    """Markdown: one table per (dataset, size, epsilon), then the wins of ``dpgm (generic)``."""
    out, win_rows, head = [], [], ["dataset", "size", "epsilon"]
    for ds, size, eps in sorted({k[:3] for k in cells}):
        out += [f"### {ds}, size {size}, epsilon {eps:g}", "",
                "| method | " + " | ".join(f"g{g}" for g in GROUPS)
                + " | TVD 1-way | 2-way | 3-way | seconds | seeds |",
                "|---" * (len(GROUPS) + 6) + "|"]
        for m in method_order({k[3] for k in cells if k[:3] == (ds, size, eps)}):
            c = cells[(ds, size, eps, m)]
            out.append(f"| {m} | " + " | ".join(fmt(c["groups"][g]) for g in GROUPS) + " | "
                       + " | ".join(fmt(c["tvd"][t], sd=False) for t in TVDS)
                       + f" | {fmt(c['seconds'], sd=False)} | {c['seeds']} |")
        out.append("")
        w = wins(cells, ds, size, eps)
        if w is not None:
            shown = ["n/a" if v is None else ("yes" if v is True else "no") if isinstance(v, bool)
                     else f"{v:.2f}" if isinstance(v, float) else v for v in w.values()]
            win_rows.append(f"| {ds} | {size} | {eps:g} | " + " | ".join(shown) + " |")
            head[3:] = list(w)
    if win_rows:
        out += [f"### {GENERIC}: wins", "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|", *win_rows, ""]
    if warnings:
        out += ["### warnings", "", *(f"- {w}" for w in warnings), ""]
    return "\n".join(out)


def plot(cells: dict[CellKey, dict[str, Any]], ds: str, size: str, path: Path) -> None:
    """Panels: error per length group for each epsilon; TVD 1/2/3-way vs epsilon; seconds per method."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator
    mine = {k[2:]: c for k, c in cells.items() if k[:2] == (ds, size)}
    epsilons, methods = sorted({e for e, _ in mine}), method_order({m for _, m in mine})
    every = method_order({k[3] for k in cells})  # the same colour for a method in every figure
    style = {m: (f"C{i % 10}", "osD^v<>ph*"[i % 10]) for i, m in enumerate(every)}
    ncols = max(len(epsilons), 4)
    fig, axes = plt.subplots(2, ncols, figsize=(4.2 * ncols, 8), squeeze=False)
    for ax in [*axes[0][len(epsilons):], *axes[1][4:]]:
        ax.axis("off")

    def line(ax: Any, m: str, xs: list[float], stats: list[dict[str, Any] | None]) -> None:
        pts = [(x, s) for x, s in zip(xs, stats, strict=True) if s is not None]
        if pts:
            ax.errorbar([x for x, _ in pts], [s["mean"] for _, s in pts], yerr=[s["sd"] or 0 for _, s in pts],
                        color=style[m][0], marker=style[m][1], capsize=3, label=m)

    for ax, eps in zip(axes[0], epsilons, strict=False):
        for m in methods:
            line(ax, m, list(GROUPS), [_stat(mine.get((eps, m)), "groups", g) for g in GROUPS])
        ax.set(yscale="log", xticks=GROUPS, xlabel="length group", ylabel="mean relative error",
               title=f"(a) counting queries, epsilon {eps:g}")
    for ax, metric in zip(axes[1], TVDS, strict=False):
        for m in methods:
            line(ax, m, epsilons, [_stat(mine.get((e, m)), "tvd", metric) for e in epsilons])
        ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="TVD",
               title=f"(b) {metric[4:].replace('way', '-way')} marginal TVD")
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(min(epsilons) / 1.5, max(epsilons) * 1.5)
    ax, width = axes[1][3], 0.8 / len(epsilons)
    for i, eps in enumerate(epsilons):
        secs = [(_stat(mine.get((eps, m)), "seconds") or {}).get("mean", 0) for m in methods]
        ax.bar(np.arange(len(methods)) + (i - (len(epsilons) - 1) / 2) * width, secs, width,
               label=f"epsilon {eps:g}")
    ax.set_xticks(np.arange(len(methods)), methods, rotation=30, ha="right")
    ax.set(yscale="log", ylabel="seconds (mean over runs)",
           title="(c) seconds per run\n1 thread on a shared 2-core machine")
    ax.legend(fontsize=8)
    for a in axes.flat:
        a.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=style[m][0], marker=style[m][1]) for m in methods]
    fig.legend(handles, methods, loc="upper center", ncol=len(methods), bbox_to_anchor=(0.5, 0.955))
    seeds = sorted({str(c["seeds"]) for c in mine.values()}, key=int)
    fig.suptitle(f"{ds}, size {size}: seeds per cell {'-'.join(dict.fromkeys([seeds[0], seeds[-1]]))}"
                 "; error bars = sd over seeds", y=0.995)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(payloads: dict[str, dict[str, Any]], out_dir: Path, json_path: str | None = None,
           markdown: str | None = None) -> tuple[dict[CellKey, dict[str, Any]], str]:
    """Merge, aggregate, plot one PNG per (dataset, size), print the tables and write the outputs."""
    runs, warnings = merge(payloads)
    cells = aggregate(runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    for ds, size in sorted({k[:2] for k in cells}):
        png = out_dir / f"{ds}_{size.replace(' ', '_')}.png"
        plot(cells, ds, size, png)
        print(f"wrote {png}", file=sys.stderr)
    text = tables(cells, warnings)
    print(text)
    if markdown:
        Path(markdown).write_text(text + "\n")
    if json_path:
        write_json(json_path, {
            "inputs": {p: (d.get("provenance") or {}).get("commit") for p, d in payloads.items()},
            "cells": [{"dataset": k[0], "size": k[1], "epsilon": k[2], "method": k[3], **c} for k, c in cells.items()],
            "wins": [{"dataset": d, "size": s, "epsilon": e, **w} for d, s, e in sorted({k[:3] for k in cells})
                     if (w := wins(cells, d, s, e)) is not None],
            "warnings": warnings})
    return cells, text


def self_test() -> int:
    """A synthetic sweep (three files: dpgm, AIM, MST): labels, means, sds, wins and the outputs."""
    def payload(config: str | None, method: str, errs: list[list[float]]) -> dict[str, Any]:
        rows, runs = [], []
        for seed, err in enumerate(errs):
            keys = {"dataset": "toy", "epsilon": 1.0, "method": method, "seed": seed}
            rows += [{**keys, "group": g, "rel_error": e} for g, e in zip(GROUPS, err, strict=True)]
            rows += [{**keys, "metric": t, "value": err[0]} for t in TVDS]
            runs.append({**keys, "seconds": 2.0 + seed})
        return {"settings": {"config": config, "subsample": 300, "queries": 10}, "results": rows, "runs": runs}

    files = {"a": payload("configs/transactions.yaml", "dpgm", [[.1] * 5, [.3] * 5]),
             "b": payload(None, "aim", [[.2, .2, .2, .1, .1]]), "c": payload(None, "mst", [[.4] * 5])}
    with tempfile.TemporaryDirectory() as tmp:
        cells, text = report(files, Path(tmp), json_path=f"{tmp}/s.json", markdown=f"{tmp}/s.md")
        assert (Path(tmp) / "toy_300.png").exists() and json.loads(Path(f"{tmp}/s.json").read_text())["wins"]
        assert Path(f"{tmp}/s.md").read_text().strip() == text.strip()
    assert abs((me := cells[("toy", "300", 1.0, GENERIC)])["groups"][1]["mean"] - .2) < 1e-12
    assert abs(me["groups"][1]["sd"] - .02 ** .5) < 1e-12 and method_label("dpgm", None, "x") == "dpgm (x)"
    assert me["seconds"]["mean"] == 2.5 and _stat(cells[("toy", "300", 1.0, "aim")], "groups", 1)["sd"] is None
    assert (w := wins(cells, "toy", "300", 1.0)) and w["groups <= AIM"] == "3/5" and w["2-way <= MST"]
    assert w["groups < MWEM"] == "n/a" and abs(w["1-way / MST"] - 0.5) < 1e-12 and "wins" in text
    print("self-test passed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="*", type=Path, help="counting_queries.py JSON files")
    p.add_argument("--out-dir", type=Path, help="folder for one PNG per (dataset, size)")
    p.add_argument("--json", default=None, metavar="PATH", help="aggregated means/sds (with provenance)")
    p.add_argument("--markdown", default=None, metavar="PATH", help="the printed tables")
    p.add_argument("--self-test", action="store_true", help="run on a synthetic example and exit")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.files or args.out_dir is None:
        p.error("FILES and --out-dir are required (or --self-test)")
    report({str(f): json.loads(f.read_text()) for f in args.files}, args.out_dir, args.json, args.markdown)
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
