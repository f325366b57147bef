"""A statistics-only run over 1, 2, ... torch.distributed ranks (gloo, CPU): time and peak memory per rank.

Each rank reads its byte range of one uncompressed transaction file (``--data``; msnbc: gunzip
msnbc.txt.gz first) and runs the stages of a run: DP Lloyd into ``--k`` parts (10 iterations), the
part means, and an independent-items model per part; with ``--train`` a VAE per part instead,
trained by STEPS DP-SGD steps (all ranks' parts stacked, fixed clipping). Reported per world size
and rank: the seconds to read the shard, of the statistics stages (the partition is most of them)
and of DP-SGD, the records the rank held and its peak resident memory; and the run's epsilon,
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

#: DP-SGD with --train: this many steps at this sampling rate (each step samples q n records in all).
STEPS, SAMPLING_RATE = 50, 0.01


def config(path: Path, n_items: int, k: int, runs: Path, train: bool) -> dict[str, Any]:
    model = ({"kind": "vae", "options": {"hidden": [32], "latent": 4}, "output_bias": "noisy_mean", "mean_noise_multiplier": 10.0,
              "mean_clip": 3.0} if train else
             {"kind": "independent", "output_bias": "noisy_mean", "mean_noise_multiplier": 10.0, "mean_clip": 3.0})
    training = {"sampling_rate": SAMPLING_RATE, "epochs": STEPS * SAMPLING_RATE, "noise_multiplier": 1.0,
                "clipping": "fixed", "clip_norm": 1.0, "checkpoint_every": 10_000, "checkpoint_seconds": 1e9}
    return {"model": model, "training": training, "name": "bench", "seed": 0, "runs_dir": str(runs), "threads": 1,
            "data": {"source": "transactions", "path": str(path), "n_items": n_items, "min_items": 1},
            "privacy": {"target_epsilon": 1.0, "delta": 1e-7},
            "partition": {"method": "lloyd", "k": k, "iterations": 10, "init": "random", "target_epsilon": 0.3}}


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
        run = TrainingRun(config_from_dict(config(args.data, args.n_items, args.k, runs, args.train)),
                          runs / "bench", progress=False)
        if rank == 0:
            run.layout.create()
        loaded = time.perf_counter()
        run.start()
        stages = time.perf_counter()
        run.train({})
        done = time.perf_counter()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row = {"world": world, "rank": rank, "records": run.data.n_records, "read_s": loaded - start,
               "stages_s": stages - loaded, "dpsgd_s": done - stages, "total_s": done - start,
               "peak_rss_mb": peak_mb, "epsilon": run.accountant.spent().epsilon, "steps": run.training.step}
        out.put(row)
        dist.barrier()  # no rank leaves the group while another still uses it
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
    p.add_argument("--train", action="store_true", help=f"also {STEPS} DP-SGD steps of a VAE per part")
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
        write_json(args.json, {"data": str(args.data), "k": args.k, "threads_per_rank": 1, "train": args.train,
                               "sampling_rate": SAMPLING_RATE, "rows": rows})
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
