"""``python -m dpgm.audit`` and ``dpgm audit``: the audit's command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from dpgm.audit.plan import SCORES, AuditPlan
from dpgm.audit.releases import RELEASES, ReleaseAudit, audit_release
from dpgm.audit.run import run_audit, summary
from dpgm.config import config_from_dict, load_config
from dpgm.data import load_dataset
from dpgm.io import atomic_write_json
from dpgm.pipeline.plan import run_delta, run_magnitude
from dpgm.threads import set_threads

#: The audit plan's options on the command line: flag, type and help (the default is AuditPlan's).
PLAN_OPTIONS = (
    ("--guesses", int, ("guesses, half 'in' and half 'out' (default: the fewest whose cap is the claim + margin, "
                        "at least --min-guesses)")),
    ("--canaries", int, "m: number of canaries (default: enough that every guess can be right)"),
    ("--margin", float, "the cap must reach claim + margin (default 1)"),
    ("--min-guesses", int, f"fewest guesses (default {AuditPlan.min_guesses})"),
    ("--confidence", float, "confidence level (default 0.95)"),
    ("--score-draws", int, "reparameterisation draws per likelihood score (VAE; default 16)"),
)


def _field(flag: str) -> str:
    """The AuditPlan field of a command-line flag: --min-guesses -> min_guesses."""
    return flag.removeprefix("--").replace("-", "_")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpgm.audit",
        description=(
            "Empirical privacy audit of dpgm's DP-SGD training in ONE run (Steinke, Nasr and "
            "Jagielski, NeurIPS 2023). Inserts m canaries (each a base record plus an item only "
            "it has), each included with probability 1/2, trains one model (k = 1 part) through "
            "the real DP-SGD path, scores every canary (default: how far the weights reading its "
            "item moved from their initial values), guesses 'in' for the highest and 'out' for "
            "the lowest scores, and prints the accountant's claimed epsilon beside the audit's "
            "lower bound (Thm 5.2) at the run's delta and its cap, the bound if every guess were "
            "right. The number of guesses follows the claim so that the cap clears it by "
            "--margin. A lower bound above the claim means the implementation leaks more than "
            "it claims."
        ),
        epilog="Example: python -m dpgm.audit --config configs/digits.yaml "
        "--set training.epochs=5 --json audit.json",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="run config (YAML); its data, model, training and privacy.delta "
        "are used (default: the built-in defaults, digits data)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. training.epochs=5 (repeatable)",
    )
    for flag, kind, text in PLAN_OPTIONS:
        p.add_argument(flag, type=kind, default=getattr(AuditPlan, _field(flag)), help=text)
    p.add_argument("--score", choices=SCORES, default=AuditPlan.score,
                   help="gradients: Dirac canary gradients read off every step's released gradient (white-box); "
                   "weights: movement of the weights reading a record canary's item (white-box); likelihood: "
                   "log p(canary) - log p(canary without it) (black-box); auto (default): gradients for a VAE, "
                   "likelihood for an RBM")
    releases = "; ".join(f"{name}: {RELEASES.entry(name).doc}" for name in RELEASES.names())
    p.add_argument("--release", choices=RELEASES.names(),
                   help=f"audit a statistics release of the generic pipeline instead of DP-SGD, by a distinguishing "
                   f"test on its output over --trials runs on the config's records and on them plus one canary "
                   f"({releases})")
    p.add_argument("--trials", type=int, default=ReleaseAudit.trials,
                   help=f"--release: runs on each neighbour (default {ReleaseAudit.trials})")
    p.add_argument("--epsilon", type=float, default=ReleaseAudit.epsilon,
                   help=f"--release: the release's own epsilon, its noise calibrated to it alone "
                   f"(default {ReleaseAudit.epsilon:g})")
    p.add_argument("--canary-items", type=int, default=ReleaseAudit.length,
                   help=f"--release: the canary record's items, the records' clip (default {ReleaseAudit.length})")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the auditor's generator (default 0)"
    )
    p.add_argument("--noise-scale", type=float, default=1.0, metavar="F",
                   help="TEST SWITCH: every noise of the audited run is multiplied by F while its claim stays the "
                   "plan's; the run is then NOT differentially private as claimed and the audit should refute it "
                   "(default 1: the run as planned)")
    p.add_argument("--leak", action="store_true", help="TEST SWITCH: the same as --noise-scale 0 (the noise off)")
    p.add_argument(
        "--threads", type=int,
        help="torch and BLAS threads (default: the cores available, less those other running processes use)"
    )
    p.add_argument("--json", type=Path, help="write the full report to this JSON file")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = (
        load_config(args.config, args.overrides)
        if args.config
        else config_from_dict({}, args.overrides)
    )
    noise_scale = 0.0 if args.leak else args.noise_scale
    set_threads(args.threads)
    if args.release:
        base = load_dataset(cfg.data)
        audit = ReleaseAudit(release=args.release, trials=args.trials, epsilon=args.epsilon,
                             length=args.canary_items, confidence=args.confidence, noise_scale=noise_scale)
        report = audit_release(base, audit, delta=run_delta(cfg, run_magnitude(cfg, base)),
                               progress=not args.no_progress)
    else:
        fields = [_field(flag) for flag, _, _ in PLAN_OPTIONS] + ["score"]
        plan = AuditPlan(**{name: getattr(args, name) for name in fields}, noise_scale=noise_scale)
        report = run_audit(cfg, plan, seed=args.seed, progress=not args.no_progress)
    print(summary(report))
    if args.json:
        atomic_write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0
