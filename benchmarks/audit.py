"""One-run privacy audit (Steinke, Nasr and Jagielski 2023) of dpgm's DP-SGD on small real configs.

For each setting, trains once with the configured noise and once with the noise off (the
``--leak`` test switch of dpgm.audit: the claim stays the configured plan's epsilon) and prints
the accountant's claimed epsilon beside the audit's lower bound and its confidence. Settings:
  digits        configs/digits.yaml as shipped (1,797 scikit-learn digits, DPNorm clipping);
  digits_eps1   the same with privacy.target_epsilon = 1 (training noise calibrated to it);
  mnist_2ep     configs/mnist.yaml for 2 epochs (60,000 records, q = 0.0017);
  mnist_5k      5,000 MNIST records, q = 0.02, 10 epochs, learning rate 0.005.
MNIST comes from $DPGM_DATA_DIR/mnist (never downloaded); a setting whose data is missing is
skipped. mnist_2ep is opt-in (--settings mnist_2ep; about 2 minutes on one thread).
Only the training stage is audited (one part; no partition, no noisy part means).

    OMP_NUM_THREADS=1 python benchmarks/audit.py --threads 1 --json /tmp/audit.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from provenance import write_json

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP threads hurt a shared machine

import torch

from dpgm.audit import AuditPlan, run_audit, summary
from dpgm.config import load_config
from dpgm.data import load_dataset
from dpgm.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
#: name -> (config file under configs/, overrides).
SETTINGS = {
    "digits": ("digits.yaml", []),
    "digits_eps1": ("digits.yaml", ["privacy.target_epsilon=1.0"]),
    "mnist_2ep": ("mnist.yaml", ["training.epochs=2"]),
    "mnist_5k": (
        "mnist.yaml",
        [
            "data.limit=5000",
            "training.sampling_rate=0.02",
            "training.epochs=10",
            "training.learning_rate=0.005",
        ],
    ),
}
DEFAULT_SETTINGS = ["digits", "digits_eps1", "mnist_5k"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--config", type=Path, default=ROOT / "configs" / "digits.yaml", help="base config"
    )
    ap.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=DEFAULT_SETTINGS)
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra config override for every setting (repeatable)",
    )
    ap.add_argument("--canaries", type=int, default=1000, help="m (default 1000)")
    ap.add_argument(
        "--guesses", type=int, default=100, help="guesses 'in' and 'out', each (default 100)"
    )
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    omp = os.environ.get("OMP_NUM_THREADS")
    print(f"torch threads: {torch.get_num_threads()} (OMP_NUM_THREADS={omp})")
    start = time.perf_counter()
    results = []
    for name in args.settings:
        config_file, overrides = SETTINGS[name]
        overrides = [*overrides, *args.overrides]
        cfg = load_config(ROOT / "configs" / config_file, overrides)
        try:
            data = load_dataset(cfg.data)
        except DataError as exc:
            print(f"[{name}] skipped: {exc}")
            continue
        for leak in (False, True):
            plan = AuditPlan(
                canaries=args.canaries,
                guesses_in=args.guesses,
                guesses_out=args.guesses,
                confidence=args.confidence,
                leak=leak,
            )
            report = run_audit(cfg, plan, seed=args.seed, data=data, progress=sys.stderr.isatty())
            label = f"{name}, noise {'OFF (leak test)' if leak else 'on'}"
            print(f"[{label}]  ({report['wall_s']:.1f} s)\n{summary(report)}", flush=True)
            results.append(
                {"setting": name, "config_file": config_file, "overrides": overrides, **report}
            )
    wall = time.perf_counter() - start
    print(f"total wall time {wall:.1f} s on {torch.get_num_threads()} torch thread(s)")
    if args.json:
        write_json(
            args.json,
            {
                "benchmark": "one-run privacy audit (Steinke, Nasr and Jagielski 2023, Thm 5.2)",
                "results": results,
            },
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
