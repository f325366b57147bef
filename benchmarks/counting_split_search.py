"""How dpgm's counting-query configs were chosen: train on one half of a dataset, answer on the other.

The benchmark (counting_queries.py) must not tune on its own real answers, so each candidate
config is trained on a random half of the dataset and its queries are answered against the
other half, next to MWEM and independent marginals fitted on the same half at the same epsilon.

    python benchmarks/counting_split_search.py msnbc --epsilon 1 \
        --candidate '{"partition": {"method": "lloyd", "k": 20, "iterations": 10, "target_epsilon": 0.2}}'

Each --candidate is a JSON object of config sections applied over ``--config`` (default:
configs/<dataset>.yaml); no candidate: that file as it is. Results vary with the training
seed (the DP partition above all), so ``--seeds 0 1 2 3 4 5`` trains each candidate once per
seed and reports the mean error per group over the seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from counting_queries import DATASETS, config_file, config_sections, load
from provenance import write_json

from dpgm.config import config_from_dict
from dpgm.evaluation.counting import run_baseline, start_evaluation
from dpgm.pipeline.run import train
from dpgm.privacy.calibrate import default_delta
from dpgm.release import sample_dataset


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--config", type=Path, default=None, help="base config file (default: configs/<dataset>.yaml)")
    p.add_argument("--candidate", action="append", default=[], help="JSON config sections over the base config")
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--baselines", nargs="*", default=["marginals", "mwem"], choices=["marginals", "mwem"],
                   help="peers fitted on the same half at the same epsilon (default: both)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds; errors are averaged")
    p.add_argument("--top-items", type=int, default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    data = load(args.dataset, args)
    order = np.random.default_rng(0).permutation(data.n_records)
    fit, held_out = data.subset(order[: data.n_records // 2]), data.subset(order[data.n_records // 2:])
    evaluation = start_evaluation(held_out, args.queries, np.random.default_rng(1))
    delta = default_delta(fit.n_records)
    for method in args.baselines:
        synthetic, _ = run_baseline(method, fit, evaluation.queries, epsilon=args.epsilon, delta=delta,
                                    rng=np.random.default_rng(2), options=None)
        evaluation.add(method, synthetic)
    base = config_file(args.dataset, args.config)
    candidates = [config_sections(base, json.loads(c)) for c in args.candidate] or [config_sections(base)]
    configs = {}
    for i, cfg_dict in enumerate(candidates):
        start = time.perf_counter()
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as tmp:
                cfg = config_from_dict(cfg_dict, [f"runs_dir={tmp}", "name=split", f"seed={seed}",
                                                  f"privacy.delta={delta}", f"privacy.target_epsilon={args.epsilon}"])
                run_dir, _ = train(cfg, data=fit, progress=False)
                # as many records as it was fitted on, as the baselines release (their noisy n)
                evaluation.add(f"dpgm{i}/{seed}", sample_dataset(run_dir, fit.n_records, seed=seed))
        configs[f"dpgm{i}"] = cfg_dict
        print(f"dpgm{i}: {time.perf_counter() - start:.0f} s, {json.dumps(cfg_dict)}", flush=True)
    means = seed_means(evaluation.group_means())
    print(f"\n== {args.dataset} split, epsilon {args.epsilon:g}, seeds {args.seeds}")
    print(evaluation.table())
    print("\nmean over seeds: " + "  ".join(f"{m}: {' '.join(f'{v:.4f}' for v in g.values())}" for m, g in means.items()))
    if args.json:
        write_json(args.json, {"dataset": args.dataset, "epsilon": args.epsilon, "seeds": args.seeds,
                                      "configs": configs, "group_means": evaluation.group_means(),
                                      "mean_over_seeds": means})
    return 0


def seed_means(group_means: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    """Average the per-seed rows ``dpgm{i}/{seed}`` of each candidate; baselines pass through."""
    grouped: dict[str, list[dict[int, float]]] = {}
    for key, groups in group_means.items():
        grouped.setdefault(key.split("/")[0], []).append(groups)
    return {key: {g: float(np.mean([r[g] for r in rows])) for g in rows[0]} for key, rows in grouped.items()}


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
