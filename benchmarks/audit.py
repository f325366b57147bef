"""One-run privacy audit (Steinke, Nasr and Jagielski 2023) of dpgm's DP-SGD on the small shipped
configs, each trained once with its noise and once with the noise off.

The noise-off run (dpgm.audit's ``leak`` test switch) claims the same epsilon as the plan, so
its lower bound must exceed the claim: the audit catches it. The noise-on lower bound must
never exceed the claim. The guesses follow the claim (dpgm.audit.bounds.audit_size):
their cap, the bound if every guess were right, is at least claim + margin. Settings:
  digits         configs/digits.yaml (200 steps, DPNorm clipping; claim 5.71);
  digits_labels  configs/digits_labels.yaml (target epsilon 1: the training noise alone);
  csv            configs/csv.yaml (rules: public on examples/survey.csv; target epsilon 1);
  sketch         configs/sketch.yaml (its training section is digits': another draw of it);
  digits_eps1_100  opt-in: digits at target epsilon 1 for 100 steps;
  mnist_5k       opt-in: 5,000 MNIST records, q = 0.02, 10 epochs (needs $DPGM_DATA_DIR/mnist).
Only the training stage is audited (one part; no partition, no noisy part means); a target
epsilon calibrates the training noise alone, so every claim is the epsilon of the run audited.
Exits 1 when a run is not caught or a noise-on bound exceeds its claim (after writing JSON).

    OMP_NUM_THREADS=1 python benchmarks/audit.py --threads 1 --json benchmarks/results/audit.json
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from provenance import write_json

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP threads hurt a shared machine

import torch

from dpgm.audit.plan import AuditPlan
from dpgm.audit.run import run_audit, summary
from dpgm.config import load_config
from dpgm.data import load_dataset
from dpgm.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
#: name -> (config file under configs/, overrides); the auditor's seed is --seed + its position.
SETTINGS = {
    "digits": ("digits.yaml", []),
    "digits_labels": ("digits_labels.yaml", []),
    "csv": ("csv.yaml", [f"data.path={ROOT / 'examples' / 'survey.csv'}"]),
    "sketch": ("sketch.yaml", []),
    "digits_eps1_100": ("digits.yaml", ["privacy.target_epsilon=1.0", "training.epochs=5"]),
    "mnist_5k": (
        "mnist.yaml",
        [
            "data.limit=5000",
            "training.sampling_rate=0.02",
            "training.epochs=10",
            "training.learning_rate=0.005",
        ],
    ),
}
DEFAULT_SETTINGS = ["digits", "digits_labels", "csv", "sketch"]


def audit_setting(name: str, plan: AuditPlan, seed: int, extra: list[str]) -> dict[str, Any] | None:
    """The noise-on and noise-off audits of one setting and their verdicts (None: no data)."""
    config_file, overrides = SETTINGS[name]
    overrides = [*overrides, *extra]
    cfg = load_config(ROOT / "configs" / config_file, overrides)
    try:
        data = load_dataset(cfg.data)
    except DataError as exc:
        print(f"[{name}] skipped: {exc}")
        return None
    runs = {}
    for label, leak in (("noise_on", False), ("noise_off", True)):
        run_plan = dataclasses.replace(plan, leak=leak)
        report = run_audit(cfg, run_plan, seed=seed, data=data, progress=sys.stderr.isatty())
        print(f"[{name}, {label}]  ({report['wall_s']:.1f} s)\n{summary(report)}", flush=True)
        runs[label] = report
    on, off = runs["noise_on"], runs["noise_off"]
    claim = on["claimed_epsilon"]
    return {
        "setting": name,
        "config_file": config_file,
        "overrides": overrides,
        "seed": seed,
        "claimed_epsilon": claim,
        "delta": on["delta"],
        "epsilon_cap": on["epsilon_cap"],
        "guesses": on["guesses"],
        "canaries": on["canaries"],
        "steps": on["steps"],
        "score": on["score"],
        "lower_bound_noise_on": on["epsilon_lower_bound"],
        "lower_bound_noise_off": off["epsilon_lower_bound"],
        "correct_noise_on": on["correct"],
        "correct_noise_off": off["correct"],
        "seconds_noise_on": on["wall_s"],
        "seconds_noise_off": off["wall_s"],
        "cap_above_claim": on["epsilon_cap"] > claim,
        "noise_off_caught": off["epsilon_lower_bound"] > off["claimed_epsilon"],
        "noise_on_within_claim": on["epsilon_lower_bound"] <= claim,
        "runs": runs,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    header = "| config | claim | cap | guesses | lower bound, noise on | lower bound, noise off |"
    lines = [f"{header} seconds |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        seconds = r["seconds_noise_on"] + r["seconds_noise_off"]
        lines.append(
            f"| {r['setting']} | {r['claimed_epsilon']:.2f} | {r['epsilon_cap']:.2f} | "
            f"{r['guesses']} | {r['lower_bound_noise_on']:.2f} "
            f"({r['correct_noise_on']}/{r['guesses']}) | {r['lower_bound_noise_off']:.2f} "
            f"({r['correct_noise_off']}/{r['guesses']}) | {seconds:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=DEFAULT_SETTINGS)
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra config override for every setting (repeatable)",
    )
    ap.add_argument("--margin", type=float, default=AuditPlan.margin, help="cap >= claim + this")
    ap.add_argument("--min-guesses", type=int, default=AuditPlan.min_guesses)
    ap.add_argument("--confidence", type=float, default=AuditPlan.confidence)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    omp = os.environ.get("OMP_NUM_THREADS")
    print(f"torch threads: {torch.get_num_threads()} (OMP_NUM_THREADS={omp})")
    plan = AuditPlan(confidence=args.confidence, margin=args.margin, min_guesses=args.min_guesses)
    rows = []
    for name in args.settings:
        seed = args.seed + list(SETTINGS).index(name)
        row = audit_setting(name, plan, seed, args.overrides)
        if row is not None:
            rows.append(row)
    print(_table(rows))
    failed = [
        f"{r['setting']}: {flag}"
        for r in rows
        for flag in ("cap_above_claim", "noise_off_caught", "noise_on_within_claim")
        if not r[flag]
    ]
    print(
        "every noise-off run caught, no noise-on bound above its claim"
        if not failed
        else f"FAILED: {', '.join(failed)}"
    )
    if args.json:
        write_json(
            args.json,
            {
                "benchmark": "one-run privacy audit (Steinke, Nasr and Jagielski 2023, Thm 5.2)",
                "plan": {
                    "margin": args.margin,
                    "min_guesses": args.min_guesses,
                    "confidence": args.confidence,
                    "score": plan.score,
                },
                "failed": failed,
                "results": rows,
            },
        )
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
