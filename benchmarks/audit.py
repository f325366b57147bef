"""Privacy audits of dpgm on the small shipped configs: each run honestly, with its noise secretly cut
tenfold and with it off, its claim unchanged (``python -m dpgm.audit --noise-scale``).

DP-SGD by the one-run audit (Steinke, Nasr and Jagielski 2023, Thm 5.2) with gradient canaries read
off every step's released gradient; the generic pipeline's statistics releases (the part means, the
length histogram, every pair's counts) by a distinguishing test over many runs on two neighbours.
A weakened run must be refuted (lower bound above the claim), an honest one must not. Settings:
  digits         configs/digits.yaml (200 steps, DPNorm clipping, Adam; claim 5.71);
  digits_sgd     the same with plain SGD;
  digits_labels  configs/digits_labels.yaml (target epsilon 1: the training noise alone);
  csv            configs/csv.yaml (rules: public on examples/survey.csv; target epsilon 1), its model
                 stated as the VAE (the rules fit a tree there: no DP-SGD to audit);
  sketch         configs/sketch.yaml (its training section is digits': another draw of it);
  part_means, record_lengths, every_pair: the release at its own epsilon 1 on 300 digits;
  mnist_5k       opt-in: 5,000 MNIST records, q = 0.02, 10 epochs (needs $DPGM_DATA_DIR/mnist).
Exits 1 when a weakened run is not caught or an honest bound exceeds its claim (after writing JSON).

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
from dpgm.audit.releases import ReleaseAudit, audit_release
from dpgm.audit.run import run_audit, summary
from dpgm.config import load_config
from dpgm.data import load_dataset
from dpgm.errors import DataError
from dpgm.pipeline.plan import run_delta, run_magnitude

ROOT = Path(__file__).resolve().parent.parent
#: name -> (config file under configs/, overrides, the release audited or None for DP-SGD); the auditor's seed is
#: --seed + its position.
SETTINGS = {
    "digits": ("digits.yaml", [], None),
    "digits_sgd": ("digits.yaml", ["training.optimizer=sgd"], None),
    "digits_labels": ("digits_labels.yaml", [], None),
    "csv": ("csv.yaml", [f"data.path={ROOT / 'examples' / 'survey.csv'}", "model.kind=vae"], None),
    "sketch": ("sketch.yaml", [], None),
    "part_means": ("digits.yaml", ["data.limit=300"], "part_means"),
    "record_lengths": ("digits.yaml", ["data.limit=300"], "record_lengths"),
    "every_pair": ("digits.yaml", ["data.limit=300"], "every_pair"),
    "mnist_5k": ("mnist.yaml", ["data.limit=5000", "training.sampling_rate=0.02", "training.epochs=10",
                                "training.learning_rate=0.005"], None),
}
DEFAULT_SETTINGS = [name for name in SETTINGS if name != "mnist_5k"]
#: The noise scales every setting runs at: honest, cut tenfold, off.
SCALES = (1.0, 0.1, 0.0)


def audit_setting(name: str, plan: AuditPlan, trials: int, seed: int, extra: list[str],
                  scales: tuple[float, ...] = SCALES) -> list[dict[str, Any]]:
    """One row per noise scale of one setting, with its verdict (none: no data)."""
    config_file, overrides, release = SETTINGS[name]
    overrides = [*overrides, *extra]
    cfg = load_config(ROOT / "configs" / config_file, overrides)
    try:
        data = load_dataset(cfg.data)
    except DataError as exc:
        print(f"[{name}] skipped: {exc}")
        return []
    rows = []
    for scale in scales:
        if release is None:
            report = run_audit(cfg, dataclasses.replace(plan, noise_scale=scale), seed=seed, data=data,
                               progress=sys.stderr.isatty())
            right = f"{report['correct']}/{report['guesses']}"
        else:
            audit = ReleaseAudit(release=release, trials=trials, noise_scale=scale, confidence=plan.confidence)
            report = audit_release(data, audit, delta=run_delta(cfg, run_magnitude(cfg, data)),
                                   progress=sys.stderr.isatty())
            right = f"{2 * report['counted'] - report['false_positives'] - report['false_negatives']}/" \
                    f"{2 * report['counted']}"
        print(f"[{name}, noise x {scale:g}]  ({report['wall_s']:.1f} s)\n{summary(report)}", flush=True)
        verdict = report["refuted"] if scale < 1 else not report["refuted"]
        rows.append({"setting": name, "config_file": config_file, "overrides": overrides, "seed": seed,
                     "audited": report["audited"], "noise_scale": scale, "claimed_epsilon": report["claimed_epsilon"],
                     "true_epsilon": report.get("true_epsilon", report["claimed_epsilon"]),
                     "lower_bound": report["lower_bound"], "epsilon_cap": report["epsilon_cap"], "right": right,
                     "seconds": report["wall_s"], "as_expected": bool(verdict), "report": report})
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| setting | audited | noise | claim | true epsilon | lower bound (cap) | right | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['audited']} | x{r['noise_scale']:g} | {r['claimed_epsilon']:.3g} | "
                     f"{r['true_epsilon']:.3g} | {r['lower_bound']:.3g} ({r['epsilon_cap']:.3g}) | {r['right']} | "
                     f"{r['seconds']:.1f} |")
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
    ap.add_argument("--trials", type=int, default=2000, help="runs on each neighbour of a release's audit")
    ap.add_argument("--scales", type=float, nargs="+", default=list(SCALES),
                    help="noise scales each setting runs at (default: 1, 0.1 and 0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    for scale in args.scales:  # a release audit's settings, checked before any setting runs
        ReleaseAudit(trials=args.trials, noise_scale=scale, confidence=args.confidence).validate()

    torch.set_num_threads(args.threads)
    omp = os.environ.get("OMP_NUM_THREADS")
    print(f"torch threads: {torch.get_num_threads()} (OMP_NUM_THREADS={omp})")
    plan = AuditPlan(confidence=args.confidence, margin=args.margin, min_guesses=args.min_guesses)
    rows = []
    for name in args.settings:
        rows += audit_setting(name, plan, args.trials, args.seed + list(SETTINGS).index(name), args.overrides,
                              tuple(args.scales))
    print(_table(rows))
    failed = [f"{r['setting']} x{r['noise_scale']:g}" for r in rows if not r["as_expected"]]
    print("every weakened run refuted, no honest bound above its claim" if not failed
          else f"FAILED: {', '.join(failed)}")
    if args.json:
        write_json(args.json, {
            "benchmark": "privacy audits: one-run (DP-SGD, gradient canaries) and distinguishing tests (releases)",
            "plan": {"margin": args.margin, "min_guesses": args.min_guesses, "confidence": args.confidence,
                     "score": plan.score, "trials": args.trials, "noise_scales": list(args.scales)},
            "failed": failed,
            "results": rows,
        })
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
