"""Counting queries on transaction data (DPGM paper Fig. 5): dpgm vs MWEM vs independent marginals.

Data (../shared/data, or $DPGM_DATA_DIR): msnbc (17 items, all kept), retail and gowalla
restricted to their 100 most frequent items (``--top-items``; exact counts, an evaluation
set-up step treated as public). Empty records stay (n is private).
For each dataset one workload of ``--queries`` random queries (paper section 6.3: 5 length
groups, group i lengths 1..i*maxlen/5, maxlen = longest real record) is drawn and shared by
every method and epsilon. delta = 1/(100 N) for n's order of magnitude N (train.py's
default), add/remove neighbours.

Methods (JSON ``method``): mwem (T = 50 rounds as in the paper's footnote; full 2^m domain
for msnbc, a data-independent 10,000-record support otherwise), mwem_pgm (MWEM+PGM: T = the
number of items rounds of 2-way marginals on a graphical model, at most
``--mwem-pgm-max-rounds``), aim (private-pgm's, at most ``--aim-max-rounds`` rounds) and mst
(private-pgm's), marginals (Gaussian noise on
item counts and n), dpgm (``run_dpgm`` with ``--config``, else the dataset's file in configs/,
which says whether it was tuned for that dataset). Baselines are calibrated so that the RDP accountant's epsilon at delta equals
the target (``--accounting pure`` spends it as pure epsilon instead).

    python benchmarks/counting_queries.py --json counting.json --png counting.png
    python benchmarks/counting_queries.py --datasets msnbc --epsilons 1 --queries 200 --limit 50000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json

from dpgm.data.dataset import BinaryDataset
from dpgm.data.mnist import load_mnist
from dpgm.data.transactions import load_transactions
from dpgm.evaluation.counting import options_among, run_baseline, start_evaluation
from dpgm.evaluation.marginal_tvd import marginal_tvd
from dpgm.privacy.calibrate import default_delta

DATASETS = ("msnbc", "retail", "gowalla")
#: Items kept per dataset (its most frequent ones; None: all). Also read by rules_lodo.py, which runs
#: on every dataset below (chess has 75 items: all kept).
TOP_ITEMS = {"msnbc": None, "retail": 100, "gowalla": 100, "foodmart": 100, "t10i4d100k": 100, "mushroom": 100,
             "chess": None, "mnist": None}
EPSILONS = (1.0, 2.0)
METHODS = ("dpgm", "aim", "mst", "mwem_pgm", "mwem", "marginals")


CONFIGS = Path(__file__).resolve().parents[1] / "configs"
#: Default cap on AIM's rounds: T = 16 d makes hundreds of rounds (one mbi refit each) on 100 items.
AIM_MAX_ROUNDS = 40


class Replaced(argparse.Action):
    """A removed option: using it is a one-line error naming its replacement (``const``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.exit(2, f"{parser.prog}: error: {option_string} was removed (a wall-clock stop "
                       f"reads the data through the clock): cap the rounds with {self.const}\n")


def config_file(name: str, override: Path | None) -> Path:
    """The dpgm config a dataset runs with: ``--config`` for every dataset, else configs/<name>.yaml."""
    return override if override is not None else CONFIGS / f"{name}.yaml"


def config_sections(path: Path, sections: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The config file's YAML as a dict, updated section by section with ``sections``."""
    import yaml

    cfg = yaml.safe_load(path.read_text())
    for section, values in (sections or {}).items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def run_dpgm(config: dict[str, Any], dataset: BinaryDataset, epsilon: float, delta: float,
             rng: np.random.Generator) -> BinaryDataset:
    """Train dpgm (``config``: a config file's sections) on ``dataset`` at (epsilon, delta) and
    release len(dataset) synthetic records. The data section is unused: the records are given."""
    import tempfile

    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train
    from dpgm.release import sample_dataset

    seed = int(rng.integers(2**31))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = config_from_dict(config, [
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
    p.add_argument("--subsample", type=int, default=None,
                   help="a uniform random sample of N records of each dataset (seeded by --seed)")
    p.add_argument("--seeds", type=int, default=1, help="repeat every method this many times (new seeds)")
    p.add_argument("--aim-rounds", type=int, default=None, help="AIM's T (default: 16 d)")
    p.add_argument("--aim-max-rounds", type=int, default=AIM_MAX_ROUNDS,
                   help="cap on AIM's rounds, the last spending the rest (public; 0: none)")
    p.add_argument("--rounds", type=int, default=50, help="MWEM rounds T")
    p.add_argument("--mwem-pgm-rounds", type=int, default=None, help="MWEM+PGM's T (default: min(items, 60))")
    p.add_argument("--mwem-pgm-max-rounds", type=int, default=0,
                   help="cap on MWEM+PGM's rounds, the last spending the rest (public; 0: none)")
    for old in ("--aim-time-limit", "--mwem-pgm-time-limit"):
        p.add_argument(old, action=Replaced, const=old.replace("time-limit", "max-rounds"),
                       default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.add_argument("--accounting", choices=("rdp", "pure"), default="rdp")
    p.add_argument("--config", type=Path, default=None,
                   help="dpgm config file used on every dataset (default: configs/<dataset>.yaml)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--png", default=None, metavar="PATH", help="plot in the style of the paper's Fig. 5")
    return p.parse_args(argv)


def transactions(folder: Path, name: str, top: int | None, limit: int | None) -> BinaryDataset:
    return load_transactions(folder / name / f"{name}.txt.gz", top_items=top, limit=limit)


def mnist_pixels(folder: Path, name: str, top: int | None, limit: int | None) -> BinaryDataset:
    """MNIST's training images as a dense binary table of 784 pixels (at 0.5, as the paper), labels dropped."""
    data = load_mnist("train", directory=folder / name, limit=limit)
    return BinaryDataset(records=data.records, item_names=data.item_names, name=name)


#: How a data set is read (default: a transaction file).
LOADERS = {"mnist": mnist_pixels}


def load(name: str, args: argparse.Namespace) -> BinaryDataset:
    top = TOP_ITEMS[name] if args.top_items is None or TOP_ITEMS[name] is None else args.top_items
    folder = args.data_dir or default_data_dir()
    data = LOADERS.get(name, transactions)(folder, name, top, args.limit)
    if getattr(args, "subsample", None) and args.subsample < data.n_records:
        pick = np.random.default_rng([args.seed, 7]).choice(data.n_records, args.subsample, replace=False)
        data = data.subset(np.sort(pick))
    return data


def tvd_rows(real: BinaryDataset, synthetic: BinaryDataset, **keys: Any) -> list[dict[str, Any]]:
    """The marginal TVDs (1-, 2-, 3-way, record length) of one synthetic dataset as JSON rows."""
    tvd = marginal_tvd(real, synthetic).to_dict()
    return [{**keys, "metric": f"tvd_{name}", "value": tvd[name]} for name in ("oneway", "twoway", "threeway", "length")]


def synthesize(
    method: str, name: str, data: BinaryDataset, queries: Any, epsilon: float, delta: float,
    rng: np.random.Generator, options: dict[str, Any], config_path: Path | None = None,
) -> tuple[BinaryDataset, dict[str, Any]]:
    if method == "dpgm":
        config = config_sections(config_file(name, config_path))
        return run_dpgm(config, data, epsilon, delta, rng), {"method": "dpgm", "config": config}
    return run_baseline(method, data, queries, epsilon=epsilon, delta=delta, rng=rng,
                        options=options_among(method, options))


def plot(results: list[dict[str, Any]], datasets: list[str], epsilons: list[float], path: str) -> None:
    """Grid of panels (dataset x epsilon): mean relative error per length group, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(datasets), len(epsilons), figsize=(4 * len(epsilons), 3 * len(datasets)),
                             squeeze=False)
    markers = {"dpgm": "o", "aim": "D", "mst": "v", "mwem_pgm": "P", "mwem": "s", "marginals": "^"}
    for i, ds in enumerate(datasets):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            for method in METHODS:
                by_group: dict[int, list[float]] = {}
                for r in results:
                    if (r["dataset"], r["epsilon"], r["method"]) == (ds, eps, method):
                        by_group.setdefault(r["group"], []).append(r["rel_error"])
                if by_group:  # mean over seeds
                    groups = sorted(by_group)
                    ax.plot([20 * g for g in groups], [np.mean(by_group[g]) for g in groups],
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
    options = {"accounting": args.accounting, "mwem.rounds": args.rounds, "aim.rounds": args.aim_rounds,
               "aim.max_rounds": args.aim_max_rounds or None, "mwem_pgm.rounds": args.mwem_pgm_rounds,
               "mwem_pgm.max_rounds": args.mwem_pgm_max_rounds or None}
    results, runs = [], []
    for name in args.datasets:
        data = load(name, args)
        delta = default_delta(data.n_records)
        evaluation = start_evaluation(data, args.queries, np.random.default_rng(run_seed(args.seed, name)))
        print(f"\n== {name}: {data.n_records} records, {data.n_items} items, maxlen {evaluation.queries.maxlen}, "
              f"delta {delta:.3g}", flush=True)
        for eps in args.epsilons:
            for method in args.methods:
                for seed in range(args.seeds):
                    keys = {"dataset": name, "epsilon": eps, "method": method, "seed": seed}
                    rng = np.random.default_rng(run_seed(args.seed, name, method, f"{eps:g}", seed))
                    start = time.perf_counter()
                    synthetic, report = synthesize(method, name, data, evaluation.queries, eps, delta, rng,
                                                   options, args.config)
                    seconds = time.perf_counter() - start
                    key = f"{method}@{eps:g}#{seed}"
                    evaluation.add(key, synthetic, report)
                    results += [{**keys, "group": g, "rel_error": v} for g, v in evaluation.group_means()[key].items()]
                    results += tvd_rows(data, synthetic, **keys)
                    runs.append({**keys, "seconds": seconds, "n_synthetic": synthetic.n_records, "privacy": report})
                    print(f"  {key}: {seconds:.1f} s", flush=True)
                    if args.json:  # after every run, so that a stopped sweep keeps what it measured
                        save(args, results, runs)
        print(evaluation.table())
        print(tvd_table([r for r in results if r["dataset"] == name and "metric" in r]))
    if args.json:
        save(args, results, runs)
        print(f"wrote {args.json}")
    if args.png:
        plot([r for r in results if "group" in r], args.datasets, args.epsilons, args.png)
        print(f"wrote {args.png}")
    return 0


def run_seed(seed: int, *keys: str | int) -> np.random.SeedSequence:
    """The seed of one dataset's queries (keys = name) or of one run (name, method, epsilon, seed):
    from names, not positions, so that separate invocations (say baselines now, dpgm later) agree."""
    return np.random.SeedSequence([seed, *(zlib.crc32(str(k).encode()) for k in keys)])


def save(args: argparse.Namespace, results: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    settings["top_items_by_dataset"] = {d: (TOP_ITEMS[d] if args.top_items is None or TOP_ITEMS[d] is None
                                            else args.top_items) for d in args.datasets}
    write_json(args.json, {"settings": settings, "results": results, "runs": runs})


def tvd_table(rows: list[dict[str, Any]]) -> str:
    """Mean marginal TVD per method and epsilon (over seeds): 1-way, 2-way, 3-way, record length."""
    cells: dict[tuple[str, float], dict[str, list[float]]] = {}
    for r in rows:
        cells.setdefault((r["method"], r["epsilon"]), {}).setdefault(r["metric"], []).append(r["value"])
    names = ("tvd_oneway", "tvd_twoway", "tvd_threeway", "tvd_length")
    lines = [f"{'method':>12}  " + "  ".join(f"{n:>13}" for n in names)]
    for (method, eps), metrics in cells.items():
        lines.append(f"{method + '@' + format(eps, 'g'):>12}  "
                     + "  ".join(f"{np.mean(metrics[n]):>13.4g}" for n in names))
    return "\n".join(lines)


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
