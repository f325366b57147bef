"""Time: each shipped config, the generic run beside MST's, and threads beside another job."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from pages.common import RESULTS, load, load_if_there, source, table


def timings() -> str:
    """Seconds per shipped config: of each config, the newest run in the timing files."""
    newest: dict[str, tuple[str, str, dict[str, Any]]] = {}
    files = sorted(RESULTS.glob("config_timings*.json")) + sorted(RESULTS.glob("timing_*.json"))
    for path in files:
        data = load(path.name)
        date = (data.get("provenance") or {}).get("date", "")
        for run in data["runs"]:
            quiet_default = run.get("threads", "default") == "default" and not run.get("busy", False)
            if run.get("returncode") == 0 and quiet_default and date >= newest.get(run["config"], ("",))[0]:
                newest[run["config"]] = (date, path.name, run)
    rows = []
    for config, (_, name, run) in sorted(newest.items(), key=lambda kv: kv[1][2]["seconds"]):
        made = run.get("generate_records")
        gen = f"{made:,} records in {run['generate_seconds']:.1f} s" if made else ""
        rows.append((f"`{config}`", f"{run['seconds']:.1f}", gen, f"`{name}`"))
    used = sorted({name for _, name, _ in newest.values()})
    return "\n\n".join([
        "## Time per shipped config",
        ("`python train.py --config NAME`, each run a fresh process (imports, loading, partition, "
        "training, release files), default threads, on the machine its provenance describes "
        "(`benchmarks/config_timings.py`). Of each config, the newest run is shown."),
        table(("config", "seconds to train", "generating", "file"), rows),
        source(*used)])


def generic_time() -> str:
    """The whole generic run beside MST's, on one 500,000 x 100 dataset (the time target: within 2x)."""
    data = load("generic_time.json")
    ds, dpgm, mst = data["dataset"], data["dpgm"], data["mst"]
    rows = [("dpgm (generic)", f"{dpgm['run_s']:.1f}", f"{dpgm['release_s']:.1f}", f"{dpgm['total_s']:.1f}",
             f"{dpgm['epsilon_spent']:.3f}"),
            ("MST", f"{mst['fit_s']:.1f}", f"{mst['sample_s']:.1f}", f"{mst['total_s']:.1f}",
             f"{mst['epsilon_spent']:.3f}")]
    return "\n\n".join([
        "## Time of the generic run beside MST's",
        (f"`benchmarks/generic_time.py`: {ds['records']:,} records x {ds['items']} items ({ds['construction']}), "
         f"epsilon {data['epsilon']:g}, delta {data['delta']:g}, {data['settings']['threads']} thread; dpgm's "
         f"whole run (every stage up to the release folder) and its release of {dpgm['n_synthetic']:,} records, "
         f"MST's fit and its sampling of as many (the rules' plan: {dpgm['plan']['k']} group(s), partition "
         f"{dpgm['plan']['partition']}). dpgm / MST: {data['ratio']:.2f}, both timed in the same run."),
        table(("method", "fit seconds", "sampling seconds", "total seconds", "epsilon spent"), rows),
        source("generic_time.json")])


def threads_busy(name: str, title: str, what: str) -> str:
    """Threads (and OpenMP wait policies), alone and beside one busy process: median seconds."""
    data = load_if_there(name)
    if data is None:
        return ""
    runs = data["runs"]
    cells: dict[tuple[str, str, str, bool], list[float]] = defaultdict(list)
    for r in runs:
        cells[(r["config"], r["threads"], r["wait_policy"], r["busy"])].append(r["seconds"])
    configs = sorted({r["config"] for r in runs})
    settings = sorted({(r["threads"], r["wait_policy"]) for r in runs})
    rows = []
    for config in configs:
        for busy in (False, True):
            best = min(float(np.median(cells[(config, t, w, busy)])) for t, w in settings)
            rows.append([config, "beside a busy process" if busy else "alone", *[
                f"{np.median(cells[(config, t, w, busy)]):.1f} ({np.median(cells[(config, t, w, busy)]) / best:.2f}x)"
                for t, w in settings]])
    header = ["config", "machine", *[f"threads {t}, wait {w}" for t, w in settings]]
    return "\n".join([f"## {title}", "", what, "", table(header, rows), "", source(name)])


THREADS_WAIT = (
    "`benchmarks/config_timings.py --busy quiet busy --wait-policies unset PASSIVE --repeats 3`, before the "
    "default left out the cores other jobs use: each config alone and beside one CPU-bound process, with the "
    "default threads (then the cores available) or one, and OpenMP's idle threads spinning for a while first "
    "(unset, OpenMP's own: dpgm's default) or sleeping (PASSIVE); median seconds of three interleaved runs, and "
    "the ratio to the best setting of that row.")


THREADS_ALL = (
    "`benchmarks/config_timings.py --threads default 1 --busy quiet busy`: every shipped config alone and beside "
    "one CPU-bound process, with dpgm's default threads (the cores available less the threads other running "
    "processes use when the run starts: 2 alone, 1 beside the busy process on this 2-core machine) and with "
    "one; seconds, and the ratio to the better setting of that row.")
