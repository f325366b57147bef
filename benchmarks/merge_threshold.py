"""Which ``MERGE_BELOW`` (dpgm/rules.py): the threshold on the items' measured dependence below which the
partition merges its groups into one, chosen by leave-one-dataset-out.

A run's draws up to the merge do not depend on the threshold: with the same seed, the measured dependence
and the partitioner's release are the same whatever it is. So ``rules_lodo.py``'s two candidates
``dep_keep`` (measured, never merged) and ``dep_merge`` (measured, always merged), run on the same seeds,
give every threshold's rows exactly: a seed's row for threshold T is its ``dep_merge`` row where the
measured dependence (the row's ``dependence``) is below T, else its ``dep_keep`` row. This writes those
rows as candidates ``merge<T>`` beside the files' ``default`` rows and prints ``rules_lodo.py``'s summary
(the LODO choice among them, the mean and worst held-out score, the groups beside the peers in the files).

    python benchmarks/merge_threshold.py msnbc.json retail.json gowalla.json t10i4d100k.json \\
        --thresholds 0.018 0.022 0.025 0.03 0.04 --json benchmarks/results/rules_lodo_merge.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provenance import write_json
from rules_lodo import read_rows, summarize

KEEP, MERGE = "dep_keep", "dep_merge"


def threshold_rows(rows: list[dict[str, Any]], threshold: float) -> list[dict[str, Any]]:
    """Candidate ``merge<threshold>``: per (dataset, size, epsilon, seed) the ``dep_merge`` row where the measured
    dependence is below ``threshold``, else the ``dep_keep`` row (seeds without the row that way: none)."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return r["dataset"], r["size"], float(r["epsilon"]), r["seed"]

    kept = {key(r): r for r in rows if r["candidate"] == KEEP}
    merged = {key(r): r for r in rows if r["candidate"] == MERGE}
    out = []
    for k in sorted(set(kept) | set(merged)):
        measured = {r["dependence"]["per_record_and_edge"] for r in (kept.get(k), merged.get(k)) if r}
        if len(measured) > 1:
            raise SystemExit(f"{k}: dep_keep and dep_merge measured different dependences (not the same draws)")
        below = measured.pop() < threshold
        chosen = merged.get(k) if below else kept.get(k)
        if chosen is not None:  # the way this threshold takes was run
            out.append({**chosen, "candidate": f"merge{threshold:g}", "merged": below})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="rules_lodo.py files with dep_keep and dep_merge rows (and default, peers)")
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.018, 0.022, 0.025, 0.03, 0.04])
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    rows = [r for f in args.files for r in read_rows(f)]
    base = [r for r in rows if r["candidate"] == "default" or r.get("peer")]
    made = [r for t in args.thresholds for r in threshold_rows(rows, t)]
    print(summarize(base + made))
    merged = {f"merge{t:g}": sum(r["merged"] for r in made if r["candidate"] == f"merge{t:g}") for t in args.thresholds}
    print("\nseeds merged per threshold:", merged)
    measured = sorted({(r["dataset"], r["size"], float(r["epsilon"]), r["seed"],
                        round(r["dependence"]["per_record_and_edge"], 5)) for r in rows if r["candidate"] == KEEP})
    if args.json:  # every row read and the thresholds' rows (an input of this script again), each input's provenance
        parts = [{"file": Path(f).name, **{k: v for k, v in json.loads(Path(f).read_text()).items() if k != "rows"}}
                 for f in args.files]
        write_json(args.json, {"settings": vars(args), "measured": measured, "parts": parts,
                               "rows": [r for r in rows if not r["candidate"].startswith("merge")] + made})
    return 0


if __name__ == "__main__":
    sys.exit(main())
