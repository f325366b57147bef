"""``dpgm sketch`` (``python -m dpgm.sketch``): compressive k-means over data held by several parties.

    dpgm sketch spec --items 64 --seed 7 --size 500 -o spec.json        # coordinator
    dpgm sketch sum --spec spec.json holder1.csv -o holder1.sum.json     # each holder
    dpgm sketch release holder*.sum.json --epsilon 1 -o released/        # aggregator
    dpgm sketch combine a/sketch.json b/sketch.json -o merged.json      # or: each released alone
    dpgm sketch decode released/sketch.json --k 4 -o centres.json       # anyone
    dpgm sketch assign centres.json holder1.csv -o holder1.parts         # each holder
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from dpgm.errors import ConfigError
from dpgm.sketch import commands

PROG = "python -m dpgm.sketch"

EPILOG = """workflow: 'spec' fixes the public operator (seed, scale, item universe); each holder runs
'sum' on its own file (an EXACT sum: private, owner-only, never published); the aggregator runs
'release' on all sums: they are merged and the noise is added ONCE, with one ledger and one
privacy report (add/remove neighbours), its noise always from fresh entropy (no seed: a seeded
noise could be replayed and subtracted); 'decode' and 'assign' are post-processing. Without a
trusted aggregator, each holder runs 'release' on its own sum and 'combine' merges the releases
(more noise: one draw per holder). Sums or releases made with different specs are refused
(exit 2). Paper: Schellekens et al., SPARS 2019 (eq. 2-3, Fig. 4)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one line (``error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message}")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return int(text)


def _dims(text: str) -> int | None:
    return None if text.lower() == "none" else _count(text)


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="the holder's file: binary CSV with a header, or transactions (one record a line, "
                                "0-based item ids)")
    p.add_argument("--format", choices=["csv", "transactions"], help="default: csv for *.csv, else transactions")
    p.add_argument("--label-column", help="csv: a label column to leave out of the records")


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="DP compressive k-means over data held by several "
                "parties: private sketch sums, merged and released once, decoded by CL-OMPR.", epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("spec", help="write the public operator parameters every holder must use")
    s.add_argument("--items", type=int, required=True, help="item universe: columns of every holder's records")
    s.add_argument("--seed", type=int, required=True, help="seed of the public frequencies, dithers and projection")
    s.add_argument("--size", type=int, default=1000, help="sketch size m (default 1000)")
    s.add_argument("--sigma2", type=_positive, help="frequency scale sigma^2 (default 1/4)")
    s.add_argument("--signature", choices=["exp", "quantised"], default="exp")
    s.add_argument("--measurements", type=int, help="r: sketch entries per record (default: all m)")
    s.add_argument("--frequencies", choices=["adapted_radius", "gaussian"], default="adapted_radius")
    s.add_argument("--projection", type=_dims, default=10,
                   help="decode in this many random public dimensions (none: never)")
    s.add_argument("-o", "--output", required=True)
    s = sub.add_parser("sum", help="a holder's EXACT sketch sum of its own file (private, owner-only)")
    s.add_argument("--spec", required=True, help="the spec file")
    _data_args(s)
    s.add_argument("--seed", type=int, help="seed of the random masks (r < m); default: fresh entropy")
    s.add_argument("-o", "--output", required=True)
    s = sub.add_parser("release", help="merge holders' sums and add the noise once: sketch, ledger, report")
    s.add_argument("sums", nargs="+", help="sum files, one per holder")
    s.add_argument("--spec", help="refuse sums not made with this spec (default: the first sum's)")
    s.add_argument("--mechanism", choices=["gaussian", "laplace"], default="gaussian")
    level = s.add_mutually_exclusive_group(required=True)
    level.add_argument("--epsilon", type=_positive, help="target epsilon of the release (noise calibrated to it)")
    level.add_argument("--noise-multiplier", type=_positive, help="Gaussian sigma (Laplace: epsilon = 1/sigma)")
    s.add_argument("--delta", type=_positive, default=1e-6, help="delta (default 1e-6; take it below 1/n)")
    s.add_argument("--budget", type=_positive, help="refuse a release above this epsilon")
    # no --seed: the noise always comes from fresh entropy, else a seeded release of an all-zero sum replays it
    s.add_argument("-o", "--output", required=True, help="folder for sketch.json, ledger.json, privacy_report.json")
    s = sub.add_parser("combine", help="merge releases that holders made each with its own noise (post-processing)")
    s.add_argument("sketches", nargs="+", help="released sketch.json files, one per holder, same spec")
    s.add_argument("-o", "--output", required=True)
    s = sub.add_parser("decode", help="centres from a released sketch (CL-OMPR; post-processing)")
    s.add_argument("sketch", help="released sketch.json")
    s.add_argument("--k", type=_count, required=True, help="number of centres")
    s.add_argument("--decodes", type=_count, default=3, help="CL-OMPR runs; the smallest residual wins")
    s.add_argument("--seed", type=int, help="seed of the decoder's start points")
    s.add_argument("-o", "--output", required=True)
    s = sub.add_parser("assign", help="the part (nearest centre) of each of a holder's records (private)")
    s.add_argument("centres", help="centres file from 'decode'")
    _data_args(s)
    s.add_argument("-o", "--output", required=True)
    return p


COMMANDS = {"spec": commands.cmd_spec, "sum": commands.cmd_sum, "release": commands.cmd_release,
            "combine": commands.cmd_combine, "decode": commands.cmd_decode, "assign": commands.cmd_assign}


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    args = parser(prog).parse_args(argv)
    print(COMMANDS[args.command](args))
    return 0

