"""How dpgm's counting-query configs were chosen: train on one half of a dataset, answer on the other.

The benchmark (counting_queries.py) must not tune on its own real answers, so each candidate
config is trained on a random half of the dataset and its queries are answered against the
other half, next to MWEM and independent marginals fitted on the same half at the same epsilon.

    python benchmarks/counting_split_search.py msnbc --epsilon 1 \
        --candidate '{"partition": {"method": "lloyd", "k": 20, "iterations": 10, "target_epsilon": 0.2}}'

Each --candidate is a JSON object of config sections applied over counting_queries.DPGM_BASE
(no candidate: the dataset's current entry of DPGM_CONFIGS).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from counting_queries import DATASETS, dpgm_config, load, over_base

from dpgm.config import config_from_dict
from dpgm.evaluation.counting import BaselineOptions, run_baseline, start_evaluation
from dpgm.io import atomic_write_json
from dpgm.privacy.calibrate import default_delta
from dpgm.release import sample_dataset
from dpgm.training.run import train


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--candidate", action="append", default=[], help="JSON config sections over DPGM_BASE")
    p.add_argument("--queries", type=int, default=500)
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
    for method in ("marginals", "mwem"):
        synthetic, _ = run_baseline(method, fit, evaluation.queries, epsilon=args.epsilon, delta=delta,
                                    rng=np.random.default_rng(2), options=BaselineOptions())
        evaluation.add(method, synthetic)
    candidates = [over_base(json.loads(c)) for c in args.candidate] or [dpgm_config(args.dataset)]
    configs = {}
    for i, cfg_dict in enumerate(candidates):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            cfg = config_from_dict(cfg_dict, [f"runs_dir={tmp}", "name=split", "seed=0", f"privacy.delta={delta}",
                                              f"privacy.target_epsilon={args.epsilon}"])
            run_dir, _ = train(cfg, data=fit, progress=False)
            evaluation.add(f"dpgm{i}", sample_dataset(run_dir, held_out.n_records, seed=0))
        configs[f"dpgm{i}"] = cfg_dict
        print(f"dpgm{i}: {time.perf_counter() - start:.0f} s, {json.dumps(cfg_dict)}", flush=True)
    print(f"\n== {args.dataset} split, epsilon {args.epsilon:g}")
    print(evaluation.table())
    if args.json:
        atomic_write_json(args.json, {"dataset": args.dataset, "epsilon": args.epsilon, "configs": configs,
                                      "group_means": evaluation.group_means()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
