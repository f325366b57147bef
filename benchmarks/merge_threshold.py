"""Which ``MERGE_BELOW``, ``LENGTHS_SCALE`` or ``ALL_PAIRS_SCALE`` (dpgm/rules.py): a threshold below which the
partition merges its groups into one (``--gate merge``, on the items' measured dependence), or on the public
N * epsilon at or above which the release follows a noisy length histogram (``--gate lengths2``, ``lengths5``: its
share of rho), or on N * epsilon per pair at or above which a tree releases every pair (``--gate allpairs``,
``allpairs003``), chosen by leave-one-dataset-out.

A run's draws up to the choice do not depend on the threshold: with the same seed, the measured dependence
and every release before the choice are the same whatever it is. So ``rules_lodo.py``'s two candidates of a
gate, one never taking the other way (``dep_keep``, ``default``) and one always taking it (``dep_merge``,
``lengths2``, ``allp``), run on the same seeds, give every threshold's
rows exactly: a seed's row for threshold T is its taking row where the row's measure (the measured dependence,
or N * epsilon) is on the taking side of T, else its keeping row. This writes those rows as candidates
``merge<T>``, ``len2_<T>`` or ``allp_<T>`` beside
the files' ``default`` rows and prints ``rules_lodo.py``'s summary (the LODO choice among them, the mean and
worst held-out score, the groups beside the peers in the files).

    python benchmarks/merge_threshold.py msnbc.json retail.json gowalla.json t10i4d100k.json \\
        --thresholds 0.018 0.022 0.025 0.03 0.04 --json benchmarks/results/rules_lodo_merge.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from provenance import write_json
from rules_lodo import read_rows, summarize

from dpgm.privacy.calibrate import records_magnitude


class Gate(NamedTuple):
    """A threshold's two candidates, the side of it that takes the other way, and its rows' prefix."""

    keep: str
    take: str
    takes: Callable[[float, float], bool]  # (measured, threshold) -> whether the run takes the other way
    prefix: str
    measure: Callable[[dict[str, Any]], float | None] = lambda r: (r["dependence"]["per_record_and_edge"]
                                                                   if "dependence" in r else None)


def _scale(row: dict[str, Any]) -> float:
    """N * epsilon of a row's run as the rules read it: N's declared magnitude (``records_magnitude``)."""
    return float(records_magnitude(int(row["n_fit"]))) * float(row["epsilon"])


def _pair_scale(row: dict[str, Any]) -> float:
    """N * epsilon per pair of a row's items (what ``rules.every_pair`` reads)."""
    m = int(row["n_items"])
    return _scale(row) / max(m * (m - 1) / 2, 1.0)


GATES = {"merge": Gate("dep_keep", "dep_merge", lambda measured, t: measured < t, "merge"),
         "lengths2": Gate("default", "lengths2", lambda measured, t: measured >= t, "len2_", _scale),
         "lengths5": Gate("default", "lengths5", lambda measured, t: measured >= t, "len5_", _scale),
         "allpairs": Gate("default", "allp", lambda measured, t: measured >= t, "allp_", _pair_scale),
         "allpairs003": Gate("default", "allp_r003", lambda measured, t: measured >= t, "allp003_", _pair_scale)}


def threshold_rows(rows: list[dict[str, Any]], threshold: float, gate: Gate = GATES["merge"]) -> list[dict[str, Any]]:
    """Candidate ``<prefix><threshold>``: per (dataset, size, epsilon, seed) the taking row where the gate's measure
    is on the taking side of ``threshold``, else the keeping row (seeds without the row that way: none; settings
    where the rules measure nothing: the keeping row)."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return r["dataset"], r["size"], float(r["epsilon"]), r["seed"]

    kept = {key(r): r for r in rows if r["candidate"] == gate.keep}
    taken = {key(r): r for r in rows if r["candidate"] == gate.take}
    out = []
    for k in sorted(set(kept) | set(taken)):
        measured = {gate.measure(r) for r in (kept.get(k), taken.get(k)) if r} - {None}
        if len(measured) > 1:
            raise SystemExit(f"{k}: {gate.keep} and {gate.take} measured different values (not the same draws)")
        takes = bool(measured) and gate.takes(measured.pop(), threshold)  # nothing measured: the gate does not apply
        chosen = taken.get(k) if takes else kept.get(k)
        if chosen is not None:  # the way this threshold takes was run
            out.append({**chosen, "candidate": f"{gate.prefix}{threshold:g}", "taken": takes})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="rules_lodo.py files with the gate's two candidates' rows (and default, "
                                            "peers)")
    p.add_argument("--gate", nargs="+", choices=sorted(GATES), default=["merge"],
                   help="merge: MERGE_BELOW; lengths2, lengths5: LENGTHS_SCALE; allpairs, allpairs003: "
                        "ALL_PAIRS_SCALE (several: every gate's thresholds compete)")
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.018, 0.022, 0.025, 0.03, 0.04])
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    rows = [r for f in args.files for r in read_rows(f)]
    base = [r for r in rows if r["candidate"] == "default" or r.get("peer")]
    gates = [GATES[g] for g in args.gate]
    made = [r for gate in gates for t in args.thresholds for r in threshold_rows(rows, t, gate)]
    print(summarize(base + made))
    taken = {f"{gate.prefix}{t:g}": sum(r["taken"] for r in made if r["candidate"] == f"{gate.prefix}{t:g}")
             for gate in gates for t in args.thresholds}
    print(f"\nseeds taking {', '.join(g.take for g in gates)} per threshold:", taken)
    measured = sorted({(r["dataset"], r["size"], float(r["epsilon"]), r["seed"], round(gate.measure(r), 5))
                       for gate in gates for r in rows if r["candidate"] == gate.keep and gate.measure(r) is not None})
    if args.json:  # every row read and the thresholds' rows (an input of this script again), each input's provenance
        parts = [{"file": Path(f).name, **{k: v for k, v in json.loads(Path(f).read_text()).items() if k != "rows"}}
                 for f in args.files]
        write_json(args.json, {"settings": vars(args), "measured": measured, "parts": parts,
                               "rows": [r for r in rows if r["candidate"] not in taken] + made})
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
