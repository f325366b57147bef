"""Which ``MERGE_BELOW``, ``TREE_ABOVE`` or ``INDEPENDENT_BELOW`` (dpgm/rules.py): a threshold on the items' measured
dependence, below which the partition merges its groups into one (``--gate merge``), at or above which one group's
model is a tree of items instead of DP-SGD's (``--gate tree``), or below which its items are independent instead
of a tree (``--gate independent``), chosen by leave-one-dataset-out.

A run's draws up to the choice do not depend on the threshold: with the same seed, the measured dependence
and every release before the choice are the same whatever it is. So ``rules_lodo.py``'s two candidates of a
gate, one measured and never taking the other way (``dep_keep``, ``tree_keep``, ``ind_keep``) and one measured
and always taking it (``dep_merge``, ``tree_take``, ``ind_take``), run on the same seeds, give every threshold's
rows exactly: a seed's row for threshold T is its taking row where the measured dependence (the row's
``dependence``) is on the taking side of T, else its keeping row. This writes those rows as candidates
``merge<T>``, ``tree<T>`` or ``ind<T>`` beside
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


class Gate(NamedTuple):
    """A threshold's two candidates, the side of it that takes the other way, and its rows' prefix."""

    keep: str
    take: str
    takes: Callable[[float, float], bool]  # (measured, threshold) -> whether the run takes the other way
    prefix: str


GATES = {"merge": Gate("dep_keep", "dep_merge", lambda measured, t: measured < t, "merge"),
         "tree": Gate("tree_keep", "tree_take", lambda measured, t: measured >= t, "tree"),
         "independent": Gate("ind_keep", "ind_take", lambda measured, t: measured < t, "ind")}


def threshold_rows(rows: list[dict[str, Any]], threshold: float, gate: Gate = GATES["merge"]) -> list[dict[str, Any]]:
    """Candidate ``<prefix><threshold>``: per (dataset, size, epsilon, seed) the taking row where the measured
    dependence is on the taking side of ``threshold``, else the keeping row (seeds without the row that way: none;
    settings where the rules measure nothing: the keeping row)."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return r["dataset"], r["size"], float(r["epsilon"]), r["seed"]

    kept = {key(r): r for r in rows if r["candidate"] == gate.keep}
    taken = {key(r): r for r in rows if r["candidate"] == gate.take}
    out = []
    for k in sorted(set(kept) | set(taken)):
        measured = {r["dependence"]["per_record_and_edge"] for r in (kept.get(k), taken.get(k)) if r and "dependence" in r}
        if len(measured) > 1:
            raise SystemExit(f"{k}: {gate.keep} and {gate.take} measured different dependences (not the same draws)")
        takes = bool(measured) and gate.takes(measured.pop(), threshold)  # nothing measured: the gate does not apply
        chosen = taken.get(k) if takes else kept.get(k)
        if chosen is not None:  # the way this threshold takes was run
            out.append({**chosen, "candidate": f"{gate.prefix}{threshold:g}", "taken": takes})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="rules_lodo.py files with the gate's two candidates' rows (and default, "
                                            "peers)")
    p.add_argument("--gate", choices=sorted(GATES), default="merge",
                   help="merge: MERGE_BELOW; tree: TREE_ABOVE; independent: INDEPENDENT_BELOW")
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.018, 0.022, 0.025, 0.03, 0.04])
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    rows = [r for f in args.files for r in read_rows(f)]
    base = [r for r in rows if r["candidate"] == "default" or r.get("peer")]
    gate = GATES[args.gate]
    made = [r for t in args.thresholds for r in threshold_rows(rows, t, gate)]
    print(summarize(base + made))
    taken = {f"{gate.prefix}{t:g}": sum(r["taken"] for r in made if r["candidate"] == f"{gate.prefix}{t:g}")
             for t in args.thresholds}
    print(f"\nseeds taking {gate.take} per threshold:", taken)
    measured = sorted({(r["dataset"], r["size"], float(r["epsilon"]), r["seed"],
                        round(r["dependence"]["per_record_and_edge"], 5)) for r in rows
                       if r["candidate"] == gate.keep and "dependence" in r})
    if args.json:  # every row read and the thresholds' rows (an input of this script again), each input's provenance
        parts = [{"file": Path(f).name, **{k: v for k, v in json.loads(Path(f).read_text()).items() if k != "rows"}}
                 for f in args.files]
        write_json(args.json, {"settings": vars(args), "measured": measured, "parts": parts,
                               "rows": [r for r in rows if r["candidate"] not in taken] + made})
    return 0


if __name__ == "__main__":
    sys.exit(main())
