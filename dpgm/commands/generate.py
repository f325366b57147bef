"""``dpgm generate`` (``python generate.py``): release synthetic records from a trained run
(pure post-processing of the trained models).

    dpgm generate --run runs/digits --n 1000 --out synthetic.csv
    dpgm generate --run runs/mnist --n 64 --out grid.png --format png
    dpgm generate --run runs/digits_labels --per-label 10 --labels 0,3,7 --out grid.png
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from dpgm.artifact import (
    FORMATS,
    MAX_PNG_IMAGES,
    MAX_RECORDS,
    check_record_limit,
    check_release,
    read_summary,
)
from dpgm.errors import DpgmError
from dpgm.io import check_output
from dpgm.privacy.verdict import judge
from dpgm.report import release_markdown


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Draw N synthetic records from a trained DPGM mixture. A part is chosen with "
        "probability proportional to its noisy size, then a record from that part's model. "
        "Writes OUT atomically and OUT.privacy.json (the run's privacy report) beside it. "
        "Reads only the run directory, never the training data.")
    p.add_argument("--run", required=True, metavar="RUN_DIR",
                   help="run directory written by dpgm train (only its release/ folder is read)")
    p.add_argument("--n", type=int, default=None,
                   help=f"number of synthetic records (or --per-label); at most {MAX_RECORDS:,} "
                   "in one release (ten times the largest shipped data set: draw more with other "
                   f"seeds) and {MAX_PNG_IMAGES:,} in a png grid. The output's least size must fit "
                   "the free space of its folder")
    p.add_argument("--out", required=True, help="output file")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="csv (header + 0/1 columns, then the label column when the run partitioned by label), "
                   "transactions (item ids per line) or png (image grid; one row per label when the run "
                   "partitioned by label); default from the file extension, else csv")
    p.add_argument("--labels", default=None, metavar="L1,L2,...",
                   help="runs partitioned by label: only these labels, in proportion to the noisy label "
                   "histogram renormalised over them")
    p.add_argument("--per-label", type=int, default=None, metavar="N",
                   help="runs partitioned by label: N records of each label (of --labels, else of every "
                   "declared label) instead of --n in proportion to the noisy label histogram; the "
                   "limits of --n apply to the total")
    p.add_argument("--seed", type=int, default=None, help="fixed sampling seed (default: OS entropy)")
    p.add_argument("--threshold", type=float, default=None,
                   help="output probabilities >= THRESHOLD instead of Bernoulli draws")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--summary", action="store_true",
                   help="print the run's privacy report in plain language, and this release's part, at the end")
    p.add_argument("--mkdir", action="store_true", help="create the output's folder if it does not exist")
    return p.parse_args(argv)


def _label_list(text: str | None) -> list[int] | None:
    """``--labels 0,3,7`` as [0, 3, 7] (None when not given); anything else is a one-line error."""
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise DpgmError(f"--labels: expected comma-separated integer labels such as 0,3,7, got {text!r}") from None


def _format_for(path: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    path = path.removesuffix(".gz")
    if path.endswith(".png"):
        return "png"
    if path.endswith((".txt", ".dat")):
        return "transactions"
    return "csv"


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    labels = _label_list(args.labels)
    check_record_limit(args.n, "--n")  # before torch loads; release() checks the total too
    check_record_limit(args.per_label, "--per-label")
    check_release(args.run)  # paths first: a bad one fails in well under a second, before torch loads
    check_output(Path(args.out), mkdir=args.mkdir)
    summary = read_summary(args.run) if args.summary else None  # before the work: a missing one fails fast
    from dpgm.release import release  # torch loads only now (not the Python API: no scikit-learn)

    report = release(args.run, args.out, args.n, fmt=_format_for(args.out, args.format), seed=args.seed,
                     threshold=args.threshold, labels=labels, per_label=args.per_label,
                     progress=not args.no_progress, mkdir=args.mkdir)
    headline = judge(report).headline  # the run's verdict: not private and why, or weak
    if headline is not None:
        print(headline)
    print(f"wrote {report['release']['records']} records to {args.out} (report: {args.out}.privacy.json)")
    print(f"privacy: epsilon = {report['epsilon']:.4f}, delta = {report['delta']:.3g}, "
          f"neighbouring = {report['neighbouring']}")
    if summary is not None:
        print("\n" + summary + "\n" + release_markdown(report["release"]), end="")
    return 0

