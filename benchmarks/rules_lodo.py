"""Leave-one-dataset-out (LODO) check of the generic rules: choose without X, test on X.

A candidate is a patch of ``dpgm.rules`` constants (the budget shares, records per part, steps,
...) over BASE. For each dataset, fit size and candidate, ``configs/transactions.yaml`` (``rules: public``)
is trained on records drawn from a random half of the dataset (all of that half, or a subsample
of ``--sizes`` records) and answers ``--queries`` counting queries on the OTHER half, next to
independent marginals fitted on the same records at the same (epsilon, delta). A candidate's
score on one setting is the mean over the 5 length groups of log(error / marginals' error),
averaged over seeds (below 0: better than marginals). LODO: for each dataset X, the candidate
with the best mean score over the settings of the OTHER datasets is chosen, and its score on X is
reported beside the default's and the best one's on X. Each row also keeps the 2-way marginal TVD
to the held-out half (``tvd2``, marginals' beside it); ``--score tvd2`` runs the same LODO on
log(tvd2 / marginals' tvd2).

    python benchmarks/rules_lodo.py --json benchmarks/results/rules_lodo.json
    python benchmarks/rules_lodo.py --summarize benchmarks/results/rules_lodo.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from counting_queries import CONFIGS, config_sections, load
from provenance import write_json

from dpgm import rules
from dpgm.config import config_from_dict
from dpgm.evaluation.counting import BaselineOptions, run_baseline, start_evaluation
from dpgm.evaluation.marginal_tvd import marginal_tvd
from dpgm.pipeline.run import train
from dpgm.privacy.calibrate import default_delta
from dpgm.release import sample_dataset

#: dpgm.rules with one part per 10,000 records, DP-SGD at every size, no record-length histogram
#: and no part of empty records; every candidate patches it.
BASE: dict[str, Any] = {"RECORDS_PER_PART": 10_000, "MIN_TRAINING_SCALE": 0, "LENGTHS_SHARE": 0.0, "EMPTY_SHARE": 0.0}
#: Candidates: patches of BASE ("default" is BASE itself).
CANDIDATES: dict[str, dict[str, Any]] = {
    "default": {},
    "steps600": {"STEPS": 600},
    "parts5k": {"RECORDS_PER_PART": 5_000},
    "means30": {"MEANS_SHARE": 0.30},
    "means60": {"MEANS_SHARE": 0.60},
    "steps600_parts5k": {"STEPS": 600, "RECORDS_PER_PART": 5_000},
    "indep1e4": {"MIN_TRAINING_SCALE": 10_000},  # N eps < 1e4: independent items, no DP-SGD
    "parts5k_indep1e4": {"RECORDS_PER_PART": 5_000, "MIN_TRAINING_SCALE": 10_000},
    # the release follows a noisy record-length histogram (5% of rho, from DP-SGD's or the means' share)
    "parts5k_indep1e4_lengths5": {"RECORDS_PER_PART": 5_000, "MIN_TRAINING_SCALE": 10_000, "LENGTHS_SHARE": 0.05},
    # parts5k with DP-SGD from N eps = 3,000 ("shipped"), and the same with the empty records as a
    # part of their own (1% of rho for their noisy count; the other parts conditioned on >= 1 item)
    "shipped": {"RECORDS_PER_PART": 5_000, "MIN_TRAINING_SCALE": 3_000},
    "shipped_empty1": {"RECORDS_PER_PART": 5_000, "MIN_TRAINING_SCALE": 3_000, "EMPTY_SHARE": 0.01},
    # for the 2-way TVD: more of rho for the means, or smaller parts
    "empty1_means60": {"RECORDS_PER_PART": 5_000, "MIN_TRAINING_SCALE": 3_000, "EMPTY_SHARE": 0.01, "MEANS_SHARE": 0.60},
    "empty1_parts2500": {"RECORDS_PER_PART": 2_500, "MIN_TRAINING_SCALE": 3_000, "EMPTY_SHARE": 0.01},
}


def patched(patch: dict[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` to dpgm.rules and return the previous values (to restore)."""
    old = {name: getattr(rules, name) for name in patch}
    for name, value in patch.items():
        setattr(rules, name, value)
    return old


def run_setting(name: str, size: int | None, args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    """Every candidate and seed on one (dataset, fit size); appends rows."""
    data = load(name, argparse.Namespace(top_items=None, limit=None, subsample=None, seed=0, data_dir=args.data_dir))
    order = np.random.default_rng(0).permutation(data.n_records)
    half = data.n_records // 2
    held_out = data.subset(np.sort(order[half:]))
    evaluation = start_evaluation(held_out, args.queries, np.random.default_rng(1))
    config = config_sections(CONFIGS / "transactions.yaml")
    for seed in range(args.seeds):
        pick = order[:half] if size is None else np.random.default_rng([seed, 11]).choice(order[:half], size, replace=False)
        fit = data.subset(np.sort(pick))
        delta = default_delta(fit.n_records)
        key = f"marginals#{seed}"
        syn, _ = run_baseline("marginals", fit, evaluation.queries, epsilon=args.epsilon, delta=delta,
                              rng=np.random.default_rng([seed, 2]), options=BaselineOptions())
        evaluation.add(key, syn)
        marginals_tvd2 = marginal_tvd(held_out, syn).twoway
        for cand in args.candidates:
            old = patched({**BASE, **CANDIDATES[cand]})
            start = time.perf_counter()
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    cfg = config_from_dict(config, [f"runs_dir={tmp}", "name=lodo", f"seed={seed}",
                                                    f"privacy.delta={delta}", f"privacy.target_epsilon={args.epsilon}"])
                    run_dir, _ = train(cfg, data=fit, progress=False)
                    released = sample_dataset(run_dir, held_out.n_records, seed=seed)
                    evaluation.add(f"{cand}#{seed}", released)
                    tvd2 = marginal_tvd(held_out, released).twoway
            finally:
                patched(old)
            seconds = time.perf_counter() - start
            means = evaluation.group_means()
            ratio = [np.log(means[f"{cand}#{seed}"][g] / means[key][g]) for g in means[key]]
            rows.append({"dataset": name, "size": size or "half", "candidate": cand, "seed": seed,
                         "score": float(np.mean(ratio)), "groups": means[f"{cand}#{seed}"],
                         "marginals": means[key], "tvd2": tvd2, "marginals_tvd2": marginals_tvd2,
                         "seconds": seconds})
            print(f"  {name}/{size or 'half'} {cand}#{seed}: score {rows[-1]['score']:+.3f} ({seconds:.0f} s)", flush=True)
            if args.json:
                write_json(args.json, {"settings": {k: str(v) for k, v in vars(args).items()},
                                       "candidates": CANDIDATES, "rows": rows})


def row_score(row: dict[str, Any], score: str) -> float:
    """A row's score: the counting-query one, or log(2-way TVD / marginals' 2-way TVD)."""
    return row["score"] if score == "queries" else float(np.log(row["tvd2"] / row["marginals_tvd2"]))


def summarize(rows: list[dict[str, Any]], score_name: str = "queries") -> str:
    """Mean score per (setting, candidate) and the LODO choice for every dataset."""
    score: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        if score_name == "tvd2" and "tvd2" not in r:
            continue
        score.setdefault((r["dataset"], str(r["size"])), {}).setdefault(r["candidate"], []).append(row_score(r, score_name))
    mean = {s: {c: float(np.mean(v)) for c, v in by.items()} for s, by in score.items()}
    cands = sorted({c for by in mean.values() for c in by})
    lines = [f"{'setting':<16}" + "".join(f"{c:>18}" for c in cands)]
    for s, by in sorted(mean.items()):
        lines.append(f"{s[0] + '/' + s[1]:<16}" + "".join(f"{by.get(c, float('nan')):>+18.3f}" for c in cands))
    what = "error / marginals' error" if score_name == "queries" else "2-way TVD / marginals' 2-way TVD"
    lines.append(f"\nLODO (score = mean log({what}); lower is better):")
    for x in sorted({s[0] for s in mean}):
        others = [by for s, by in mean.items() if s[0] != x]
        common = [c for c in cands if all(c in by for by in others)]
        chosen = min(common, key=lambda c: np.mean([by[c] for by in others]))
        on_x = {s[1]: by for s, by in mean.items() if s[0] == x}
        lines.append(f"  without {x}: chose {chosen}; on {x}: " + ", ".join(
            f"{size}: chosen {by.get(chosen, float('nan')):+.3f}, default {by.get('default', float('nan')):+.3f}, "
            f"best {min(by, key=by.get)} {min(by.values()):+.3f}" for size, by in sorted(on_x.items())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["retail", "gowalla", "msnbc"])
    p.add_argument("--sizes", nargs="+", default=["half", "3000"], help="fit sizes: 'half' or a record count")
    p.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--summarize", nargs="+", default=None, metavar="JSON", help="only print the LODO summary of these files")
    p.add_argument("--score", choices=("queries", "tvd2"), default="queries",
                   help="what the summary scores: the counting queries or the 2-way marginal TVD")
    args = p.parse_args(argv)
    if args.summarize:
        print(summarize([r for path in args.summarize for r in json.loads(Path(path).read_text())["rows"]], args.score))
        return 0
    rows: list[dict[str, Any]] = []
    for size in args.sizes:
        for name in args.datasets:
            run_setting(name, None if size == "half" else int(size), args, rows)
    print(summarize(rows, args.score))
    return 0


if __name__ == "__main__":
    sys.exit(main())
