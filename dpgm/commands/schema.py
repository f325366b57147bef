"""``dpgm schema``: a draft schema read off a CSV table, for its owner to review before declaring it.

    dpgm schema data.csv --out data.schema.json

The draft's bounds and categories are the data's own (private) values: the first line printed and the draft's
top-level key ``read_off_the_data`` say so. It becomes public only when the owner declares it (data.schema).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from dpgm.data.paths import resolve_data_path
from dpgm.data.table import read_cells
from dpgm.io import atomic_write_text, check_output
from dpgm.tables.draft import WARNING, draft_schema


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description="Draft a schema from a CSV table (plain or .gz; a header of "
                                "column names, missing values as empty fields) for its owner to review. The draft "
                                "is read off the data: not public until the owner declares it.")
    p.add_argument("data", help="the CSV file (relative to the current folder, else to $DPGM_DATA_DIR)")
    p.add_argument("--out", default=None, help="write the draft here (JSON) instead of printing it")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    if args.out is not None:
        check_output(Path(args.out), mkdir=False)
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
