"""``dpgm schema``: a draft read off a CSV table for its owner to review, or a schema whose private parts are
measured by DP releases.

    dpgm schema data.csv --out data.schema.json                 # a draft: NOT public
    dpgm schema data.csv --private declared.json --epsilon 0.5 --delta 1e-7 --out data.schema.json

The draft's bounds and categories are the data's own (private) values: the first line printed and the draft's
top-level key ``read_off_the_data`` say so. It becomes public only when the owner declares it (data.schema).
With ``--private``, the parts of the declaration marked ``private`` come from DP releases within (epsilon,
delta), whose privacy report is written beside the schema (``*.privacy.json``; docs/guide/tables.md).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from dpgm.data.paths import resolve_data_path
from dpgm.data.private_schema import release_schema
from dpgm.data.table import read_cells
from dpgm.errors import ConfigError
from dpgm.io import atomic_write_text, check_output
from dpgm.privacy.verdict import judge
from dpgm.tables.draft import WARNING, draft_schema
from dpgm.tables.schema import read_declaration


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description="Draft a schema from a CSV table (plain or .gz; a header of "
                                "column names, missing values as empty fields) for its owner to review: read off "
                                "the data, not public until the owner declares it. With --private, measure the "
                                "parts of a declared schema marked private by DP releases instead.")
    p.add_argument("data", help="the CSV file (relative to the current folder, else to $DPGM_DATA_DIR)")
    p.add_argument("--out", default=None, help="write the schema here (JSON) instead of printing it")
    p.add_argument("--private", default=None, metavar="DECLARED",
                   help="a schema (JSON or YAML) whose lower/upper (with a public range or candidates), categories "
                        "or missing say 'private': those are measured by DP releases (needs --out, --epsilon, "
                        "--delta); the privacy report goes beside --out")
    p.add_argument("--epsilon", type=float, default=None, help="the budget of the private schema's releases")
    p.add_argument("--delta", type=float, default=None, help="their delta (below 1/n for n records)")
    return p.parse_args(argv)


def report_path(out: Path) -> Path:
    """Where the private schema's privacy report goes: beside it, ``NAME.privacy.json``."""
    return out.with_name(f"{out.name.removesuffix('.json')}.privacy.json")


def _private(args: argparse.Namespace) -> int:
    """The declared schema with its private parts measured; the schema and its privacy report written."""
    if args.out is None or args.epsilon is None or args.delta is None:
        raise ConfigError("dpgm schema --private needs --out, --epsilon and --delta")
    out = Path(args.out)
    check_output(report_path(out), mkdir=False, what="the privacy report")
    spec = read_declaration(Path(args.private))
    header, cells = read_cells(resolve_data_path(args.data))
    schema, report = release_schema(spec, header, cells, epsilon=args.epsilon, delta=args.delta,
                                    report=report_path(out).name)
    atomic_write_text(report_path(out), json.dumps(report, indent=2) + "\n")
    atomic_write_text(out, json.dumps(schema, indent=2) + "\n")
    headline = judge(report).headline
    if headline is not None:
        print(headline)
    print(f"wrote the schema of {len(header)} columns to {out}, its private parts measured by DP releases: "
          f"epsilon = {report['epsilon']:.4g} at delta = {report['delta']:g} (report: {report_path(out)})")
    return 0


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    if args.out is not None:
        check_output(Path(args.out), mkdir=False)
    if args.private is not None:
        return _private(args)
    header, cells = read_cells(resolve_data_path(args.data))
    text = json.dumps(draft_schema(header, cells), indent=2) + "\n"
    print(WARNING)
    if args.out is None:
        print(text, end="")
        return 0
    atomic_write_text(Path(args.out), text)
    print(f"wrote the draft of {len(header)} columns to {args.out}: review every bound and category, then "
          f"declare it with --set data.schema={args.out}")
    return 0
