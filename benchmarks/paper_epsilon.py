"""Epsilon of the DPGM paper's full MNIST plan, and why it differs from the paper's 1.74.

Plan (paper, section 6): 20 private k-means iterations, each releasing noisy counts and noisy
feature sums with sigma_K = 40 (40 Gaussian releases); then 20 epochs (ceil(1/q) steps each)
of DP-SGD with q = 0.0017, a DPNorm histogram (sigma_C = 4) and the gradient (sigma_G = 1)
released from every Poisson batch; delta = 1e-5; add/remove neighbours.

Each row changes one thing, from the paper's own computation to dpgm's accountant:
the paper divides the Gaussian log moment by 4 sigma^2 (Lemma 1, docs/paper.md, note 1), uses its
Theorem 3 Hoelder split for the dependent histogram + gradient, integer lambda <= 32 and
the classical conversion eps = (alpha(lambda) - log delta) / lambda.

    python benchmarks/paper_epsilon.py --json paper_epsilon.json
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np
from provenance import write_json

from dpgm.privacy import rdp as R
from dpgm.privacy.calibrate import steps_for_epochs

PAPER_EPSILON = 1.74
#: The paper's grid: integer lambda <= 32, i.e. RDP orders 2..33 (order = lambda + 1).
PAPER_ORDERS = tuple(float(lam + 1) for lam in range(1, 33))


def _rows(q: float, epochs: int, sigma_c: float, sigma_g: float, sigma_k: float, iterations: int,
          delta: float) -> list[tuple[str, float, float]]:
    """(description, epsilon, order) for each step from the paper's computation to dpgm's."""
    steps = steps_for_epochs(epochs, q)
    releases = 2 * iterations
    sigmas = (sigma_c, sigma_g)

    def eps(orders: Sequence[float], kmeans_denominator: float, sgd: str, method: str) -> tuple[float, float]:
        a = np.asarray(orders)
        kmeans = releases * a / (kmeans_denominator * sigma_k**2)
        if sgd == "holder_split_fine":
            per_step = R.holder_split_rdp(a, q, sigmas, grid_steps=100)
        elif sgd == "holder_split":
            per_step = R.holder_split_rdp(a, q, sigmas)
        elif sgd == "holder":
            per_step = R.holder_sampled_rdp(a, q, sigmas)
        else:
            per_step = R.joint_sampled_rdp(a, q, sigmas)
        return R.rdp_to_epsilon(a, kmeans + steps * per_step, delta, method=method)

    plan = [
        ("paper's computation: Lemma 1 (/4 sigma^2), Hoelder split (j step 1/100), lambda<=32, classical",
         PAPER_ORDERS, 4.0, "holder_split_fine", "classical"),
        ("  same, j step 1/40 (dpgm's Hoelder grid)", PAPER_ORDERS, 4.0, "holder_split", "classical"),
        ("+ correct Gaussian RDP a/(2 sigma^2) for the k-means releases", PAPER_ORDERS, 2.0, "holder_split", "classical"),
        ("+ joint bound instead of the Hoelder split (docs/paper.md, note 6)", PAPER_ORDERS, 2.0, "joint", "classical"),
        ("+ dpgm's order grid (fractional from 1.1, integers to 256, up to 4096)", R.DEFAULT_ORDERS, 2.0, "joint",
         "classical"),
        ("+ tight conversion (Balle et al. 2020) = dpgm, bound='joint'", R.DEFAULT_ORDERS, 2.0, "joint", "tight"),
        ("dpgm, bound='holder' (Hoelder split, raised to joint where it undercuts)", R.DEFAULT_ORDERS, 2.0, "holder",
         "tight"),
        ("  paper's raw Hoelder split with dpgm's grid and conversion (not a valid bound)", R.DEFAULT_ORDERS, 2.0,
         "holder_split", "tight"),
    ]
    return [(label, *eps(orders, den, sgd, method)) for label, orders, den, sgd, method in plan]


def _pld_epsilon(q: float, epochs: int, sigma_c: float, sigma_g: float, sigma_k: float, iterations: int,
                 delta: float) -> float | None:
    """The same joint plan through dp_accounting's PLD accountant (near-exact), if installed."""
    try:
        import dp_accounting as dpa
    except ImportError:
        return None
    sigma_joint = R.joint_noise_multiplier((sigma_c, sigma_g))
    event = dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(sigma_k), 2 * iterations),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma_joint)),
                                steps_for_epochs(epochs, q)),
    ])
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sampling-rate", type=float, default=0.0017)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--sigma-c", type=float, default=4.0, help="DPNorm histogram noise multiplier")
    p.add_argument("--sigma-g", type=float, default=1.0, help="gradient noise multiplier")
    p.add_argument("--sigma-k", type=float, default=40.0, help="k-means noise multiplier")
    p.add_argument("--kmeans-iterations", type=int, default=20)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    plan = (args.sampling_rate, args.epochs, args.sigma_c, args.sigma_g, args.sigma_k, args.kmeans_iterations,
            args.delta)
    start = time.perf_counter()
    rows = _rows(*plan)
    pld = _pld_epsilon(*plan)
    print(f"paper's reported epsilon: {PAPER_EPSILON}")
    for label, eps, order in rows:
        print(f"{eps:8.4f}  (order {order:g})  {label}")
    if pld is not None:
        print(f"{pld:8.4f}  PLD accountant (dp_accounting) on the joint plan: what RDP leaves on the table")
    print(f"[{time.perf_counter() - start:.1f} s]")
    if args.json:
        write_json(args.json, {
            "plan": vars(args) | {"steps": steps_for_epochs(args.epochs, args.sampling_rate)},
            "paper_epsilon": PAPER_EPSILON,
            "rows": [{"label": lab.strip(), "epsilon": e, "order": o} for lab, e, o in rows],
            "pld_epsilon": pld,
        })
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
