"""``dpgm train`` (``python train.py``): DP partition, one generative model per part by DP-SGD,
privacy report.

    dpgm train --config digits
    dpgm train --config configs/mnist.yaml --set training.epochs=5 --set name=mnist5
    dpgm train --resume runs/mnist
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from dpgm.config import load_config
from dpgm.privacy import collective
from dpgm.privacy.verdict import judge


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Train a differentially private mixture of generative models (DPGM, Alg. 1) "
        "and write runs/<name>/ with the models, the ledger and privacy_report.json.",
        epilog="Options and their meaning: dpgm config (or python -m dpgm.config)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="YAML config file, or the name of a shipped config (digits, mnist, csv, ...)")
    src.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run from its last checkpoint")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set training.epochs=5 (repeatable)")
    p.add_argument("--download", action="store_true", help="fetch MNIST into the data directory if missing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for torch and BLAS (default: the cores available to this process, less those "
                        "other running processes use)")
    p.add_argument("--keep-private", action="store_true",
                   help="keep runs/<name>/private/ (checkpoint, part assignments) after the run completes")
    p.add_argument("--summary", action="store_true",
                   help="print the privacy report in plain language (privacy_report.md) at the end")
    p.add_argument("--nonprivate-diagnostics", action="store_true",
                   help="show the mean training loss on the private batches and each stage's wall seconds: "
                   "the run is then NOT differentially private, and its reports say so")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    if args.resume and args.overrides:
        print("error: --set cannot change a run being resumed", file=sys.stderr)
        return 2
    with collective.launched():  # torchrun --nproc-per-node N train.py ...: one rank of N (docs/guide/distributed.md)
        run_dir, report = _run(args)
        if collective.rank() != 0:
            return 0
    _print(args, run_dir, report)
    return 0


def _run(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The run the arguments ask for: a fresh one, or the resumed one."""
    if args.resume:
        from dpgm.pipeline.run import resume  # torch loads only now

        return resume(args.resume, progress=not args.no_progress)
    flags = {f"threads={args.threads}": args.threads is not None, "data.download=true": args.download,
             "keep_private=true": args.keep_private, "nonprivate_diagnostics=true": args.nonprivate_diagnostics}
    cfg = load_config(args.config, list(args.overrides) + [flag for flag, on in flags.items() if on])  # checked first
    from dpgm.pipeline.run import train  # the run, not the Python API: no scikit-learn on the command's path

    return train(cfg, progress=not args.no_progress)


def _print(args: argparse.Namespace, run_dir: Any, report: dict[str, Any]) -> None:
    """The verdict first when there is one, where the release is, and its epsilon (rank 0 of a
    distributed run only)."""
    verdict = judge(report)
    if verdict.headline is not None:
        print(verdict.headline)
    print(f"release ({verdict.label}): {run_dir}/release; privacy report for people: "
          f"{run_dir}/release/privacy_report.md")
    bound = f" ({report['dependent_bound']} bound for dependent mechanisms)" if report["dependent_bound"] else ""
    print(f"privacy: epsilon = {report['epsilon']:.4f}, delta = {report['delta']:.3g}, "
          f"neighbouring = {report['neighbouring']}{bound}")
    print(json.dumps(report["stage_epsilons"]))
    if "nonprivate_seconds" in report:  # --nonprivate-diagnostics only: they grow with n
        print(f"wall seconds per stage (NOT private): {json.dumps(report['nonprivate_seconds'])}")
    if args.summary:
        from dpgm.artifact import read_summary

        print("\n" + read_summary(run_dir), end="")
