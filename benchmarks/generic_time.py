"""Wall time of the whole generic dpgm run next to MST's, side by side on one 500,000 x 100 dataset.

The utility issue's time target: the whole generic run (``configs/transactions.yaml``, ``rules:
public``: the item, partition, means and length stages and DP-SGD, up to the release folder) and the
release of n records within 2x MST's time (its fit and its sampling of n records), measured in one
process on this machine.

Dataset: no shared dataset has both >= 500,000 records and >= 100 items (msnbc has 989,818 records
but 17 items), so t10i4d100k (100,000 synthetic IBM Quest baskets, 870 items) is restricted to its
``--items`` most frequent items (exact counts: a benchmark set-up step, treated as public; records
left empty stay) and ``--records`` records are drawn from it uniformly WITH replacement (seeded by
``--seed``). The records' length distribution and item co-occurrences are t10i4d100k's; each
record appears about 5 times.

Both methods run at the same (epsilon, delta), delta = 1/(100 N) for n's order of magnitude N
(train.py's default), with ``--threads`` threads for torch and BLAS (and, at 1 thread, XLA's CPU
client behind mbi's JAX unless XLA_FLAGS is set). Times (seconds, wall clock): dpgm's ``train``
(every stage) and ``sample_dataset`` of n records; MST's fit (``fit_baseline("mst")``: 1-way
measurements, model fit, tree selection, 2-way measurements, final fit) and its ``sample`` of n
records. The JSON gives ``ratio`` = dpgm total / MST total. MST needs the optional package mbi.

    python benchmarks/generic_time.py --json benchmarks/results/generic_time.json
    python benchmarks/generic_time.py --records 20000 --skip-mst
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from counting_queries import CONFIGS, config_sections, default_data_dir
from provenance import write_json

from dpgm.data.dataset import BinaryDataset
from dpgm.data.transactions import load_transactions
from dpgm.privacy.calibrate import default_delta

SOURCE = "t10i4d100k"
CONSTRUCTION = (f"{SOURCE} restricted to its most frequent items (exact counts), records drawn uniformly "
                "with replacement (numpy default_rng(seed))")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=500_000, help="records drawn (with replacement)")
    p.add_argument("--items", type=int, default=100, help="most frequent items kept")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=1, help="torch/BLAS (and XLA at 1) threads")
    p.add_argument("--seed", type=int, default=0, help="seeds the draw of the records and both methods")
    p.add_argument("--config", type=Path, default=CONFIGS / "transactions.yaml")
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--skip-mst", action="store_true", help="time dpgm only (no mbi needed)")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    for name in ("records", "items", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    return args


def build_dataset(data_dir: Path, records: int, items: int, seed: int) -> BinaryDataset:
    """``records`` records x ``items`` items: t10i4d100k's most frequent items, records drawn with
    replacement (see the module docstring)."""
    base = load_transactions(data_dir / SOURCE / f"{SOURCE}.txt.gz", top_items=items)
    pick = np.random.default_rng([seed, 500]).integers(0, base.n_records, size=records)
    data = base.subset(pick)
    data.name = f"{SOURCE}_top{items}_x{records}"
    return data


def time_dpgm(config: dict[str, Any], data: BinaryDataset, epsilon: float, delta: float, threads: int,
              seed: int) -> dict[str, Any]:
    """Seconds of the whole generic run (``train``) and of ``sample_dataset`` of n records."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train
    from dpgm.release import sample_dataset

    with tempfile.TemporaryDirectory() as tmp:
        cfg = config_from_dict(config, [
            f"runs_dir={tmp}", "name=generic_time", f"seed={seed}", f"privacy.delta={delta}",
            f"privacy.target_epsilon={epsilon}", f"threads={threads}",
        ])
        start = time.perf_counter()
        run_dir, report = train(cfg, data=data, progress=False)
        run_s = time.perf_counter() - start
        print(f"  dpgm run (train, every stage): {run_s:.1f} s", flush=True)
        start = time.perf_counter()
        synthetic = sample_dataset(run_dir, data.n_records, seed=seed)
        release_s = time.perf_counter() - start
        print(f"  dpgm release of {synthetic.n_records} records: {release_s:.1f} s", flush=True)
    return {"run_s": run_s, "release_s": release_s, "total_s": run_s + release_s,
            "n_synthetic": synthetic.n_records, "epsilon_spent": report.get("epsilon"), "plan": report.get("plan")}


def time_mst(data: BinaryDataset, epsilon: float, delta: float, seed: int) -> dict[str, Any]:
    """Seconds of MST's fit and of its sampling of n records."""
    from dpgm.evaluation.baselines import fit_baseline

    rng = np.random.default_rng([seed, 2])
    start = time.perf_counter()
    fit = fit_baseline("mst", data, None, epsilon=epsilon, delta=delta, rng=rng)
    fit_s = time.perf_counter() - start
    print(f"  mst fit: {fit_s:.1f} s", flush=True)
    start = time.perf_counter()
    synthetic = fit.model.sample(data.n_records, rng)
    sample_s = time.perf_counter() - start
    print(f"  mst sample of {synthetic.n_records} records: {sample_s:.1f} s", flush=True)
    return {"fit_s": fit_s, "sample_s": sample_s, "total_s": fit_s + sample_s, "n_synthetic": synthetic.n_records,
            "epsilon_spent": fit.report.get("epsilon"), "rho": fit.report.get("rho")}


def _version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def save(args: argparse.Namespace, payload: dict[str, Any]) -> None:
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        write_json(args.json, {"settings": settings, **payload})


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads == 1 and not args.skip_mst:  # before JAX is imported (lazily, by the MST fit)
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    from dpgm.threads import set_threads

    set_threads(args.threads)
    folder = args.data_dir or default_data_dir()
    start = time.perf_counter()
    data = build_dataset(folder, args.records, args.items, args.seed)
    delta = default_delta(data.n_records)
    lengths = data.record_lengths()
    dataset = {"name": data.name, "source": SOURCE, "construction": CONSTRUCTION, "records": data.n_records,
               "items": data.n_items, "mean_length": float(lengths.mean()), "max_length": int(lengths.max()),
               "empty_records": int((lengths == 0).sum()), "build_s": time.perf_counter() - start}
    print(f"== {data.name}: {data.n_records} records x {data.n_items} items (mean length "
          f"{dataset['mean_length']:.2f}), epsilon {args.epsilon:g}, delta {delta:.3g}, {args.threads} thread(s)",
          flush=True)
    payload: dict[str, Any] = {"dataset": dataset, "epsilon": args.epsilon, "delta": delta,
                               "xla_flags": os.environ.get("XLA_FLAGS"), "jax": _version("jax")}
    print("dpgm (generic config):", flush=True)
    payload["dpgm"] = time_dpgm(config_sections(args.config), data, args.epsilon, delta, args.threads, args.seed)
    payload["dpgm"]["config"] = args.config.name
    save(args, payload)
    if not args.skip_mst:
        print("mst:", flush=True)
        payload["mst"] = time_mst(data, args.epsilon, delta, args.seed)
        payload["ratio"] = payload["dpgm"]["total_s"] / payload["mst"]["total_s"]
        payload["within_2x"] = payload["ratio"] <= 2.0
        print(f"ratio dpgm / mst: {payload['ratio']:.2f} ({payload['dpgm']['total_s']:.1f} s / "
              f"{payload['mst']['total_s']:.1f} s)", flush=True)
        save(args, payload)
    if args.json:
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
