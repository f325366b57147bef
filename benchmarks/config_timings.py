"""Wall time of `train.py --config NAME` for shipped configs, with default threads and with one.

Each run is a fresh process (imports, data loading, partition, training, release files) in a
temporary runs folder; "default" leaves OMP_NUM_THREADS unset, so dpgm picks the cores available
to the process (dpgm/threads.py); "1" sets OMP_NUM_THREADS=1. The timing table of the results
page (docs/results.md) and the threads check (the default must not be slower than one thread)
come from here.

    python benchmarks/config_timings.py --configs digits transactions msnbc --threads default 1 \\
        --json benchmarks/results/config_timings.json
"""

from __future__ import annotations

import argparse
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


def time_run(config: str, threads: str, extra: list[str], generate: int) -> dict[str, object]:
    """One `train.py` run in a fresh process, then (``generate`` > 0) `generate.py --n generate`
    from its release; wall seconds and exit codes."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if threads != "default":
        env["OMP_NUM_THREADS"] = threads
    with tempfile.TemporaryDirectory() as tmp:
        seconds, code = _timed([sys.executable, str(ROOT / "train.py"), "--config", config, "--no-progress",
                                "--set", f"runs_dir={tmp}", "--set", "name=timed", *extra], env)
        out = {"config": config, "threads": threads, "seconds": seconds, "returncode": code}
        if generate and code == 0:
            out["generate_records"] = generate
            out["generate_seconds"], out["generate_returncode"] = _timed(
                [sys.executable, str(ROOT / "generate.py"), "--run", f"{tmp}/timed", "--n", str(generate),
                 "--out", f"{tmp}/synthetic.txt", "--no-progress"], env)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", nargs="+", default=["digits", "transactions", "retail", "gowalla", "sketch",
                                                    "msnbc", "mnist"])
    p.add_argument("--threads", nargs="+", default=["default"], help="'default' and/or thread counts")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    p.add_argument("--generate", type=int, default=0, metavar="N", help="also time generate.py --n N after each run")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    runs = []
    for config in args.configs:
        for _ in range(args.repeats):
            for threads in args.threads:
                runs.append(time_run(config, threads, [x for kv in args.set for x in ("--set", kv)], args.generate))
                r = runs[-1]
                gen = f", generate {r['generate_seconds']:.1f} s" if "generate_seconds" in r else ""
                print(f"{config:<14} threads {threads:<8} train {r['seconds']:8.1f} s{gen}  (exit {r['returncode']})",
                      flush=True)
                if args.json:
                    write_json(args.json, {"settings": vars(args), "cores": os.cpu_count(), "runs": runs})
    return 0 if all(r["returncode"] == 0 and r.get("generate_returncode", 0) == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
