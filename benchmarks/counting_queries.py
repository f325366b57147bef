"""Counting queries on transaction data (DPGM paper Fig. 5): dpgm vs MWEM vs independent marginals.

Data (../shared/data, or $DPGM_DATA_DIR): msnbc (17 items, all kept), retail and gowalla
restricted to their 100 most frequent items (``--top-items``; exact counts, an evaluation
set-up step treated as public, as the issue prescribes). Empty records stay (n is private).
For each dataset one workload of ``--queries`` random queries (paper section 6.3: 5 length
groups, group i lengths 1..i*maxlen/5, maxlen = longest real record) is drawn and shared by
every method and epsilon. delta = 1/(10 n) rounded down to a power of ten (train.py's
default), add/remove neighbours.

Methods (JSON ``method``): mwem (T = 50 rounds as in the paper's footnote; full 2^m domain
for msnbc, a data-independent 10,000-record support otherwise), marginals (Gaussian noise on
item counts and n), dpgm (``run_dpgm`` with the dataset's entry of ``DPGM_CONFIGS``). Baselines are calibrated so that the RDP accountant's epsilon at delta equals
the target (``--accounting pure`` spends it as pure epsilon instead).

    python benchmarks/counting_queries.py --json counting.json --png counting.png
    python benchmarks/counting_queries.py --datasets msnbc --epsilons 1 --queries 200 --limit 50000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json

from dpgm.data.dataset import BinaryDataset
from dpgm.data.transactions import load_transactions
from dpgm.evaluation.counting import BaselineOptions, run_baseline, start_evaluation
from dpgm.privacy.calibrate import default_delta

DATASETS = ("msnbc", "retail", "gowalla")
TOP_ITEMS = {"msnbc": None, "retail": 100, "gowalla": 100}
EPSILONS = (1.0, 2.0)
METHODS = ("dpgm", "mwem", "marginals")


#: dpgm's configuration per dataset, chosen by training on a random half of each dataset and
#: answering the queries on the OTHER half at epsilon = 1 (never on the benchmark's answers; the
#: search is in benchmarks/results/README.md). Shared: a VAE per part (128 hidden, latent 8)
#: whose output bias starts at the part's noisy mean record, fixed clipping C = 30, Adam,
#: Poisson batches at q = 0.01, gradient noise calibrated so the whole run meets (epsilon, delta).
#: With ``calibrate`` the trained models are shifted to draw the noisy means' item frequencies,
#: which then deserve a large share of the budget (mean sigma 5 instead of 10-20).
DPGM_BASE = {
    "model": {"kind": "vae", "hidden": [128], "latent": 8},
    "training": {"clipping": "fixed", "clip_norm": 30.0, "optimizer": "adam", "sampling_rate": 0.01,
                 "epochs": 10, "learning_rate": 0.003, "log_every": 100, "checkpoint_every": 1_000_000},
}
DPGM_CONFIGS = {
    # ~1e6 records, 17 items: 20 parts from DP Lloyd (the partition alone costs 0.2), 40 epochs.
    "msnbc": {"partition": {"method": "lloyd", "k": 20, "iterations": 10, "target_epsilon": 0.2},
              "model": {"mean_noise_multiplier": 8.0, "calibrate": True}, "training": {"epochs": 40}},
    # ~1e5 records: one part; records clipped to 3 items' norm in the mean, lower learning rate.
    "retail": {"partition": {"method": "none", "k": 1},
               "model": {"mean_clip": 3.0, "mean_noise_multiplier": 5.0, "calibrate": True},
               "training": {"learning_rate": 0.001}},
    # ~3e4 records, a third of them empty: 5 parts from DP kernel k-means on 300 random Fourier
    # features (100 features gave much worse parts).
    "gowalla": {"partition": {"method": "kernel_kmeans", "k": 5, "iterations": 10, "target_epsilon": 0.2,
                              "gamma": 0.25, "features": 300},
                "model": {"mean_clip": 3.0, "mean_noise_multiplier": 5.0, "calibrate": True}},
}


def over_base(sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """DPGM_BASE updated section by section with ``sections``."""
    cfg = {section: dict(values) for section, values in DPGM_BASE.items()}
    for section, values in sections.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def dpgm_config(name: str) -> dict[str, Any]:
    """The dataset's dpgm config: DPGM_BASE with its entry of DPGM_CONFIGS."""
    return over_base(DPGM_CONFIGS[name])


def run_dpgm(name: str, dataset: BinaryDataset, epsilon: float, delta: float,
             rng: np.random.Generator) -> BinaryDataset:
    """Train dpgm on ``dataset`` at (epsilon, delta) and release len(dataset) synthetic records."""
    import tempfile

    from dpgm.config import config_from_dict
    from dpgm.release import sample_dataset
    from dpgm.training.run import train

    seed = int(rng.integers(2**31))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = config_from_dict(dpgm_config(name), [
            f"runs_dir={tmp}", "name=dpgm", f"seed={seed}", f"privacy.delta={delta}",
            f"privacy.target_epsilon={epsilon}",
        ])
        run_dir, _ = train(cfg, data=dataset, progress=False)
        return sample_dataset(run_dir, dataset.n_records, seed=seed)


def default_data_dir() -> Path:
    raw = os.environ.get("DPGM_DATA_DIR", "").strip()
    return Path(raw) if raw else Path(__file__).resolve().parents[2] / "shared" / "data"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--top-items", type=int, default=None, help="override the item restriction of retail/gowalla")
    p.add_argument("--limit", type=int, default=None, help="use only the first N records of each dataset")
    p.add_argument("--rounds", type=int, default=50, help="MWEM rounds T")
    p.add_argument("--accounting", choices=("rdp", "pure"), default="rdp")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--png", default=None, metavar="PATH", help="plot in the style of the paper's Fig. 5")
    return p.parse_args(argv)


def load(name: str, args: argparse.Namespace) -> BinaryDataset:
    top = TOP_ITEMS[name] if args.top_items is None or TOP_ITEMS[name] is None else args.top_items
    folder = args.data_dir or default_data_dir()
    return load_transactions(folder / name / f"{name}.txt.gz", top_items=top, limit=args.limit)


def synthesize(
    method: str, name: str, data: BinaryDataset, queries: Any, epsilon: float, delta: float,
    rng: np.random.Generator, options: BaselineOptions,
) -> tuple[BinaryDataset, dict[str, Any]]:
    if method == "dpgm":
        return run_dpgm(name, data, epsilon, delta, rng), {"method": "dpgm", "config": dpgm_config(name)}
    return run_baseline(method, data, queries, epsilon=epsilon, delta=delta, rng=rng, options=options)


def plot(results: list[dict[str, Any]], datasets: list[str], epsilons: list[float], path: str) -> None:
    """Grid of panels (dataset x epsilon): mean relative error per length group, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(datasets), len(epsilons), figsize=(4 * len(epsilons), 3 * len(datasets)),
                             squeeze=False)
    markers = {"dpgm": "o", "mwem": "s", "marginals": "^"}
    for i, ds in enumerate(datasets):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            for method in METHODS:
                rows = sorted((r for r in results if (r["dataset"], r["epsilon"], r["method"]) == (ds, eps, method)),
                              key=lambda r: r["group"])
                if rows:
                    ax.plot([20 * r["group"] for r in rows], [r["rel_error"] for r in rows],
                            marker=markers[method], label=method)
            ax.set_yscale("log")
            ax.set_title(f"{ds}, epsilon = {eps:g}")
            ax.set_xlabel("max query length (% of max record length)")
            ax.set_ylabel("mean relative error")
            ax.set_xticks([20, 40, 60, 80, 100])
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    options = BaselineOptions(accounting=args.accounting, rounds=args.rounds)
    dataset_seeds = np.random.SeedSequence(args.seed).spawn(len(args.datasets))
    results, runs = [], []
    for name, ds_seed in zip(args.datasets, dataset_seeds):
        data = load(name, args)
        delta = default_delta(data.n_records)
        q_seed, *method_seeds = ds_seed.spawn(1 + len(args.epsilons) * len(args.methods))
        evaluation = start_evaluation(data, args.queries, np.random.default_rng(q_seed))
        print(f"\n== {name}: {data.n_records} records, {data.n_items} items, maxlen {evaluation.queries.maxlen}, "
              f"delta {delta:.3g}")
        for e_index, eps in enumerate(args.epsilons):
            for m_index, method in enumerate(args.methods):
                rng = np.random.default_rng(method_seeds[e_index * len(args.methods) + m_index])
                start = time.perf_counter()
                synthetic, report = synthesize(method, name, data, evaluation.queries, eps, delta, rng, options)
                key = f"{method}@{eps:g}"
                evaluation.add(key, synthetic, report)
                seconds = time.perf_counter() - start
                means = evaluation.group_means()[key]
                results += [{"dataset": name, "epsilon": eps, "method": method, "group": g, "rel_error": v}
                            for g, v in means.items()]
                runs.append({"dataset": name, "epsilon": eps, "method": method, "seconds": seconds,
                             "n_synthetic": synthetic.n_records, "privacy": report})
        print(evaluation.table())
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        settings["top_items_by_dataset"] = {d: (TOP_ITEMS[d] if args.top_items is None or TOP_ITEMS[d] is None
                                                else args.top_items) for d in args.datasets}
        write_json(args.json, {"settings": settings, "results": results, "runs": runs})
        print(f"wrote {args.json}")
    if args.png:
        plot(results, args.datasets, args.epsilons, args.png)
        print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
