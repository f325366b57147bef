"""Clustering accuracy on MNIST (DPGM paper Fig. 3): DP kernel k-means vs DP Lloyd and peers.

Private data: the 60,000 MNIST training images binarised at 0.5 (paper). Public data: the
10,000 test images (centre initialisation by greedy k-means++ seeding; gamma tuning). k = 10,
T = 20 noisy Lloyd iterations, delta = 1e-5, add/remove neighbours; sigma_K is calibrated
by the accountant so that the partition stage alone costs exactly each target epsilon.

Methods (JSON ``method``): kernel_kmeans (paired RFF map, d features = d/2 frequencies,
norm 1), lloyd (raw pixels clipped to sqrt(784) = 28, the paper's bound), diffprivlib
(IBM's KMeans; "unavailable" when it does not import), kmeans_pixels and kmeans_rff
(non-private scikit-learn k-means on pixels / on the same features: the ceilings).
With ``--ablation`` the DP methods also run with the paper's plain nearest-centre rule
(no noise-bias correction of the centre norms): kernel_kmeans_plain, lloyd_plain.

gamma: chosen from a sweep on the PUBLIC test split (``--tune-gamma``): half of it
initialises, the other half plays the private data with sigma_K scaled by 5,000 / 60,000 so
that its noise-to-signal ratio matches the real run. Mean ACC over eps in {0.1, 0.2, 0.5, 1,
8}, d = 200, 12 seeds: gamma 0.003: 0.476, 0.005: 0.477, 0.01: 0.470 (2 seeds, eps <= 1:
0.001: 0.36, 0.03: 0.29, 0.1: 0.14); 0.005 sits in the middle of that flat optimum.

    python benchmarks/clustering_accuracy.py --dims 200 --seeds 3 --json out.json
    python benchmarks/clustering_accuracy.py --tune-gamma 0.001 0.003 0.01 0.03 --seeds 2
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from provenance import write_json

from dpgm.clustering import DPKernelKMeans, DPLloyd
from dpgm.clustering.noisy_lloyd import lloyd_event, lloyd_releases, resolve_sigma
from dpgm.data.dataset import BinaryDataset
from dpgm.data.mnist import load_mnist
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.features.rff import RandomFourierFeatures
from dpgm.privacy.accountant import Accountant

EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
DIMS = (50, 100, 200, 500)
K, ITERATIONS, DELTA = 10, 20, 1e-5
#: Chosen with --tune-gamma on the public test split (see the module docstring).
GAMMA = 0.005
FEATURE_MAP = "paired"


def frequencies_for(d: int, feature_map: str) -> int:
    """Frequencies D giving d features: d/2 for the paired map, d for the cosine map."""
    return max(1, d // 2) if feature_map == "paired" else d


def timed(fn: Callable[..., float], *args: Any) -> tuple[float, float]:
    """(fn(*args), wall seconds)."""
    start = time.perf_counter()
    acc = fn(*args)
    return acc, time.perf_counter() - start


def summarise(
    method: str, d: int, epsilon: float | None, runs: list[tuple[float, float]]
) -> dict[str, Any]:
    accs = np.array([a for a, _ in runs])
    return {
        "method": method,
        "d": d,
        "epsilon": epsilon,
        "acc_mean": float(accs.mean()),
        "acc_std": float(accs.std()),
        "seconds": float(np.mean([s for _, s in runs])),
        "runs": len(runs),
    }


def dp_fit_acc(model: DPLloyd, private: BinaryDataset, seed: int) -> float:
    """Fit one DP partitioner (fresh accountant) and score its assignment of the private data."""
    partition = model.fit(private, Accountant(delta=DELTA), np.random.default_rng(seed))
    return clustering_accuracy(private.labels, partition.assignments)


def kernel_model(
    args: argparse.Namespace, d: int, eps: float, public: BinaryDataset, **kw: Any
) -> DPKernelKMeans:
    return DPKernelKMeans(
        k=K,
        iterations=ITERATIONS,
        target_epsilon=eps,
        init="public",
        public=public,
        features=frequencies_for(d, args.feature_map),
        feature_map=args.feature_map,
        gamma=args.gamma,
        **kw,
    )


def lloyd_model(eps: float, public: BinaryDataset, **kw: Any) -> DPLloyd:
    return DPLloyd(
        k=K, iterations=ITERATIONS, target_epsilon=eps, init="public", public=public, **kw
    )


def sklearn_acc(x: np.ndarray, labels: np.ndarray, seed: int) -> float:
    """Non-private k-means (scikit-learn, k-means++ init, one run)."""
    from sklearn.cluster import KMeans

    assignments = KMeans(n_clusters=K, n_init=1, random_state=seed).fit_predict(x)
    return clustering_accuracy(labels, assignments)


def rff_features(x: Any, d: int, args: argparse.Namespace, seed: int) -> np.ndarray:
    rff = RandomFourierFeatures.draw(
        x.shape[1],
        frequencies_for(d, args.feature_map),
        gamma=args.gamma,
        kind=args.feature_map,
        rng=np.random.default_rng(seed),
    )
    return rff.transform(x)


#: Runs diffprivlib's KMeans in a peer interpreter (diffprivlib 0.6.6 does not import with
#: scikit-learn 1.9): argv = records.npy, epsilon, seeds JSON, k.
_PEER_SCRIPT = """
import json, sys, time
import numpy as np
from diffprivlib.models import KMeans
x = np.load(sys.argv[1]).astype(np.float64)
bounds = (np.zeros(x.shape[1]), np.ones(x.shape[1]))
out = []
for seed in json.loads(sys.argv[3]):
    t = time.perf_counter()
    model = KMeans(n_clusters=int(sys.argv[4]), epsilon=float(sys.argv[2]), bounds=bounds, random_state=seed)
    pred = model.fit(x).predict(x)
    out.append([pred.tolist(), time.perf_counter() - t])
print(json.dumps(out))
"""


def diffprivlib_runs(
    private: BinaryDataset, eps: float, seeds: Sequence[int], peer_python: str | None = None
) -> list[tuple[float, float]] | str:
    """IBM diffprivlib KMeans on pixels (pure epsilon-DP); an explanation string if unavailable.

    With ``peer_python`` (an interpreter whose environment has diffprivlib, e.g. a venv with
    scikit-learn 1.8), the peer runs there and returns its predictions; else it is imported here.
    """
    if peer_python:
        import json
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/x.npy"
            np.save(path, private.dense(np.uint8))
            proc = subprocess.run([peer_python, "-c", _PEER_SCRIPT, path, str(eps), json.dumps(list(seeds)), str(K)],
                                  capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return f"unavailable: peer failed: {proc.stderr.strip().splitlines()[-1:]}"
        return [(clustering_accuracy(private.labels, np.asarray(pred)), sec) for pred, sec in json.loads(proc.stdout)]
    try:
        from diffprivlib.models import KMeans as DiffprivKMeans
    except Exception as exc:  # noqa: BLE001 - any import failure means "unavailable"
        return f"unavailable: {type(exc).__name__}: {exc}"
    x = private.dense(np.float64)
    bounds = (np.zeros(x.shape[1]), np.ones(x.shape[1]))

    def one(seed: int) -> float:
        model = DiffprivKMeans(n_clusters=K, epsilon=eps, bounds=bounds, random_state=seed)
        return clustering_accuracy(private.labels, model.fit(x).predict(x))

    return [timed(one, seed) for seed in seeds]


def run_benchmark(
    args: argparse.Namespace, private: BinaryDataset, public: BinaryDataset
) -> list[dict[str, Any]]:
    seeds = list(range(args.seeds))
    results: list[dict[str, Any]] = []

    def record(row: dict[str, Any]) -> None:
        results.append(row)
        acc = (
            "   n/a"
            if row["acc_mean"] is None
            else f"{row['acc_mean']:.4f} +- {row['acc_std']:.4f}"
        )
        eps = "  -  " if row["epsilon"] is None else f"{row['epsilon']:5g}"
        extra = (
            f"  {row['seconds']:.2f} s/fit"
            if row["seconds"] is not None
            else f"  {row.get('status', '')}"
        )
        print(f"{row['method']:<20} d={row['d']:<4} eps={eps}  ACC {acc}{extra}", flush=True)

    pixels = private.dense(np.float32)
    runs = [timed(sklearn_acc, pixels, private.labels, s) for s in seeds]
    record(summarise("kmeans_pixels", private.n_items, None, runs))
    del pixels
    for d in args.dims:
        runs = []
        for s in seeds:
            z = rff_features(private.records, d, args, s)
            runs.append(timed(sklearn_acc, z, private.labels, s))
        record(summarise("kmeans_rff", d, None, runs))
    variants = [("", True)] + ([("_plain", False)] if args.ablation else [])
    for eps in args.epsilons:
        for d in args.dims:
            for suffix, debias in variants:
                model = kernel_model(args, d, eps, public, debias=debias)
                runs = [timed(dp_fit_acc, model, private, s) for s in seeds]
                record(summarise("kernel_kmeans" + suffix, d, eps, runs))
        for suffix, debias in variants:
            model = lloyd_model(eps, public, debias=debias)
            runs = [timed(dp_fit_acc, model, private, s) for s in seeds]
            record(summarise("lloyd" + suffix, private.n_items, eps, runs))
        dpl = diffprivlib_runs(private, eps, seeds, args.peer_python)
        if isinstance(dpl, str):
            record(
                {
                    "method": "diffprivlib",
                    "d": private.n_items,
                    "epsilon": eps,
                    "acc_mean": None,
                    "acc_std": None,
                    "seconds": None,
                    "runs": 0,
                    "status": dpl,
                }
            )
        else:
            record(summarise("diffprivlib", private.n_items, eps, dpl))
    return results


def tune_gamma(
    args: argparse.Namespace, public: BinaryDataset, n_private: int
) -> list[dict[str, Any]]:
    """Gamma sweep on the PUBLIC split only: half initialises, half is a stand-in for private data.

    sigma_K is calibrated for each epsilon, then scaled by n_half / n_private so the stand-in
    sees the noise-to-signal ratio of the real run.
    """
    order = np.random.default_rng(12345).permutation(public.n_records)
    half = public.n_records // 2
    init, stand_in = public.subset(order[:half]), public.subset(order[half:])
    scale = stand_in.n_records / n_private
    rows = []
    d = args.dims[0]
    for gamma in args.tune_gamma:
        tuned = argparse.Namespace(**{**vars(args), "gamma": gamma})
        ceiling = np.mean(
            [
                sklearn_acc(rff_features(stand_in.records, d, tuned, s), stand_in.labels, s)
                for s in range(args.seeds)
            ]
        )
        row = {"gamma": gamma, "d": d, "kmeans_rff": float(ceiling)}
        for eps in args.epsilons:
            sigma = (
                resolve_sigma(1.0, eps, lloyd_event, lloyd_releases(ITERATIONS), DELTA)
                * scale
            )
            accs = []
            for s in range(args.seeds):
                model = DPKernelKMeans(
                    k=K,
                    iterations=ITERATIONS,
                    noise_multiplier=sigma,
                    init="public",
                    public=init,
                    features=frequencies_for(d, args.feature_map),
                    feature_map=args.feature_map,
                    gamma=gamma,
                )
                accs.append(dp_fit_acc(model, stand_in, s))
            row[f"eps={eps:g}"] = float(np.mean(accs))
        rows.append(row)
        print(
            "  ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            ),
            flush=True,
        )
    return rows


def time_one_fit(
    private: BinaryDataset, public: BinaryDataset, args: argparse.Namespace, d: int = 200
) -> float:
    """Wall time of one DP kernel k-means fit (d features, T = 20, eps = 1) on all private records."""
    model = kernel_model(args, d, 1.0, public)
    start = time.perf_counter()
    model.fit(private, Accountant(delta=DELTA), np.random.default_rng(0))
    return time.perf_counter() - start


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """ACC against epsilon, one line per DP method and d; dashed lines for the non-private ceilings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    dp = [r for r in results if r["epsilon"] is not None and r["acc_mean"] is not None]
    colours: dict[Any, str] = {"lloyd": "black"}
    palette = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for key in sorted({(r["method"], r["d"]) for r in dp}):
        pts = sorted(
            (r["epsilon"], r["acc_mean"], r["acc_std"]) for r in dp if (r["method"], r["d"]) == key
        )
        e, m, s = map(np.array, zip(*pts))
        kernel = key[0].startswith("kernel")
        group = key[1] if kernel else key[0].removesuffix("_plain")
        colour = colours.setdefault(group, next(palette))
        label = f"{key[0]} d={key[1]}" if kernel else key[0]
        dashed = key[0].endswith("_plain")
        ax.errorbar(
            e,
            m,
            yerr=s,
            marker="o",
            ms=3,
            capsize=2,
            label=label,
            color=colour,
            linestyle="--" if dashed else "-",
            alpha=0.6 if dashed else 1.0,
        )
    for r in results:
        if r["epsilon"] is None:
            rff = r["method"] == "kmeans_rff"
            ax.axhline(
                r["acc_mean"],
                linestyle=":",
                linewidth=1,
                color=colours.get(r["d"], "grey") if rff else "black",
                label=f"{r['method']} d={r['d']} (non-private)"
                if rff
                else f"{r['method']} (non-private)",
            )
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (partition stage, delta = 1e-5, add/remove)")
    ax.set_ylabel("clustering accuracy (ACC)")
    ax.set_title("MNIST (60k train, binarised), k = 10, T = 20")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    p.add_argument("--dims", type=int, nargs="+", default=list(DIMS), help="feature dimensions d")
    p.add_argument("--seeds", type=int, default=5, help="runs per point (seeds 0..N-1)")
    p.add_argument("--gamma", type=float, default=GAMMA, help="RBF kernel exp(-gamma ||x-y||^2)")
    p.add_argument("--feature-map", choices=("paired", "cosine"), default=FEATURE_MAP)
    p.add_argument(
        "--ablation", action="store_true", help="also run the plain (paper) nearest-centre rule"
    )
    p.add_argument(
        "--tune-gamma",
        type=float,
        nargs="+",
        help="sweep these gammas on the public split and exit",
    )
    p.add_argument(
        "--data-dir", help="folder holding the MNIST IDX files (default: $DPGM_DATA_DIR/mnist)"
    )
    p.add_argument("--limit", type=int, help="the first N records of each MNIST split (default: all)")
    p.add_argument("--peer-python", default=None, metavar="PYTHON",
                   help="interpreter with diffprivlib installed (e.g. a venv with scikit-learn 1.8), for the peer")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--plot", type=Path, help="PNG path (default: the JSON path with .png)")
    args = p.parse_args(argv)
    if args.seeds < 1 or any(e <= 0 for e in args.epsilons) or any(d < 2 for d in args.dims):
        p.error("need --seeds >= 1, epsilons > 0 and dims >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    private = load_mnist("train", threshold=0.5, directory=args.data_dir, limit=args.limit)
    public = load_mnist("test", threshold=0.5, directory=args.data_dir, limit=args.limit)
    config = {
        "k": K,
        "iterations": ITERATIONS,
        "delta": DELTA,
        "gamma": args.gamma,
        "feature_map": args.feature_map,
        "neighbouring": "add_remove",
        "seeds": args.seeds,
        "n_private": private.n_records,
        "n_public": public.n_records,
        "init": "public (k-means++ seeding on the MNIST test split)",
    }
    if args.tune_gamma:
        rows = tune_gamma(args, public, private.n_records)
        if args.json:
            write_json(args.json, {"config": config, "tune_gamma": rows})
        return 0
    fit_seconds = time_one_fit(private, public, args)
    print(
        f"one DP kernel k-means fit (n={private.n_records}, d=200, T={ITERATIONS}): {fit_seconds:.2f} s",
        flush=True,
    )
    results = run_benchmark(args, private, public)
    if args.json:
        write_json(
            args.json, {"config": config, "fit_seconds_d200": fit_seconds, "results": results}
        )
    png = args.plot or (args.json.with_suffix(".png") if args.json else None)
    if png:
        plot(results, png)
        print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli

    sys.exit(run_cli(main))
