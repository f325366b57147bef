"""How strongly each dataset's items depend on each other, beside what groups bought it under the rules.

A question for the rules, not a private measurement: the statistics are computed EXACTLY on the fit
samples of the leave-one-dataset-out grid (`rules_lodo.py`'s split, seed 0), so they show whether some
dependence statistic separates the datasets that gain from k > 1 groups from those that lose, before
anyone spends budget measuring it privately. Per dataset and fit size:

- ``phi``: the mean absolute correlation (phi coefficient) over all item pairs;
- ``top_eigen``: the largest eigenvalue of the items' correlation matrix over the number of items
  (1 / m for independent items, 1 for one factor driving all);
- ``tree_mi``: the Chow-Liu tree's mutual information (the maximum spanning tree of the pairs' mutual
  information) over the items' summed entropies;
- ``tree_l1``: the maximum spanning tree of the pairs' L1 distances from independence (MST's score),
  per record and per edge: what `dpgm/stages/dependence.py` releases (here exact);
- ``groups_gain``: from a `rules_lodo.py` file (``--compare``, candidate ``--one``), the mean score of
  one group minus that of the rules' k groups on that setting (> 0: the groups help).

    python benchmarks/dependence.py --compare results/rules_lodo_one_group.json --one one5e4 --epsilon 4 \\
        --json results/dependence.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from provenance import write_json

from dpgm.stages.dependence import heaviest_tree, independence_distances, plain_counts

TINY = 1e-12


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, TINY, 1 - TINY)
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


def pair_information(x: np.ndarray) -> np.ndarray:
    """[m, m] mutual information (nats) of every pair of binary items, zero on the diagonal."""
    n = len(x)
    p = x.mean(0)
    both = x.T @ x / n
    cells = ((both, p[:, None], p[None, :]), (p[:, None] - both, p[:, None], 1 - p[None, :]),
             (p[None, :] - both, 1 - p[:, None], p[None, :]), (1 - p[:, None] - p[None, :] + both, 1 - p[:, None],
                                                                1 - p[None, :]))
    info = sum(np.clip(j, TINY, None) * np.log(np.clip(j, TINY, None) / np.clip(a * b, TINY, None)) for j, a, b in cells)
    np.fill_diagonal(info, 0.0)
    return np.maximum(info, 0.0)


def dependence(x: np.ndarray) -> dict[str, float]:
    """phi, top_eigen, tree_mi and tree_l1 (module docstring) of binary records x [n, m]; constant items
    count as uncorrelated."""
    x = np.asarray(x, dtype=np.float64)
    m = x.shape[1]
    sd = x.std(0)
    z = (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)
    corr = z.T @ z / len(x)
    np.fill_diagonal(corr, 1.0)
    info = pair_information(x)
    p, upper = x.mean(0), np.triu_indices(m, 1)
    distance = independence_distances(plain_counts(x)) / len(x)
    return {"phi": float(np.abs(corr[upper]).mean()),
            "top_eigen": float(np.linalg.eigvalsh(corr)[-1] / m),
            "tree_mi": heaviest_tree(info + TINY) / float(_entropy(p).sum()),
            "tree_l1": heaviest_tree(distance) / max(1, m - 1)}


def groups_gain(path: str, one: str, epsilon: float) -> dict[tuple[str, str], float]:
    """Per (dataset, size) of a rules_lodo file at ``epsilon``: mean score of ``one`` minus ``default``'s."""
    import rules_lodo

    rows = [r for r in rules_lodo.read_rows(path) if not r.get("peer") and r["epsilon"] == epsilon]
    gain = {}
    for key in sorted({(r["dataset"], r["size"]) for r in rows}):
        scores = {c: [r["score"] for r in rows if (r["dataset"], r["size"], r["candidate"]) == (*key, c)]
                  for c in (one, "default")}
        if all(scores.values()):
            gain[key] = float(np.mean(scores[one]) - np.mean(scores["default"]))
    return gain


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=None, help="default: rules_lodo.py's seven")
    p.add_argument("--sizes", nargs="+", default=["3000", "30000", "full"])
    p.add_argument("--compare", default=None, metavar="JSON", help="a rules_lodo.py file with a one-group candidate")
    p.add_argument("--one", default="one5e4", help="that candidate")
    p.add_argument("--epsilon", type=float, default=4.0)
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    import rules_lodo

    gain = groups_gain(args.compare, args.one, args.epsilon) if args.compare else {}
    rows: list[dict[str, Any]] = []
    for name in args.datasets or list(rules_lodo.DATASETS):
        held = rules_lodo.Held(name, argparse.Namespace(data_dir=None, queries=5, top_items=None))
        for label in args.sizes:
            size = None if label == "full" else int(label)
            if size is not None and size > held.half:
                continue
            fit = held.fit(size, 0)
            row = {"dataset": name, "size": label, "n_fit": fit.n_records, "n_items": fit.n_items,
                   **dependence(fit.dense(np.float64))}
            if (name, label) in gain:
                row["groups_gain"] = gain[(name, label)]
            rows.append(row)
            gained = f"  groups_gain {row['groups_gain']:+.3f}" if "groups_gain" in row else ""
            print(f"{name:>11s} {label:>6s}  phi {row['phi']:.4f}  top_eigen {row['top_eigen']:.3f}  "
                  f"tree_mi {row['tree_mi']:.3f}  tree_l1 {row['tree_l1']:.4f}{gained}", flush=True)
    if args.json:
        write_json(args.json, {"settings": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
