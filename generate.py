#!/usr/bin/env python
"""Release synthetic records from a trained run (pure post-processing of the trained models).

    python generate.py --run runs/digits --n 1000 --out synthetic.csv
    python generate.py --run runs/mnist --n 64 --out grid.png --format png
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dpgm.artifact import FORMATS, check_release, read_summary
from dpgm.cli import run_cli
from dpgm.io import check_output
from dpgm.report import release_markdown


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Draw N synthetic records from a trained DPGM mixture. A part is chosen with "
        "probability proportional to its noisy size, then a record from that part's model. "
        "Writes OUT atomically and OUT.privacy.json (the run's privacy report) beside it. "
        "Reads only the run directory, never the training data.")
    p.add_argument("--run", required=True, metavar="RUN_DIR",
                   help="run directory written by train.py (only its release/ folder is read)")
    p.add_argument("--n", required=True, type=int, help="number of synthetic records")
    p.add_argument("--out", required=True, help="output file")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="csv (header + 0/1 columns), transactions (item ids per line) or png (image grid); "
                   "default from the file extension, else csv")
    p.add_argument("--seed", type=int, default=None, help="fixed sampling seed (default: OS entropy)")
    p.add_argument("--threshold", type=float, default=None,
                   help="output probabilities >= THRESHOLD instead of Bernoulli draws")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--summary", action="store_true",
                   help="print the run's privacy report in plain language, and this release's part, at the end")
    p.add_argument("--mkdir", action="store_true", help="create the output's folder if it does not exist")
    return p.parse_args(argv)


def _format_for(path: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    path = path.removesuffix(".gz")
    if path.endswith(".png"):
        return "png"
    if path.endswith((".txt", ".dat")):
        return "transactions"
    return "csv"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    check_release(args.run)  # paths first: a bad one fails in well under a second, before torch loads
    check_output(Path(args.out), mkdir=args.mkdir)
    summary = read_summary(args.run) if args.summary else None  # before the work: a missing one fails fast
    from dpgm.release import release

    report = release(args.run, args.out, args.n, fmt=_format_for(args.out, args.format), seed=args.seed,
                     threshold=args.threshold, progress=not args.no_progress, mkdir=args.mkdir)
    if "warning" in report:
        print(report["warning"])
    print(f"wrote {args.n} records to {args.out} (report: {args.out}.privacy.json)")
    print(f"privacy: epsilon = {report['epsilon']:.4f}, delta = {report['delta']:.3g}, "
          f"neighbouring = {report['neighbouring']}")
    if summary is not None:
        print("\n" + summary + "\n" + release_markdown(report["release"]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
