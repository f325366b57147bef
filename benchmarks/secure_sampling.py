"""Cost of secure sampling: DP-SGD with and without ``privacy.secure_mode``, and the exact samplers.

1. DP-SGD records/s of the paper's VAE (784 -> 200 -> 2, Adam; binary MNIST, or random records of
   that shape when MNIST is absent) with the textbook N(0, 1) draw and with secure mode (one
   draw thrown away, then 4 draws per coordinate: mechanisms.standard_normal_), interleaved
   rounds, same batches (dpsgd_throughput.py's helpers); fixed and adaptive clipping.
2. Wall time of the released statistics of an msnbc-sized run (n = 989,818 records, 100 items,
   k = 20 parts): the empty-record count, part sizes, item counts, the record-length histogram
   and the k x items part sums (real-valued: snapped to a grid), each one ``gaussian_release``
   with the exact discrete Gaussian from the OS CSPRNG (OpenDP) and from a seeded generator
   (this repo's CKS sampler), against the floating-point ``rng.normal`` they replace.

    python benchmarks/secure_sampling.py --json benchmarks/results/secure_sampling.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from provenance import write_json

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as dpsgd_throughput.py, before torch loads

import torch
from dpsgd_throughput import PAPER_Q, load_records, run_round

from dpgm.models import VAE
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_gaussian, secure_generator
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.training.dpsgd import DPSGD, Mechanism

#: msnbc's shape: records, items (the top-100 universe the brief's tables use), parts.
MSNBC_N, ITEMS, PARTS = 989_818, 100, 20


def dpsgd_stepper(
    clipping: str, secure: bool, q: float, expected: float
) -> Callable[[torch.Tensor], None]:
    """One DP-SGD step of a fresh VAE (same initialisation for every variant)."""
    model = VAE(784, hidden=[200], latent=2, generator=torch.Generator().manual_seed(1))
    mechanism = Mechanism(sampling_rate=q, noise_multiplier=1.0, clipping=clipping, clip_norm=1.0)
    dp = DPSGD(
        [model],
        mechanism,
        expected_batch_sizes=[expected],
        optimizers=[torch.optim.Adam(model.parameters(), lr=1e-3)],
        generator=torch.Generator().manual_seed(2),
        secure_mode=secure,
    )
    return lambda batch: dp.step(batch) and None


def measure_dpsgd(data: torch.Tensor, batch_size: float, epochs: float, rounds: int) -> list[dict]:
    """Median records/s (and records per CPU-second) per clipping x secure mode, interleaved."""
    q = batch_size / data.shape[0]
    steps = max(1, round(epochs / q / rounds))
    keys = [(c, s) for c in ("fixed", "adaptive") for s in (False, True)]
    steppers = {key: dpsgd_stepper(*key, q, batch_size) for key in keys}
    for step in steppers.values():
        run_round(step, data, q, 2, seed=99)  # warm-up
    rates: dict[tuple[str, bool], list[float]] = {key: [] for key in keys}
    cpu_rates: dict[tuple[str, bool], list[float]] = {key: [] for key in keys}
    for r in range(rounds):
        for key, step in steppers.items():
            records, seconds, cpu = run_round(step, data, q, steps, seed=r)
            rates[key].append(records / seconds)
            cpu_rates[key].append(records / cpu)
    return [
        {
            "clipping": c,
            "secure_mode": s,
            "expected_batch_size": batch_size,
            "steps": steps * rounds,
            "records_per_s": statistics.median(rates[(c, s)]),
            "records_per_cpu_s": statistics.median(cpu_rates[(c, s)]),
        }
        for c, s in keys
    ]


def msnbc_statistics(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, float]]:
    """Statistics of msnbc's shape (values drawn once; the samplers' time does not depend on them)
    and their L2 sensitivities."""
    sizes = rng.multinomial(MSNBC_N, np.full(PARTS, 1.0 / PARTS))
    return {
        "empty_count": (np.array([0]), 1.0),
        "part_sizes": (sizes, 1.0),
        "item_counts": (rng.binomial(MSNBC_N, 0.1, size=ITEMS), 1.0),
        "record_lengths": (rng.multinomial(MSNBC_N, np.full(ITEMS + 1, 1.0 / (ITEMS + 1))), 1.0),
        "part_sums": ((rng.random((PARTS, ITEMS)) * sizes[:, None] * 0.1).astype(np.float64), 10.0),
    }


def time_release(
    value: np.ndarray, sensitivity: float, rng: np.random.Generator, repeats: int
) -> float:
    """Median seconds of one charged ``gaussian_release`` (multiplier 20, as part means)."""
    times = []
    for _ in range(repeats):
        accountant = Accountant(delta=1e-7)
        start = time.perf_counter()
        gaussian_release(
            value,
            sensitivity=sensitivity,
            noise_multiplier=20.0,
            accountant=accountant,
            stage="bench",
            rng=rng,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_samplers(repeats: int) -> list[dict]:
    """Seconds per release: OS CSPRNG (OpenDP), seeded exact, and the old float rng.normal."""
    stats = msnbc_statistics(np.random.default_rng(0))
    start = time.perf_counter()
    discrete_gaussian(1, 1.0)  # OpenDP's import and first measurement, timed apart
    out = [{"statistic": "opendp_first_call", "values": 1, "secure_s": time.perf_counter() - start}]
    for name, (value, sensitivity) in stats.items():
        float_rng = np.random.default_rng(1)
        start = time.perf_counter()
        for _ in range(repeats):
            value.astype(np.float64) + float_rng.normal(0.0, 20.0 * sensitivity, size=value.shape)
        old = (time.perf_counter() - start) / repeats
        out.append(
            {
                "statistic": name,
                "shape": list(value.shape),
                "values": int(value.size),
                "secure_s": time_release(value, sensitivity, secure_generator(), repeats),
                "seeded_exact_s": time_release(
                    value, sensitivity, np.random.default_rng(2), repeats
                ),
                "float_normal_s": old,
            }
        )
    timed = out[1:]
    total = {
        key: sum(r[key] for r in timed) for key in ("secure_s", "seeded_exact_s", "float_normal_s")
    }
    return [*out, {"statistic": "all", "values": sum(r["values"] for r in timed), **total}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--epochs", type=float, default=0.2, help="DP-SGD epochs per variant and batch size"
    )
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (median reported)")
    ap.add_argument("--batch-sizes", type=float, nargs="+", default=[PAPER_Q * 60000, 1024])
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    ap.add_argument("--records", type=int, default=60000, help="use the first N training records")
    ap.add_argument(
        "--data-dir", default=None, help="folder holding mnist/ (default: $DPGM_DATA_DIR)"
    )
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats per statistic (median)")
    ap.add_argument("--json", type=Path, default=None, help="write results here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    data, source = load_records(args.data_dir or os.environ.get("DPGM_DATA_DIR"), args.records)
    dpsgd = [r for b in args.batch_sizes for r in measure_dpsgd(data, b, args.epochs, args.rounds)]
    for r in dpsgd:
        print(
            f"batch {r['expected_batch_size']:6.0f} {r['clipping']:8s} "
            f"secure={r['secure_mode']!s:5s} {r['records_per_s']:8.0f} records/s "
            f"{r['records_per_cpu_s']:8.0f} per CPU-s"
        )
    samplers = measure_samplers(args.repeats)
    print(f"OpenDP import and first draw: {samplers[0]['secure_s']:.2f} s")
    for r in samplers[1:]:
        print(
            f"{r['statistic']:15s} {r['values']:5d} values: secure {r['secure_s'] * 1e3:8.2f} ms,"
            f" seeded exact {r['seeded_exact_s'] * 1e3:8.2f} ms,"
            f" float {r['float_normal_s'] * 1e3:6.3f} ms"
        )
    if args.json is not None:
        write_json(
            args.json,
            {
                "model": "VAE 784-200-2 (Adam, lr 1e-3)",
                "data": source,
                "n": int(data.shape[0]),
                "threads": args.threads,
                "epochs": args.epochs,
                "rounds": args.rounds,
                "dpsgd": dpsgd,
                "msnbc_shape": {"n": MSNBC_N, "items": ITEMS, "parts": PARTS},
                "opendp": importlib.metadata.version("opendp"),
                "samplers": samplers,
            },
        )
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
