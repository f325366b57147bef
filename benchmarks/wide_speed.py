"""Wall seconds per stage of the generic config on a wide synthetic transaction dataset, here and at a baseline.

The data: ``--records`` records over ``--items`` items from a public seed, each record drawn from one of
``--profiles`` sparse profiles (per profile, item weights Gamma(0.3) scaled to ``--length`` items per record
on average, each item then drawn independently). ``configs/transactions.yaml`` (``rules: public``; above
1,000 items a VAE per part by DP-SGD) trains on it with ``--threads`` threads and a fixed seed, then the
release draws ``--release`` records (default n) to a transactions file.

Per stage (seconds): the data's hand-over (``loading``), each statistics stage, ``training`` (DP-SGD),
``calibration`` (to the noisy part means), and the release's ``drawing``, ``tilt`` and ``writing``, with the
process's peak resident memory by the end of each (``peak_rss_mib``; the generated data held throughout). They are
measured by wrapping those functions here, the same way for this tree and for ``--baseline`` (a source tree
of another commit, say ``git archive main | tar -x -C /tmp/base``), which runs in a subprocess with its own
``dpgm`` first on the path, after this tree's run, on the same machine. The JSON gives both and each
stage's speed-up (baseline / this). Run it on one core: ``OMP_NUM_THREADS=1 taskset -c 0``.

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/wide_speed.py --baseline /tmp/base \\
        --json benchmarks/results/wide_speed.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

#: Records drawn per block while generating (a dense block of floats per record and item).
GEN_BLOCK = 20_000
#: The generic config for a transaction file.
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "transactions.yaml"


def wide_dataset(records: int, items: int, *, length: float, profiles: int, seed: int) -> Any:
    """``records`` sparse records over ``items`` items, a mixture of ``profiles`` profiles (module docstring)."""
    from dpgm.data.dataset import BinaryDataset

    rng = np.random.default_rng([seed, 2000])
    weights = rng.gamma(0.3, 1.0, size=(profiles, items))
    probs = np.clip(weights / weights.sum(axis=1, keepdims=True) * length, 0.0, 0.9).astype(np.float32)
    rows, cols = [], []
    for start in range(0, records, GEN_BLOCK):
        n = min(GEN_BLOCK, records - start)
        r, c = np.nonzero(rng.random((n, items), dtype=np.float32) < probs[rng.integers(profiles, size=n)])
        rows.append(r + start)
        cols.append(c)
    r, c = np.concatenate(rows), np.concatenate(cols)
    x = sp.csr_matrix((np.ones(r.size, dtype=np.uint8), (r, c)), shape=(records, items))
    return BinaryDataset(records=x, item_names=[str(i) for i in range(items)], name=f"wide{items}x{records}")


class Clock:
    """Wall and CPU seconds (this process's: on a shared machine the CPU seconds are the steadier) by label, of
    calls to functions wrapped in place (``wrap``), and the process's peak resident memory (MiB) when each ends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.peak_mib: dict[str, float] = {}

    def timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start
                self.cpu[label] = self.cpu.get(label, 0.0) + time.process_time() - cpu
                self.peak_mib[label] = peak_rss_mib()
        return wrapper

    def wrap(self, owner: Any, name: str, label: str) -> None:
        setattr(owner, name, self.timed(label, getattr(owner, name)))


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB (``ru_maxrss`` is in kB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def instrument(clock: Clock) -> None:
    """Time every stage's run, DP-SGD, the calibration and the release's drawing, tilt and writing."""
    import dpgm.pipeline.run as run_mod
    import dpgm.release as release_mod
    import dpgm.stages.training as training_mod

    planned = run_mod.planned_stages

    def timed_stages(cfg: Any) -> list[Any]:
        stages = planned(cfg)
        for stage in stages:
            stage.run = clock.timed(stage.name, stage.run)
        return stages

    run_mod.planned_stages = timed_stages
    clock.wrap(training_mod.TrainingStage, "train", "training")
    clock.wrap(training_mod, "calibrate_to_means", "calibration")
    clock.wrap(release_mod, "draw_records", "drawing")
    for name in ("features", "length_problem", "resample"):
        clock.wrap(release_mod, name, "tilt")
    for name in ("write_csv", "write_transactions"):
        clock.wrap(release_mod, name, "release_loop")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """This interpreter's dpgm: the run and the release, seconds per stage."""
    from dpgm.config import load_config
    from dpgm.pipeline.run import train
    from dpgm.release import release
    from dpgm.threads import set_threads

    set_threads(args.threads)
    clock = Clock()
    instrument(clock)
    start = time.perf_counter()
    data = wide_dataset(args.records, args.items, length=args.length, profiles=args.profiles, seed=args.seed)
    generated_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(CONFIG, [f"runs_dir={tmp}", "name=wide", f"seed={args.seed}", f"threads={args.threads}"])
        start = time.perf_counter()
        run_dir, report = train(cfg, data=data, progress=False)
        run_s = time.perf_counter() - start
        start = time.perf_counter()
        release(run_dir, Path(tmp) / "synthetic.txt", args.release or args.records, fmt="transactions",
                seed=args.seed, progress=False)
        release_s = time.perf_counter() - start
        digest = (Path(tmp) / "synthetic.txt").read_bytes()
    for seconds in (clock.seconds, clock.cpu):
        seconds["writing"] = seconds.pop("release_loop", 0.0) - seconds.get("drawing", 0.0) - seconds.get("tilt", 0.0)
    if "release_loop" in clock.peak_mib:
        clock.peak_mib["writing"] = clock.peak_mib.pop("release_loop")
    import dpgm

    return {"dpgm": str(Path(dpgm.__file__).parent), "generate_s": round(generated_s, 3), "run_s": round(run_s, 3),
            "release_s": round(release_s, 3), "peak_rss_mib": clock.peak_mib, "peak_rss_mib_end": peak_rss_mib(),
            "seconds": {k: round(v, 3) for k, v in clock.seconds.items()},
            "cpu_seconds": {k: round(v, 3) for k, v in clock.cpu.items()}, "epsilon": report["epsilon"],
            "plan": report.get("plan"), "release_sha256": hashlib.sha256(digest).hexdigest()}


def write_records(data: Any, path: Path) -> None:
    """``data``'s records as a transactions file (item ids 0..n_items - 1), GEN_BLOCK records at a time."""
    from dpgm.release_writers import write_transactions

    x = data.records
    blocks = ((x[start:start + GEN_BLOCK].toarray(), None) for start in range(0, x.shape[0], GEN_BLOCK))
    with path.open("w") as fh:
        write_transactions(fh, blocks, list(range(x.shape[1])))


def measure_ranks(args: argparse.Namespace) -> dict[str, Any]:
    """The generic config on ``--ranks`` processes reading the same records from a transactions file, the release
    on rank 0 (``large_transactions.launch``: torchrun, gloo): wall seconds, and per rank its peak resident memory,
    training and release seconds and each stage's seconds (``nonprivate_diagnostics``: the run's own timings)."""
    import yaml
    from large_transactions import launch

    data = wide_dataset(args.records, args.items, length=args.length, profiles=args.profiles, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "wide.txt", Path(tmp) / "out"
        write_records(data, path)
        del data
        out.mkdir()
        config = yaml.safe_load(CONFIG.read_text())
        config.update(name="wide", runs_dir=str(Path(tmp) / "runs"), seed=args.seed, threads=args.threads,
                      nonprivate_diagnostics=True)
        config["data"] = {**config["data"], "path": str(path), "n_items": args.items}
        wall, per_rank = launch(config, out, args.ranks, args.release or args.records, fmt="transactions")
    return {"ranks": args.ranks, "wall_s": round(wall, 3), "per_rank": per_rank}


#: How each stage's time grows with the records (``project``): the release's stages with the records drawn, the
#: data's hand-over and statistics with the records read; DP-SGD (a fixed expected batch of PART_BATCH x k records
#: over a fixed number of steps, dpgm/rules.py, k at its cap from 100,000 records at epsilon 1) and the calibration
#: (a fixed sample per part) do not.
FIXED_STAGES = ("training", "calibration")


def project(measured: dict[str, Any], records: int, release: int) -> dict[str, Any]:
    """A measurement's seconds and CPU seconds per stage scaled to ``records`` read and ``release`` drawn (a
    projection, not a run: FIXED_STAGES stay, the release's stages scale by the records drawn, the rest by those
    read); valid while the plan keeps its parts and batch (k at its cap)."""
    settings, this = measured["settings"], measured["this"]
    read = records / settings["records"]
    drawn = release / (settings["release"] or settings["records"])
    scale = {name: 1.0 if name in FIXED_STAGES else drawn if name in ("drawing", "tilt", "writing") else read
             for name in this["seconds"]}
    out = {key: {name: round(value * scale[name], 1) for name, value in this[key].items()}
           for key in ("seconds", "cpu_seconds")}
    return {"kind": "projection, not a run", "projected_from": settings, "records": records, "release": release, **out,
            "total_cpu_seconds": round(sum(out["cpu_seconds"].values()), 1)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--items", type=int, default=2_000)
    p.add_argument("--length", type=float, default=10.0, help="mean items per record")
    p.add_argument("--profiles", type=int, default=20)
    p.add_argument("--release", type=int, default=None, help="records released (default: --records)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--ranks", type=int, default=0,
                   help="run on this many processes from a file (``measure_ranks``; 0: in this process, per stage)")
    p.add_argument("--baseline", type=Path, default=None, help="a source tree of another commit to time too")
    p.add_argument("--only", action="store_true", help=argparse.SUPPRESS)  # one measurement as JSON on stdout
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--project", type=Path, default=None, metavar="JSON",
                   help="no run: project this script's JSON output to --records and --release (``project``)")
    return p.parse_args(argv)


def run_baseline(args: argparse.Namespace) -> dict[str, Any]:
    """The same measurement in a subprocess whose ``dpgm`` is the baseline tree's."""
    env = dict(os.environ, PYTHONPATH=str(args.baseline.resolve()))
    names = ("records", "items", "length", "profiles", "release", "seed", "threads")
    flags = [f"--{name}={getattr(args, name)}" for name in names if getattr(args, name) is not None]
    out = subprocess.run([sys.executable, __file__, *flags, "--only"], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.project is not None:
        projected = project(json.loads(args.project.read_text()), args.records, args.release or args.records)
        projected["source"] = args.project.name
        print(json.dumps(projected, indent=1))
        if args.json:
            from provenance import write_json

            write_json(args.json, projected)
        return 0
    if args.only:
        print(json.dumps(measure(args)))
        return 0
    if args.ranks:
        from provenance import write_json

        ranked = measure_ranks(args)
        print(json.dumps(ranked, indent=1))
        if args.json:
            write_json(args.json, {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                   **ranked})
        return 0
    from provenance import write_json

    here = measure(args)
    print(json.dumps(here, indent=1), flush=True)
    payload: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                               "this": here}
    if args.baseline is not None:
        base = run_baseline(args)
        payload["baseline"] = base
        for key in ("seconds", "cpu_seconds"):  # baseline / this, per stage
            payload[f"speedup_{key}"] = {name: round(base[key][name] / value, 2)
                                         for name, value in here[key].items() if name in base[key] and value > 0}
        payload["speedup_seconds"].update(run=round(base["run_s"] / here["run_s"], 2),
                                          release=round(base["release_s"] / here["release_s"], 2))
        payload["same_release"] = base["release_sha256"] == here["release_sha256"]
        print(json.dumps({k: payload[k] for k in ("speedup_seconds", "speedup_cpu_seconds", "same_release")},
                         indent=1))
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
