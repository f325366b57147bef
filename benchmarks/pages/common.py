"""What every section uses: the results' JSON, its provenance line, and markdown tables and numbers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: Display names of the methods the benchmarks' JSON names.
METHODS = {"dpgm (generic)": "dpgm (generic)", "aim": "AIM", "mst": "MST",
           "mwem_pgm": "MWEM+PGM", "mwem": "MWEM", "marginals": "marginals", "dpctgan": "DP-CTGAN",
           "patectgan": "PATE-CTGAN"}


@cache
def load(name: str) -> dict[str, Any]:
    """One benchmark's JSON, by its name under benchmarks/results/: parsed once, shared by every section that reads
    it (its rows and its provenance line), so never changed by a reader."""
    return json.loads((RESULTS / name).read_text())


def lodo_rows(name: str) -> list[dict[str, Any]]:
    """A leave-one-dataset-out file's rows as ``rules_lodo.read_rows`` gives them, from the shared parse."""
    import rules_lodo

    return rules_lodo.rows_of(load(name))


def load_if_there(name: str) -> dict[str, Any] | None:
    """A benchmark's JSON, or None where it was not run (its section is then left out)."""
    return load(name) if (RESULTS / name).is_file() else None


def source(*names: str) -> str:
    """'Source: `benchmarks/results/NAME` (commit, date)' for each file, from its provenance."""
    parts = []
    for name in names:
        prov = load(name).get("provenance") or {}
        about = [f"commit {prov['commit'][:7]}" + " with local changes" * bool(prov.get("dirty"))
                 ] if prov.get("commit") else []
        about += [prov["date"][:10]] if prov.get("date") else []
        parts.append(f"`benchmarks/results/{name}`" + (f" ({', '.join(about)})" if about else ""))
    return "Source: " + "; ".join(parts) + "."


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def num(value: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant digits, or n/a."""
    return "n/a" if value is None else f"{value:.{digits}g}"


def seconds(value: float) -> str:
    """Whole seconds from 10 s on, two significant digits below."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def mean_sd(values: Sequence[float], digits: int = 3) -> str:
    """'mean ± sd' (sample sd) of several values, the value alone for one."""
    if len(values) == 1:
        return num(values[0], digits)
    return f"{num(float(np.mean(values)), digits)} ± {num(float(np.std(values, ddof=1)), 2)}"


def print_sections(doc: str | None, sections: Callable[[], Iterable[str]], argv: Sequence[str] | None = None) -> int:
    """A page module run as a script: its sections of the results page, as markdown on stdout (``--help``: ``doc``)."""
    argparse.ArgumentParser(description=doc).parse_args(argv)
    sys.stdout.write("\n\n".join(filter(None, sections())) + "\n")
    return 0

