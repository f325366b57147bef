"""End-to-end time of dpgm on the hospital table beside MST and AIM, each method in a process of its own.

The tables issue's time target: a table of 100,000 rows and 50 columns (diabetes-130: 101,766 encounters, 48
columns once its two identifiers are left out as its README says) end to end within 2x MST's time, and at most
a tenth of AIM's wherever AIM runs more than a minute. The table is loaded as tables_lodo.py loads it (its
declared schema, DROP's columns left out), but every method is fitted on the WHOLE table (or on ``--rows`` of
it drawn by the seed), at (epsilon, delta = 1/(100 N)) as tables_lodo.py sets them, and draws as many records
as it was fitted on:

- ``dpgm``: ``dpgm.Synthesizer(epsilon, delta, schema=...).fit(frame)`` (fit), ``.sample(n)`` (sample: the
  draw and its decoding to a DataFrame);
- ``mst`` and ``aim`` (``--peers``; need mbi): tables_lodo.py's peers, fitted on each column's value index under
  the schema's discretization (fit), their codes drawn and decoded back to the table's columns as a DataFrame
  (sample); AIM with a public cap on its rounds (``--aim-rounds``; its rounds are reported);

and each writes its release as a CSV (write). Seconds are wall clock (``fit_s`` ...) and the process's CPU time
(``fit_cpu_s`` ...: what the method took on a machine that other jobs share); ``total_s`` = fit + sample + write
(the table's loading, the same for every method, is reported apart as ``load_s``). Each method runs in a process of
its own, forked from this one before any work, with ``--threads`` threads (torch, the BLAS libraries, XLA's CPU
client behind mbi's JAX at 1), so that its peak resident memory is its own (``peak_rss_mb``: the process's, the
libraries this script imported and the loaded table included; ``loaded_rss_mb``: its peak before the method).
The JSON gives ``ratios``: dpgm's total over MST's and over AIM's (wall clock and CPU), and whether each target
is met.

    python benchmarks/table_time.py --json benchmarks/results/table_time_diabetes.json
    python benchmarks/table_time.py --rows 20000 --peers mst
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from counting_queries import default_data_dir
from provenance import provenance, write_json
from tables_lodo import PEER_SEED, TABLES, Fit, Split, coded_draws, codes_of

from dpgm.privacy.calibrate import default_delta

#: The peers that can run beside dpgm, and the rounds cap of AIM as tables_lodo.py's runs set it.
PEERS, AIM_ROUNDS = ("mst", "aim"), 40
#: dpgm's time over MST's at most (the issue's target), and over AIM's where AIM runs more than AIM_MINUTE seconds.
MST_TARGET, AIM_TARGET, AIM_MINUTE = 2.0, 0.1, 60.0


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fit_rows(split: Split, rows: int | None, seed: int, epsilon: float) -> Fit:
    """The whole table, or ``rows`` of it drawn by the seed, at (epsilon, delta = 1/(100 N))."""
    n = split.table.n
    index = np.arange(n) if rows is None or rows >= n else np.sort(
        np.random.default_rng([seed, 13]).choice(n, rows, replace=False))
    table = split.table.rows(index)
    return Fit(split.frame.iloc[index], table, seed, epsilon, default_delta(table.n))


@contextmanager
def timed(row: dict[str, Any], phase: str) -> Iterator[None]:
    """The block's wall seconds as ``row[phase_s]`` and this process's CPU seconds (every thread) as
    ``row[phase_cpu_s]``: on a machine other jobs share, the CPU seconds are what the method itself took."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    row[f"{phase}_s"], row[f"{phase}_cpu_s"] = time.perf_counter() - wall, time.process_time() - cpu


def time_dpgm(split: Split, fit: Fit, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """dpgm's fit, its sample of n records as a DataFrame and the CSV's writing."""
    import dpgm

    row: dict[str, Any] = {}
    with timed(row, "fit"):
        synth = dpgm.Synthesizer(epsilon=fit.epsilon, delta=fit.delta, schema=split.schema, seed=fit.seed,
                                 options={"threads": args.threads, **stated(args.dpgm_options)}).fit(fit.frame)
    with timed(row, "sample"):
        frame = synth.sample(fit.table.n, seed=fit.seed)
    plan = synth.privacy_report.get("plan") or {}
    return {**row, **written(frame, out), "spent_epsilon": synth.privacy_report.get("epsilon"),
            "stated": args.dpgm_options, "plan": {key: plan.get(key) for key in ("k", "model", "partition")}}


def stated(options: list[str]) -> dict[str, Any]:
    """``--dpgm-options`` KEY=VALUE pairs as config options (values read as YAML)."""
    return {key: yaml.safe_load(value) for key, _, value in (item.partition("=") for item in options)}


def dpgm_name(args: argparse.Namespace) -> str:
    """dpgm's row: ``dpgm`` as shipped (the one the ratios compare), else named by its stated options."""
    return " ".join(["dpgm", *args.dpgm_options])


def time_peer(peer: str, split: Split, fit: Fit, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """A peer's fit (tables_lodo.py's: the columns' codes), its draw decoded to a DataFrame and the CSV's writing."""
    from dpgm.evaluation.baselines import baseline_options, fit_baseline
    from dpgm.tables.frame import as_frame
    from dpgm.tables.records import decode

    options = {"max_rounds": args.aim_rounds} if peer == "aim" else {}
    rng = np.random.default_rng(PEER_SEED + fit.seed)
    row: dict[str, Any] = {"options": options}
    with timed(row, "fit"):
        fitted = fit_baseline(peer, codes_of(split, fit), epsilon=fit.epsilon, delta=fit.delta, rng=rng,
                              options=baseline_options(peer, options))
    with timed(row, "sample"):
        records = coded_draws(fitted.model, split.schema, fit.table.n, rng)
        values = decode(split.schema, records, rng)
        frame = as_frame(split.schema, values, list(fit.frame.columns), [str(d) for d in fit.frame.dtypes])
    return {**row, **written(frame, out), "rounds": fitted.report.get("rounds"),
            "spent_epsilon": fitted.report.get("epsilon")}


def written(frame: Any, out: Path) -> dict[str, Any]:
    """Seconds of writing the release as a CSV (no index), its bytes and its record count."""
    row: dict[str, Any] = {}
    with timed(row, "write"):
        frame.to_csv(out, index=False)
    return {**row, "csv_bytes": out.stat().st_size, "n_synthetic": len(frame)}


def measure(method: str, args: argparse.Namespace) -> dict[str, Any]:
    """One method timed in this process: the table loaded, then the method; its row."""
    start = time.perf_counter()
    split = Split(args.table, (args.data_dir or default_data_dir()) / "tables")
    fit = fit_rows(split, args.rows, args.seed, args.epsilon)
    load_s, loaded = time.perf_counter() - start, peak_rss_mb()
    with tempfile.TemporaryDirectory(prefix="table-time-") as tmp:
        out = Path(tmp) / f"{method}.csv"
        row = time_peer(method, split, fit, args, out) if method in PEERS else time_dpgm(split, fit, args, out)
    for clock in ("s", "cpu_s"):
        row[f"total_{clock}"] = sum(row[f"{phase}_{clock}"] for phase in ("fit", "sample", "write"))
    return {"method": method, "n": fit.table.n, "columns": len(split.schema.names), "delta": fit.delta,
            "load_s": load_s, **row, "loaded_rss_mb": loaded, "peak_rss_mb": peak_rss_mb()}


def child(method: str, args: argparse.Namespace, result: Path) -> None:
    """A forked process's work: ``args.threads`` threads in torch and the BLAS libraries (and, at 1, in XLA's CPU
    client, set before mbi's JAX loads), then ``measure``, its row written to ``result``."""
    from dpgm.threads import set_threads

    if args.threads == 1:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    set_threads(args.threads)
    row = measure(method, args)
    stamp = provenance()
    result.write_text(json.dumps({**row, "measured": {k: stamp[k] for k in ("commit", "dirty", "date")}}))


def run_method(method: str, args: argparse.Namespace) -> dict[str, Any]:
    """``method`` timed in a process of its own, forked from this one before any work (so that its peak memory is
    its own; this process runs no torch op, so no thread pool is forked); its row, with the commit and date it was
    measured at."""
    with tempfile.TemporaryDirectory(prefix="table-time-") as tmp:
        result = Path(tmp) / "row.json"
        process = multiprocessing.get_context("fork").Process(target=child, args=(method, args, result))
        process.start()
        process.join()
        if process.exitcode != 0:
            raise SystemExit(f"{method}: its process exited with status {process.exitcode}")
        return json.loads(result.read_text())


def ratios(methods: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """dpgm's total seconds over each peer's, wall clock and CPU, and whether the issue's target is met: at most
    MST_TARGET times MST's, at most AIM_TARGET times AIM's (only where AIM runs more than AIM_MINUTE seconds)."""
    out: dict[str, Any] = {}
    for peer, target in (("mst", MST_TARGET), ("aim", AIM_TARGET)):
        for clock in ("s", "cpu_s") if "dpgm" in methods and peer in methods else ():
            theirs = methods[peer][f"total_{clock}"]
            out[f"dpgm_over_{peer}_{clock}"] = ratio = methods["dpgm"][f"total_{clock}"] / theirs
            out[f"target_met_{peer}_{clock}"] = ratio <= target or (peer == "aim" and theirs <= AIM_MINUTE)
    return out


def line(row: dict[str, Any]) -> str:
    """One method's times in words."""
    rounds = f", {row['rounds']} rounds" if row.get("rounds") is not None else ""
    return (f"  {row['method']}: fit {row['fit_s']:.1f} s, sample {row['sample_s']:.1f} s, write {row['write_s']:.1f} s, "
            f"total {row['total_s']:.1f} s (CPU {row['total_cpu_s']:.1f} s){rounds}; peak RSS {row['peak_rss_mb']:.0f} MB "
            f"(loaded {row['loaded_rss_mb']:.0f} MB)")


def save(args: argparse.Namespace, methods: dict[str, dict[str, Any]]) -> None:
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        write_json(args.json, {"settings": settings, "methods": methods, "ratios": ratios(methods)})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", default="diabetes-130", choices=TABLES, help="a shared table (default: the hospital table)")
    p.add_argument("--rows", type=int, default=None, help="fit on this many rows drawn by the seed (default: all)")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="seeds the rows' draw and every method")
    p.add_argument("--threads", type=int, default=1, help="threads of torch, BLAS and XLA in each method's process")
    p.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS,
                   help="peers timed beside dpgm (need mbi); --peers alone: dpgm only")
    p.add_argument("--aim-rounds", type=int, default=AIM_ROUNDS, help="AIM's public cap on its rounds")
    p.add_argument("--no-dpgm", action="store_true", help="time the peers only")
    p.add_argument("--dpgm-options", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config options stated for dpgm, a what-if beside the rules' own choice (model.kind=tree): "
                        "its row is named by them, and the ratios compare dpgm as shipped")
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--resume", action="store_true", help="keep the methods already in --json and skip their runs")
    args = p.parse_args(argv)
    for name in ("rows", "threads", "aim_rounds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kept = json.loads(Path(args.json).read_text()) if args.resume and args.json and Path(args.json).exists() else {}
    methods: dict[str, dict[str, Any]] = kept.get("methods", {})
    for method in [*(() if args.no_dpgm else (dpgm_name(args),)), *args.peers]:
        if method in methods:
            print(f"kept {method} from {args.json}", flush=True)
            continue
        print(f"{method}:", flush=True)
        methods[method] = run_method(method, args)
        print(line(methods[method]), flush=True)
        save(args, methods)
    for key, value in ratios(methods).items():
        print(f"{key}: {value:.3g}" if isinstance(value, float) else f"{key}: {value}")
    save(args, methods)
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
