"""DP subspace clustering (Wang, Wang and Singh, NIPS 2015, Fig. 2): SuLQ vs Gibbs vs sample-aggregate.

The paper's two synthetic settings: n = 5000, d = 5, k = 3, q = 3, sigma = 0.01 and n = 1000, d = 10,
k = 3, q = 3, sigma = 0.1 (k random q-dimensional subspaces, the column spans of Gaussian d x q
matrices; each point U_l y + w, y uniform on the unit sphere of R^q, w ~ N(0, sigma^2 I); rows clipped
to norm 1). Per epsilon in {0.1, 0.3, 1, 3, 10} (delta = 1e-6) and seed: SuLQ k-plane (10 and 50
iterations as the paper's SuLQ-10 and SuLQ-50, random start; its 2T + 1 Gaussian releases calibrated
together), Gibbs (the exponential mechanism,
``--sweeps`` sweeps, the last sample released; random start, and the paper's non-private TSC start),
sample-aggregate with TSC on n / 100 blocks; non-private references: k-plane from the true subspaces,
and TSC. Metrics: the k-means subspace cost (Eq. 3) and the Wasserstein distance to the truth (Eq. 2).
Diagnostic ``target``: the log of Eq. 10's subspace marginal, sum_i log sum_l exp(-epsilon/2 d^2(x_i, S_l)),
at the collapsed solution (every S_l the top-q principal subspace) minus at the truth: where it is
positive the exact exponential mechanism itself prefers collapsed subspaces to the truth.

    OMP_NUM_THREADS=1 python benchmarks/subspace_clustering.py --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json
from scipy.special import logsumexp

from dpgm.clustering.noisy_lloyd import lloyd_event, resolve_sigma
from dpgm.clustering.subspace.distance import (
    k_plane,
    kmeans_cost,
    orthonormal,
    random_bases,
    residuals,
    top_eigvecs,
    wasserstein_distance,
)
from dpgm.clustering.subspace.gibbs import gibbs_subspaces
from dpgm.clustering.subspace.sample_aggregate import sample_aggregate
from dpgm.clustering.subspace.sulq import sulq_k_plane, sulq_releases
from dpgm.clustering.subspace.tsc import tsc
from dpgm.privacy.accountant import Accountant

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = [
    {"name": "n5000_d5", "n": 5000, "d": 5, "k": 3, "q": 3, "sigma": 0.01},
    {"name": "n1000_d10", "n": 1000, "d": 10, "k": 3, "q": 3, "sigma": 0.1},
]
EPSILONS = [0.1, 0.3, 1.0, 3.0, 10.0]
DELTA = 1e-6
SULQ_ITERATIONS = {"sulq": 10, "sulq50": 50}
PRIVATE = ["sulq", "sulq50", "gibbs_random", "gibbs_tsc", "sample_aggregate"]
REFERENCES = ["k_plane_truth", "tsc"]


def synthetic(setting: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rows clipped to norm 1, true bases (k, d, q)) as in the paper's Sec. 5."""
    n, d, k, q = setting["n"], setting["d"], setting["k"], setting["q"]
    truth = np.stack([orthonormal(rng.normal(size=(d, q))) for _ in range(k)])
    labels = rng.integers(k, size=n)
    y = rng.normal(size=(n, q))
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    rows = np.einsum("ndq,nq->nd", truth[labels], y) + setting["sigma"] * rng.normal(size=(n, d))
    return rows / np.maximum(1.0, np.linalg.norm(rows, axis=1, keepdims=True)), truth


def run_private(method: str, rows: np.ndarray, setting: dict[str, Any], eps: float, sweeps: int,
                rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(released bases, the accountant's epsilon) of one private solver."""
    k, d, q = setting["k"], setting["d"], setting["q"]
    acc = Accountant(delta=DELTA)
    if method in SULQ_ITERATIONS:
        iterations = SULQ_ITERATIONS[method]
        sigma = resolve_sigma(1.0, eps, lloyd_event, sulq_releases(iterations), DELTA)
        bases = sulq_k_plane(rows, random_bases(k, d, q, rng), iterations=iterations, sigma=sigma,
                             radius=1.0, accountant=acc, rng=rng).bases
    elif method.startswith("gibbs"):
        init = tsc(rows, k, q, rng) if method == "gibbs_tsc" else random_bases(k, d, q, rng)
        bases = gibbs_subspaces(rows, init, epsilon=eps, radius=1.0, sweeps=sweeps, accountant=acc, rng=rng).bases
    else:
        bases = sample_aggregate(rows, k=k, q=q, blocks=max(3, setting["n"] // 100), epsilon=eps,
                                 accountant=acc, rng=rng).bases
    return bases, acc.spent().epsilon


def log_marginal(rows: np.ndarray, bases: np.ndarray, eps: float) -> float:
    """log of Eq. 10's subspace marginal (z summed out), up to its normalising constant."""
    return float(logsumexp(-0.5 * eps * residuals(rows, bases), axis=1).sum())


def target_gap(rows: np.ndarray, truth: np.ndarray, eps: float) -> float:
    """log marginal at the collapsed solution minus at the truth (> 0: the target prefers collapse)."""
    collapsed = np.stack([top_eigvecs(rows.T @ rows, truth.shape[2])] * truth.shape[0])
    return log_marginal(rows, collapsed, eps) - log_marginal(rows, truth, eps)


def measure(rows: np.ndarray, truth: np.ndarray, bases: np.ndarray) -> dict[str, float]:
    return {"wasserstein": wasserstein_distance(bases, truth), "cost": kmeans_cost(rows, bases)}


def run(seeds: int, sweeps: int, epsilons: list[float] = EPSILONS) -> list[dict[str, Any]]:
    records = []
    for setting in SETTINGS:
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            rows, truth = synthetic(setting, rng)
            base = {"setting": setting["name"], "seed": seed}
            t = time.perf_counter()
            ref = {"k_plane_truth": k_plane(rows, truth), "tsc": tsc(rows, setting["k"], setting["q"], rng)}
            for name, bases in ref.items():
                records.append({**base, "method": name, "epsilon": None, **measure(rows, truth, bases)})
            for eps in epsilons:
                records.append({**base, "method": "target", "epsilon": eps,
                                "collapsed_minus_truth": target_gap(rows, truth, eps)})
                for method in PRIVATE:
                    start = time.perf_counter()
                    bases, spent = run_private(method, rows, setting, eps, sweeps, rng)
                    records.append({**base, "method": method, "epsilon": eps, "accountant_epsilon": spent,
                                    "seconds": round(time.perf_counter() - start, 3), **measure(rows, truth, bases)})
            print(f"{setting['name']} seed {seed}: {time.perf_counter() - t:.1f}s", flush=True)
    return records


def summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds per (setting, method, epsilon)."""
    keys = sorted({(r["setting"], r["method"], r["epsilon"] if r["epsilon"] is not None else -1.0)
                   for r in records if r["method"] != "target"})
    out = []
    for setting, method, eps in keys:
        group = [r for r in records if r["setting"] == setting and r["method"] == method
                 and (r["epsilon"] if r["epsilon"] is not None else -1.0) == eps]
        row: dict[str, Any] = {"setting": setting, "method": method, "epsilon": None if eps < 0 else eps}
        for metric in ("wasserstein", "cost"):
            vals = np.array([r[metric] for r in group])
            row[f"{metric}_mean"], row[f"{metric}_std"] = float(vals.mean()), float(vals.std())
        out.append(row)
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(SETTINGS), figsize=(5.5 * len(SETTINGS), 7), squeeze=False)
    for col, setting in enumerate(SETTINGS):
        for line, metric in enumerate(("cost", "wasserstein")):
            ax = axes[line][col]
            for method in PRIVATE:
                pts = [r for r in rows if r["setting"] == setting["name"] and r["method"] == method]
                ax.errorbar(np.log10([r["epsilon"] for r in pts]), [r[f"{metric}_mean"] for r in pts],
                            yerr=[r[f"{metric}_std"] for r in pts], marker="o", capsize=3, label=method)
            for method, style in zip(REFERENCES, ("--", ":"), strict=True):
                ref = next(r for r in rows if r["setting"] == setting["name"] and r["method"] == method)
                ax.axhline(ref[f"{metric}_mean"], linestyle=style, color="grey", label=f"{method} (non-private)")
            ax.set_xlabel("log10 epsilon")
            ax.set_ylabel("k-means subspace cost" if metric == "cost" else "Wasserstein distance")
            ax.set_title(f"{setting['name']} (sigma={setting['sigma']})")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sweeps", type=int, default=300, help="Gibbs sweeps (the paper: 10000)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=EPSILONS, help="the budgets (default: the paper's)")
    parser.add_argument("--json", type=Path, default=RESULTS / "subspace_clustering.json")
    parser.add_argument("--png", type=Path, default=RESULTS / "subspace_clustering.png")
    args = parser.parse_args(argv)
    records = run(args.seeds, args.sweeps, args.epsilons)
    table = summary(records)
    gaps = {f"{s['name']} eps={eps:g}": float(np.mean([r["collapsed_minus_truth"] for r in records if r["method"]
                                                       == "target" and r["setting"] == s["name"]
                                                       and r["epsilon"] == eps]))
            for s in SETTINGS for eps in args.epsilons}
    write_json(args.json, {"target_collapsed_minus_truth": gaps, "settings": SETTINGS, "epsilons": args.epsilons, "delta": DELTA, "sulq_iterations":
                           SULQ_ITERATIONS, "gibbs_sweeps": args.sweeps, "summary": table, "runs": records})
    plot(table, args.png)
    for r in table:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        print(f"{r['setting']:10s} {r['method']:17s} eps={eps:5s} W={r['wasserstein_mean']:.3f}"
              f"±{r['wasserstein_std']:.3f} cost={r['cost_mean']:.4f}±{r['cost_std']:.4f}")
    for key, gap in gaps.items():
        print(f"target: log marginal, collapsed minus truth, {key}: {gap:+.1f}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
