"""Wall time of `train.py --config NAME` for shipped configs, with default threads and with one.

Each run is a fresh process (imports, data loading, partition, training, release files) in a
temporary runs folder; "default" leaves OMP_NUM_THREADS unset, so dpgm picks the cores available
to the process (dpgm/threads.py); "1" sets OMP_NUM_THREADS=1; ``--busy busy`` times a run beside one
CPU-bound process, another job on the same machine; ``--wait-policies`` compares OMP_WAIT_POLICY
values. The timing table of the results
page (docs/results.md) and the threads check (the default must not be slower than one thread)
come from here.

    python benchmarks/config_timings.py --configs digits transactions msnbc --threads default 1 \\
        --json benchmarks/results/config_timings.json
    python benchmarks/config_timings.py --configs digits_labels digits --threads default 1 --busy quiet busy \\
        --wait-policies unset PASSIVE --repeats 3 --json benchmarks/results/threads_busy.json
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from provenance import write_json

ROOT = Path(__file__).resolve().parents[1]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return time.perf_counter() - start, proc.returncode


def time_run(config: str, threads: str, extra: list[str], generate: int, policy: str = "default"
             ) -> dict[str, object]:
    """One `train.py` run in a fresh process, then (``generate`` > 0) `generate.py --n generate`
    from its release; wall seconds and exit codes. ``policy``: OMP_WAIT_POLICY ("default": the
    caller's environment; "unset": none, OpenMP's own)."""
    env = {key: value for key, value in os.environ.items()
           if key != "OMP_NUM_THREADS" and (policy == "default" or key != "OMP_WAIT_POLICY")}
    if threads != "default":
        env["OMP_NUM_THREADS"] = threads
    if policy not in ("default", "unset"):
        env["OMP_WAIT_POLICY"] = policy
    with tempfile.TemporaryDirectory() as tmp:
        seconds, code = _timed([sys.executable, str(ROOT / "train.py"), "--config", config, "--no-progress",
                                "--set", f"runs_dir={tmp}", "--set", "name=timed", *extra], env)
        out = {"config": config, "threads": threads, "wait_policy": policy, "seconds": seconds, "returncode": code}
        if generate and code == 0:
            out["generate_records"] = generate
            out["generate_seconds"], out["generate_returncode"] = _timed(
                [sys.executable, str(ROOT / "generate.py"), "--run", f"{tmp}/timed", "--n", str(generate),
                 "--out", f"{tmp}/synthetic.txt", "--no-progress"], env)
    return out


def busy() -> subprocess.Popen:
    """One CPU-bound process (a Python loop) beside the timed runs, as another job on the machine."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", nargs="+", default=["digits", "transactions", "retail", "gowalla", "sketch",
                                                    "msnbc", "mnist"])
    p.add_argument("--threads", nargs="+", default=["default"], help="'default' and/or thread counts")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    p.add_argument("--generate", type=int, default=0, metavar="N", help="also time generate.py --n N after each run")
    p.add_argument("--busy", nargs="+", default=["quiet"], choices=["quiet", "busy"],
                   help="time every run alone (quiet) and/or beside one CPU-bound process (busy)")
    p.add_argument("--wait-policies", nargs="+", default=["default"],
                   help="OMP_WAIT_POLICY of the runs: default (as in this environment), unset (OpenMP's own), "
                        "PASSIVE, ACTIVE")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    runs = []
    for config in args.configs:
        for _ in range(args.repeats):  # interleaved: slow drifts of the machine hit every setting alike
            for load, threads, policy in itertools.product(args.busy, args.threads, args.wait_policies):
                other = busy() if load == "busy" else None
                try:
                    runs.append(time_run(config, threads, [x for kv in args.set for x in ("--set", kv)],
                                         args.generate, policy))
                finally:
                    if other is not None:
                        other.kill()
                        other.wait()
                r = runs[-1]
                r["busy"] = load == "busy"
                gen = f", generate {r['generate_seconds']:.1f} s" if "generate_seconds" in r else ""
                print(f"{config:<14} {load:<5} threads {threads:<8} wait {policy:<8} train {r['seconds']:8.1f} s{gen}"
                      f"  (exit {r['returncode']})", flush=True)
                if args.json:
                    write_json(args.json, {"settings": vars(args), "cores": os.cpu_count(), "runs": runs})
    return 0 if all(r["returncode"] == 0 and r.get("generate_returncode", 0) == 0 for r in runs) else 1


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
