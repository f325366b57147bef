"""A statistics-only run over 1, 2, ... torch.distributed ranks (gloo, CPU): time and peak memory per rank.

Each rank reads its byte range of one uncompressed transaction file (``--data``; msnbc: gunzip
msnbc.txt.gz first) and runs the stages of a run without DP-SGD: DP Lloyd into ``--k`` parts (10
iterations), the part means, and an independent-items model per part, at epsilon 1. Reported per
world size and rank: the seconds to read the shard, the seconds of the stages (the partition is
most of them), the records the rank held and its peak resident memory; and the run's epsilon,
which must not depend on the world size. One thread per rank.

    gunzip -c $DPGM_DATA_DIR/msnbc/msnbc.txt.gz > /tmp/msnbc.txt
    python benchmarks/distributed_statistics.py --data /tmp/msnbc.txt --n-items 17 --ranks 1 2 \\
        --json benchmarks/results/distributed_statistics.json
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provenance import write_json


def config(path: Path, n_items: int, k: int, runs: Path) -> dict[str, Any]:
    return {"name": "bench", "seed": 0, "runs_dir": str(runs), "threads": 1,
            "data": {"source": "transactions", "path": str(path), "n_items": n_items, "min_items": 1},
            "privacy": {"target_epsilon": 1.0, "delta": 1e-7},
            "partition": {"method": "lloyd", "k": k, "iterations": 10, "init": "random", "target_epsilon": 0.3},
            "model": {"kind": "independent", "output_bias": "noisy_mean", "mean_noise_multiplier": 10.0,
                      "mean_clip": 3.0}}


def rank_main(rank: int, world: int, init: str, args: argparse.Namespace, runs: Path, out: Any) -> None:
    """One rank: join the group, read the shard, run the stages, report times and memory."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    import torch.distributed as dist

    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import TrainingRun

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        dist.barrier()
        start = time.perf_counter()
        run = TrainingRun(config_from_dict(config(args.data, args.n_items, args.k, runs)), runs / "bench",
                          progress=False)
        loaded = time.perf_counter()
        run.start()
        done = time.perf_counter()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out.put({"world": world, "rank": rank, "records": run.data.n_records, "read_s": loaded - start,
                 "stages_s": done - loaded, "total_s": done - start, "peak_rss_mb": peak_mb,
                 "epsilon": run.accountant.spent().epsilon})
    finally:
        dist.destroy_process_group()


def measure(world: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = mp.get_context("spawn").SimpleQueue()
        mp.spawn(rank_main, args=(world, f"file://{tmp}/init", args, Path(tmp) / "runs", out), nprocs=world,
                 join=True)
        rows = [out.get() for _ in range(world)]
    return sorted(rows, key=lambda r: r["rank"])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="an uncompressed transaction file")
    p.add_argument("--n-items", type=int, required=True, help="its universe of items (public)")
    p.add_argument("--k", type=int, default=20, help="parts of DP Lloyd")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2], help="world sizes to run")
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    for world in args.ranks:
        for row in measure(world, args):
            rows.append(row)
            print(row, flush=True)
    if args.json:
        write_json(args.json, {"data": str(args.data), "k": args.k, "threads_per_rank": 1, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
