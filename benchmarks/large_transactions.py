"""A transaction file larger than one would hold in memory: partitioned and trained in chunks, peak memory per rank.

Generates a synthetic file of ``--records`` records over 100 items (``--items``) to disk a chunk at a
time (never whole): each record draws one of 8 profiles, then each item with that profile's
probability (about 4 items per record); item ids are written as two digits. Then, for each
``--runs`` entry (records:ranks:mode), it runs dpgm's whole pipeline (DP Lloyd partition, part
means, length histogram, one VAE per part by DP-SGD, the release) with ``data.chunk_mb`` (mode
``chunks``), with the file loaded in memory (mode ``memory``), or in chunks from a folder of
``--parts`` files holding the same records (mode ``parts``: each rank reads whole files), on 1 or 2
ranks (torchrun, gloo), and reports each rank's peak resident memory (``ru_maxrss``) and the wall time.

    OMP_NUM_THREADS=1 python benchmarks/large_transactions.py --records 50000000 \\
        --runs 5000000:1:memory 5000000:1:chunks 50000000:1:chunks 50000000:2:chunks \\
        --json benchmarks/results/large_transactions.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import write_json

PROFILES = 8
GEN_CHUNK = 250_000


def generate(path: Path, records: int, items: int, seed: int = 0) -> None:
    """``records`` lines of two-digit item ids, written GEN_CHUNK records at a time."""
    if items > 100:
        raise SystemExit("--items: at most 100 (two-digit ids)")
    rng = np.random.default_rng(seed)
    probs = np.clip(rng.gamma(0.4, 0.1, size=(PROFILES, items)), 0.0, 0.9)  # ~4 items per record
    digits = np.array([[ord(str(j // 10)), ord(str(j % 10))] for j in range(items)], dtype=np.uint8)
    with path.open("wb") as f:
        for start in range(0, records, GEN_CHUNK):
            n = min(GEN_CHUNK, records - start)
            profile = rng.integers(PROFILES, size=n)
            rows, cols = np.nonzero(rng.random((n, items), dtype=np.float32) < probs[profile])
            count = np.bincount(rows, minlength=n)
            size = np.where(count > 0, 3 * count, 1)  # "dd dd dd\n" or "\n"
            offset = np.concatenate(([0], np.cumsum(size)[:-1]))
            out = np.full(int(size.sum()), ord(" "), dtype=np.uint8)
            out[offset[count == 0]] = ord("\n")
            first = np.concatenate(([0], np.cumsum(count)[:-1]))
            pos = offset[rows] + 3 * (np.arange(rows.size) - first[rows])
            out[pos], out[pos + 1] = digits[cols, 0], digits[cols, 1]
            last = pos[np.r_[rows[1:] != rows[:-1], True]] + 2 if rows.size else pos
            out[last] = ord("\n")
            f.write(out.tobytes())


def split(path: Path, parts: int) -> Path:
    """A folder of ``parts`` files holding the lines of ``path`` in order (cut at line breaks, by size)."""
    folder = path.with_suffix(".parts")
    folder.mkdir(exist_ok=True)
    size = path.stat().st_size
    with path.open("rb") as f:
        for i in range(parts):
            with (folder / f"part-{i:03d}.txt").open("wb") as out:
                end = size * (i + 1) // parts
                while f.tell() < end and (block := f.read(min(GEN_CHUNK * 16, end - f.tell()))):
                    out.write(block)
                out.write(f.readline())  # up to the next line break
    return folder


def run_config(path: Path, items: int, mode: str, runs_dir: Path, name: str, args: argparse.Namespace) -> dict:
    """The run's config: the same plan in chunks (of one file or of a folder of parts) or in memory."""
    return {
        "name": name, "runs_dir": str(runs_dir), "threads": 1,
        "data": {"source": "transactions", "path": str(path), "n_items": items,
                 "chunk_mb": None if mode == "memory" else args.chunk_mb},
        "privacy": {"target_epsilon": 1.0},
        "partition": {"method": "lloyd", "k": args.k, "iterations": args.iterations, "target_epsilon": 0.2},
        "model": {"kind": "vae", "options": {"hidden": [64], "latent": 4}, "output_bias": "noisy_mean",
                  "length_noise_multiplier": 20.0},
        "training": {"epochs": args.epochs, "sampling_rate": args.sampling_rate, "clipping": "fixed",
                     "clip_norm": 10.0, "chunk_window": args.window, "checkpoint_every": 10**9,
                     "checkpoint_seconds": 10**9, "log_every": 10**9},
    }


def worker(config_file: Path, out_dir: Path, release: int, fmt: str = "csv") -> int:
    """One rank: the whole run, then its own peak RSS and times to ``out_dir/rank<r>.json`` (the stages' seconds too
    when the config asks for ``nonprivate_diagnostics``)."""
    from dpgm.api.synthesizer import write_release
    from dpgm.config import config_from_dict
    from dpgm.pipeline.run import train
    from dpgm.privacy import collective

    cfg = config_from_dict(json.loads(config_file.read_text()), [])
    start = time.perf_counter()
    with collective.launched():
        run_dir, report = train(cfg, progress=False)
        rank = collective.rank()
    trained = time.perf_counter()
    if rank == 0 and release:  # the synthetic records, from the released models
        write_release(run_dir, out_dir / "synthetic.txt", release, fmt=fmt, progress=False)
    seconds = time.perf_counter() - start
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    (out_dir / f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "peak_rss_mib": rss_mib, "seconds": seconds, "train_s": trained - start,
         "release_s": seconds - (trained - start), "epsilon": report["epsilon"],
         "stage_seconds": report.get("nonprivate_seconds"), "plan": report.get("plan")}))
    return 0


def launch(config: dict, out: Path, ranks: int, release: int, fmt: str = "csv") -> tuple[float, list[dict]]:
    """``config``'s whole run in fresh processes on ``ranks`` ranks (torchrun, gloo), ``release`` records drawn on
    rank 0 in ``fmt``: the wall seconds and every rank's ``worker`` record, by rank."""
    config_file = out / "config.json"
    config_file.write_text(json.dumps(config))
    me = [str(Path(__file__).resolve()), "--worker", str(config_file), str(out), "--release", str(release),
          "--format", fmt]
    cmd = [sys.executable, *me] if ranks == 1 else \
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *me]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    wall = time.perf_counter() - start
    return wall, sorted((json.loads(p.read_text()) for p in out.glob("rank*.json")), key=lambda r: r["rank"])


def measure(path: Path, records: int, ranks: int, mode: str, args: argparse.Namespace, scratch: Path) -> dict:
    """One run in fresh processes; every rank's peak RSS."""
    name = f"{mode}_{records}_{ranks}"
    out = scratch / name
    out.mkdir()
    source = split(path, args.parts) if mode == "parts" else path
    wall, per_rank = launch(run_config(source, args.items, mode, scratch / "runs", name, args), out, ranks,
                            args.release)
    row = {"records": records, "ranks": ranks, "mode": mode, "wall_s": wall, "per_rank": per_rank,
           **({"parts": args.parts} if mode == "parts" else {})}
    print(f"{records:>11,} records, {ranks} rank(s), {mode:6s}: {wall:7.1f} s; peak RSS per rank "
          + ", ".join(f"{r['peak_rss_mib']:.0f} MiB" for r in per_rank), flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, type=Path, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--records", type=int, default=50_000_000, help="records in the generated file")
    ap.add_argument("--items", type=int, default=100, help="items (at most 100)")
    ap.add_argument("--runs", nargs="+", default=["5000000:1:memory", "5000000:1:chunks", "50000000:1:chunks",
                                                  "50000000:2:chunks"],
                    help="records:ranks:mode (mode chunks, parts or memory); records <= --records: the file's "
                         "first lines")
    ap.add_argument("--parts", type=int, default=8, help="files of the folder that mode 'parts' reads")
    ap.add_argument("--chunk-mb", type=float, default=64.0, help="data.chunk_mb of the chunked runs")
    ap.add_argument("--k", type=int, default=8, help="parts (DP Lloyd)")
    ap.add_argument("--iterations", type=int, default=5, help="DP Lloyd iterations")
    ap.add_argument("--sampling-rate", type=float, default=2e-5, help="DP-SGD sampling rate q")
    ap.add_argument("--epochs", type=float, default=0.01, help="DP-SGD epochs (steps = epochs / q)")
    ap.add_argument("--window", type=int, default=250, help="training.chunk_window")
    ap.add_argument("--release", type=int, default=100_000, help="synthetic records released")
    ap.add_argument("--format", default="csv", help=argparse.SUPPRESS)  # the worker's release format
    ap.add_argument("--dir", type=Path, default=None, help="where the file and runs go (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="write results here")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(*args.worker, args.release, args.format)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        scratch = Path(tmp)
        files: dict[int, Path] = {}
        start = time.perf_counter()
        for records in sorted({int(r.split(":")[0]) for r in args.runs}):
            files[records] = scratch / f"large_{records}.txt"
            generate(files[records], records, args.items)
        generated = time.perf_counter() - start
        sizes = {r: p.stat().st_size for r, p in files.items()}
        print(f"generated {', '.join(f'{r:,} records ({s / 2**20:.0f} MiB)' for r, s in sizes.items())} "
              f"in {generated:.0f} s", flush=True)
        rows = []
        for spec in args.runs:
            records, ranks, mode = spec.split(":")
            rows.append(measure(files[int(records)], int(records), int(ranks), mode, args, scratch))
    if args.json is not None:
        write_json(args.json, {"items": args.items, "file_mib": {r: s / 2**20 for r, s in sizes.items()},
                               "generate_s": generated, "threads_per_rank": 1,
                               "plan": run_config(Path("FILE"), args.items, "chunks", Path("RUNS"), "NAME", args),
                               "results": rows})
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
