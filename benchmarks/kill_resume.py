#!/usr/bin/env python
"""Kill a training run at random times (SIGTERM and SIGKILL), resume it, compare with an uninterrupted run.

    python benchmarks/kill_resume.py --config configs/msnbc.yaml --kills 3 --jobs 2 --json kill.json

One uninterrupted run sets the reference and the run time T. Then, per signal, ``--kills``
runs of the same config and seed are each killed once at a uniform random time in (0, T),
then resumed (``train.py --resume``; a run killed before its first checkpoint is started
again, as its message says) until it completes. Each must end with the reference's models
(every tensor bit for bit), ledger and report epsilon, and its ledger must count each planned
step exactly once. ``--jobs`` runs that many processes at a time, each with ``--threads``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from provenance import write_json

ROOT = Path(__file__).resolve().parents[1]


def train_cmd(args: argparse.Namespace, runs: Path, name: str) -> list[str]:
    sets = [*args.overrides, f"runs_dir={runs}", f"name={name}", f"seed={args.seed}"]
    return [sys.executable, str(ROOT / "train.py"), "--config", str(args.config), "--no-progress",
            *[x for s in sets for x in ("--set", s)]]


def environment(threads: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def run_to_end(cmd: list[str], env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def killed_run(args: argparse.Namespace, runs: Path, name: str, sig: signal.Signals, at: float) -> dict[str, Any]:
    """Start a run, send ``sig`` after ``at`` seconds, then resume (or restart) until it completes."""
    env = environment(args.threads)
    proc = subprocess.Popen(train_cmd(args, runs, name), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(timeout=at)
        killed = False
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        proc.wait()
        killed = True
    message = (proc.stderr.read() or "").strip().splitlines()
    run_dir = runs / name
    checkpoint = run_dir / "private" / "checkpoint.pt"
    step = int(torch.load(checkpoint, weights_only=True)["stages"]["training"]["step"]) if checkpoint.is_file() else None
    resumes = 0
    while not (run_dir / "release" / "models.pt").is_file():
        cmd = ([sys.executable, str(ROOT / "train.py"), "--resume", str(run_dir), "--no-progress"]
               if checkpoint.is_file() else train_cmd(args, runs, name))
        code, last = run_to_end(cmd, env)
        resumes += 1
        if code != 0:
            return {"signal": sig.name, "at_s": at, "killed": killed, "error": last}
    return {"signal": sig.name, "at_s": round(at, 2), "killed": killed, "exit_code": proc.returncode,
            "message": message[-1] if message else "", "checkpoint_step": step, "resumes": resumes}


def compare(reference: Path, run: Path) -> dict[str, Any]:
    """Bit-identical models, equal ledger and report epsilon, each step counted once."""
    a = torch.load(reference / "release" / "models.pt", weights_only=True)
    b = torch.load(run / "release" / "models.pt", weights_only=True)
    same = all(torch.equal(x[k], y[k]) for x, y in zip(a["state_dicts"], b["state_dicts"], strict=True) for k in x)
    ledger_a, ledger_b = ((p / "release" / "ledger.json").read_text() for p in (reference, run))
    report_a, report_b = (json.loads((p / "release" / "privacy_report.json").read_text()) for p in (reference, run))
    plan = report_b["plan"]
    return {"models_bit_identical": bool(same and torch.equal(a["noisy_sizes"], b["noisy_sizes"])),
            "ledger_equal": ledger_a == ledger_b, "epsilon": report_b["epsilon"],
            "epsilon_equal": report_a["epsilon"] == report_b["epsilon"],
            "steps_taken": plan["steps_taken"], "steps_planned": plan["steps_planned"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "msnbc.yaml")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--kills", type=int, default=3, help="killed runs per signal (SIGTERM, SIGKILL)")
    p.add_argument("--signals", nargs="+", choices=("SIGTERM", "SIGKILL"), default=["SIGTERM", "SIGKILL"],
                   help="the signals that kill (default both)")
    p.add_argument("--seed", type=int, default=0, help="the runs' seed (the same for all)")
    p.add_argument("--jobs", type=int, default=2, help="processes at a time")
    p.add_argument("--threads", type=int, default=1, help="torch/BLAS threads per process")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    args.config = args.config.resolve()
    print(f"{args.jobs} process(es) at a time, {args.threads} thread(s) each; config {args.config}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        start = time.perf_counter()
        code, last = run_to_end(train_cmd(args, runs, "reference"), environment(args.threads))
        wall = time.perf_counter() - start
        if code != 0:
            print(f"reference run failed: {last}")
            return 1
        print(f"reference run: {wall:.1f} s", flush=True)
        rng = np.random.default_rng(args.seed)
        plan = [(sig, float(rng.uniform(0.02, 0.98) * wall), f"{sig.name.lower()}{i}")
                for sig in (getattr(signal, name) for name in args.signals) for i in range(args.kills)]
        with ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(lambda job: killed_run(args, runs, job[2], job[0], job[1]), plan))
        rows = []
        for (_, _, name), outcome in zip(plan, outcomes):
            row = {"run": name, **outcome}
            if "error" not in outcome:
                row.update(compare(runs / "reference", runs / name))
            rows.append(row)
            print(json.dumps(row), flush=True)
    ok = all(r.get("models_bit_identical") and r.get("ledger_equal") and r["steps_taken"] == r["steps_planned"]
             for r in rows)
    print("every resume completed, bit-identical, no step lost or counted twice" if ok else "MISMATCH")
    if args.json:
        write_json(args.json, {"benchmark": "kill and resume", "config": str(args.config),
                               "overrides": args.overrides, "reference_wall_s": wall, "jobs": args.jobs,
                               "threads_per_process": args.threads, "runs": rows, "all_identical": ok})
    return 0 if ok else 1


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
