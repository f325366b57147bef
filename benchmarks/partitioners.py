"""Clustering quality of every dpgm partitioner against epsilon and k, beside non-private k-means++.

Datasets (``--datasets``):

- ``google``: Google's synthetic mixture (learning/clustering/demo/data_generation.py, rebuilt
  here): 100,000 points in d = 100, 64 Gaussians of std 1 / (100 sqrt(100)) per coordinate around
  centres uniform in the ball of radius 0.99, clipped to radius 1. k from 2 to 64 at epsilon 1,
  and epsilon from 0.1 to 10 at k = 64.
- ``mnist``: the 60,000 MNIST training images binarised at 0.5, k = 10 (the test split is the
  public sample: its mean centres the LSH tree, its k-means++ seeds start DP Lloyd).
- ``mnist50``: the same images times a public random Gaussian 784 x 50 projection, centred at the
  projected public mean, radius the largest projected public norm; k = 10.

Methods: lsh_tree, lloyd, kernel_kmeans (RBF gamma = 1 / radius^2 on real-valued data, the
config default on pixels), subspace (SuLQ k-plane) when it is registered, and kmeans++
(scikit-learn, one k-means++ start, non-private: the reference). Scores: ``loss`` = mean squared
distance of a point to its nearest released centre (Google's normalised k-means objective;
methods whose centres live elsewhere use their parts' means), ``loss_parts`` = the same to the
means of the parts (the partition's own cost), ``loss_ratio`` = loss / kmeans++'s loss on the same
data, ``acc`` = clustering accuracy against the true labels. delta = 1e-6.

    OMP_NUM_THREADS=1 python benchmarks/partitioners.py --seeds 3 --json benchmarks/results/partitioners.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from provenance import write_json

from dpgm.clustering import PARTITIONERS, make_partitioner
from dpgm.config import PartitionConfig
from dpgm.evaluation.metrics import clustering_accuracy
from dpgm.privacy.accountant import Accountant

DELTA = 1e-6
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
GOOGLE_KS = (2, 4, 8, 16, 32, 64)
METHODS = ("lsh_tree", "lloyd", "kernel_kmeans", "subspace")
#: Google's library (learning/clustering, private_lsh_clustering) on its own generator at epsilon 1,
#: delta 1e-6, three seeds: the loss as measured with that library (it is not on PyPI and needs
#: Bazel or its setup.py and dp_accounting; not rerun here). k -> losses; kmeans++ -> its range.
GOOGLE_LIBRARY = {"losses": {8: [0.80, 0.80, 0.84], 64: [0.0062, 0.0061, 0.0186]},
                  "kmeans++": {8: "0.79-0.80", 64: "0.0001"}}


def google_mixture(seed: int, n: int = 100_000, dim: int = 100, clusters: int = 64, ratio: float = 100.0,
                   radius: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Google's ``generate_synthetic_dataset``: centres uniform in the ball of radius r (1 - 1/ratio),
    n / clusters points each with per-coordinate std sqrt(r) / (ratio sqrt(d)), clipped to r."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(clusters, dim))
    centre_radius = radius * (1 - 1 / ratio) * rng.uniform(size=clusters) ** (1 / dim)
    centres = g / np.linalg.norm(g, axis=1, keepdims=True) * centre_radius[:, None]
    per = np.full(clusters, n // clusters)
    per[-1] += n % clusters
    labels = np.repeat(np.arange(clusters), per)
    x = rng.normal(0, np.sqrt(radius) / (ratio * np.sqrt(dim)), size=(n, dim)) + centres[labels]
    x *= np.minimum(1.0, radius / np.linalg.norm(x, axis=1))[:, None]
    return x, labels


def mean_sq_distance(x: np.ndarray, centres: np.ndarray, chunk: int = 8192) -> float:
    """Mean over rows of the squared distance to the nearest centre (dense rows)."""
    c = np.asarray(centres, dtype=np.float64)
    total = 0.0
    for start in range(0, len(x), chunk):
        block = np.asarray(x[start : start + chunk], dtype=np.float64)
        d = (block**2).sum(1)[:, None] - 2 * block @ c.T + (c**2).sum(1)[None, :]
        total += float(np.maximum(d.min(axis=1), 0.0).sum())
    return total / len(x)


def part_means(x: np.ndarray, assignments: np.ndarray, k: int) -> np.ndarray:
    """Each part's mean (an empty part's centre is the overall mean: it is nobody's nearest)."""
    counts = np.bincount(assignments, minlength=k).astype(np.float64)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, assignments, x)
    means = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], x.mean(axis=0))
    return means


def partition_config(method: str, k: int, eps: float, radius: float, real: bool, public: bool) -> PartitionConfig:
    """The partitioner's config at this epsilon: its defaults, the public radius where it takes one."""
    options: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if method == "lsh_tree":
        options = {"radius": radius} if real else {"centre": "public"}
    elif method == "lloyd":
        extra = {"clip_norm": radius if real else None, "init": "public" if public else "random"}
    elif method == "kernel_kmeans":
        extra = {"init": "random", **({"gamma": 1.0 / radius**2} if real else {})}
    elif method == "subspace":
        options = {"solver": "sulq", "radius": radius} if real else {"solver": "sulq"}
    return PartitionConfig(method=method, k=k, target_epsilon=eps, options=options, **extra)


def run_one(method: str, data: SimpleNamespace, k: int, eps: float, seed: int) -> dict[str, Any]:
    """One private fit: its scores and its wall time."""
    cfg = partition_config(method, k, eps, data.radius, data.real, data.public is not None)
    model = make_partitioner(cfg, public=data.public)
    start = time.perf_counter()
    part = model.fit(data.private, Accountant(delta=DELTA), np.random.default_rng(seed))
    seconds = time.perf_counter() - start
    centres = part.centres
    x = data.dense
    in_space = centres is not None and np.shape(centres)[1] == x.shape[1] and method != "subspace"
    parts = mean_sq_distance(x, part_means(x, part.assignments, k))
    loss = mean_sq_distance(x, centres) if in_space else parts
    return {"loss": loss, "loss_parts": parts, "acc": clustering_accuracy(data.labels, part.assignments),
            "seconds": seconds, "centres": "released" if in_space else "part means"}


def kmeans_pp(data: SimpleNamespace, k: int, seed: int) -> dict[str, Any]:
    """Non-private scikit-learn k-means (one k-means++ start), the reference loss."""
    from sklearn.cluster import KMeans

    start = time.perf_counter()
    km = KMeans(n_clusters=k, init="k-means++", n_init=1, random_state=seed).fit(data.dense)
    seconds = time.perf_counter() - start
    loss = mean_sq_distance(data.dense, km.cluster_centers_)
    return {"loss": loss, "loss_parts": loss, "acc": clustering_accuracy(data.labels, km.labels_),
            "seconds": seconds, "centres": "released"}


def load(name: str, data_dir: str | None, records: int = 100_000) -> SimpleNamespace:
    """A dataset: the private records as the partitioners read them, dense rows for scoring, labels
    (``records``: the size of Google's mixture)."""
    if name == "google":
        x, labels = google_mixture(seed=0, n=records)
        rows = SimpleNamespace(records=x, n_items=x.shape[1])
        return SimpleNamespace(name=name, private=rows, public=None, dense=x, labels=labels, radius=1.0, real=True)
    from dpgm.data.mnist import load_mnist

    private = load_mnist("train", threshold=0.5, directory=data_dir)
    public = load_mnist("test", threshold=0.5, directory=data_dir)
    if name == "mnist":
        dense = np.asarray(private.records, dtype=np.float32)
        return SimpleNamespace(name=name, private=private, public=public, dense=dense, labels=private.labels,
                               radius=float(np.sqrt(private.n_items)), real=False)
    projection = np.random.default_rng(50).normal(size=(private.n_items, 50)) / np.sqrt(50)  # public
    pub = np.asarray(public.records, dtype=np.float64) @ projection
    centre = pub.mean(axis=0)
    pub -= centre
    x = np.asarray(private.records, dtype=np.float64) @ projection - centre
    radius = float(np.linalg.norm(pub, axis=1).max())
    return SimpleNamespace(name=name, private=SimpleNamespace(records=x, n_items=50),
                           public=SimpleNamespace(records=pub, n_items=50, where="projected MNIST test split"),
                           dense=x, labels=private.labels, radius=radius, real=True)


def grid(name: str, epsilons: Sequence[float], ks: Sequence[int] = GOOGLE_KS) -> list[tuple[int, float]]:
    """(k, epsilon) settings of a dataset (``ks``: Google's mixture's numbers of parts at epsilon 1)."""
    if name == "google":
        return [(k, 1.0) for k in ks] + [(max(ks), e) for e in epsilons if e != 1.0]
    return [(10, e) for e in epsilons]


def run(args: argparse.Namespace, emit: Callable[[dict[str, Any]], None], done: set[tuple]) -> None:
    methods = [m for m in args.methods if m in PARTITIONERS.names()]
    for name in args.datasets:
        data = load(name, args.data_dir, args.records)
        for k, eps in grid(name, args.epsilons, args.ks):
            for seed in range(args.seeds):
                base_key = (name, "kmeans++", k, 0.0, seed)
                if base_key not in done:
                    emit({"dataset": name, "method": "kmeans++", "k": k, "epsilon": None, "seed": seed,
                          **kmeans_pp(data, k, seed)})
                    done.add(base_key)
                for method in methods:
                    key = (name, method, k, eps, seed)
                    if key in done:
                        continue
                    emit({"dataset": name, "method": method, "k": k, "epsilon": eps, "seed": seed,
                          **run_one(method, data, k, eps, seed)})
                    done.add(key)


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and spread over seeds of loss, loss / kmeans++ loss (same data, k and seed) and accuracy."""
    base = {(r["dataset"], r["k"], r["seed"]): r["loss"] for r in rows if r["method"] == "kmeans++"}
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["method"], r["k"], r["epsilon"]), []).append(r)
    out = []
    for (dataset, method, k, eps), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2],
                                                                                kv[0][3] or 0)):
        ratios = [r["loss"] / base[(dataset, k, r["seed"])] for r in rs if (dataset, k, r["seed"]) in base]
        losses = [r["loss"] for r in rs]
        parts = [r["loss_parts"] / base[(dataset, k, r["seed"])] for r in rs if (dataset, k, r["seed"]) in base]
        accs = [r["acc"] for r in rs]
        out.append({"dataset": dataset, "method": method, "k": k, "epsilon": eps, "seeds": len(rs),
                    "loss_mean": float(np.mean(losses)), "loss_min": min(losses), "loss_max": max(losses),
                    "loss_ratio_mean": float(np.mean(ratios)) if ratios else None,
                    "loss_ratio_max": max(ratios) if ratios else None,
                    "parts_ratio_mean": float(np.mean(parts)) if parts else None,
                    "acc_mean": float(np.mean(accs)), "acc_std": float(np.std(accs)),
                    "seconds_mean": float(np.mean([r["seconds"] for r in rs]))})
    return out


def plot(table: list[dict[str, Any]], path: Path) -> None:
    """Loss ratio against epsilon (and against k for Google's mixture), one panel per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(t["dataset"], "k" if t["dataset"] == "google" else "epsilon") for t in table})
    panels += [("google", "epsilon")] if any(t["dataset"] == "google" for t in table) else []
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (dataset, axis) in zip(axes[0], panels):
        for method in sorted({t["method"] for t in table if t["dataset"] == dataset} - {"kmeans++"}):
            pts = [t for t in table if t["dataset"] == dataset and t["method"] == method
                   and (t["epsilon"] == 1.0 if axis == "k" else (dataset != "google" or t["k"] == 64))]
            pts.sort(key=lambda t: t[axis])
            ax.plot([t[axis] for t in pts], [t["loss_ratio_mean"] for t in pts], marker="o", label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel(axis)
        ax.set_ylabel("k-means loss / k-means++'s")
        ax.set_title(f"{dataset}" + (" (epsilon 1)" if axis == "k" else " (k = 64)" if dataset == "google" else ""))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["google", "mnist50", "mnist"], choices=["google", "mnist", "mnist50"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), help="registered partition.method names")
    p.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    p.add_argument("--seeds", type=int, default=3, help="runs per setting (seeds 0..N-1)")
    p.add_argument("--records", type=int, default=100_000, help="google: records of the mixture (default 100,000)")
    p.add_argument("--ks", type=int, nargs="+", default=list(GOOGLE_KS), help="google: numbers of parts at epsilon 1")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: dpgm's data folder)")
    p.add_argument("--json", type=Path, help="write the results here (rows so far are kept: the run resumes)")
    p.add_argument("--plot", type=Path, help="PNG path (default: the JSON path with .png)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict[str, Any]] = []
    if args.json and args.json.exists():
        rows = json.loads(args.json.read_text())["rows"]
    done = {(r["dataset"], r["method"], r["k"], r["epsilon"] or 0.0, r["seed"]) for r in rows}

    def save() -> None:
        if args.json:
            write_json(args.json, {"delta": DELTA, "google_library": GOOGLE_LIBRARY, "rows": rows,
                                   "summary": summary(rows)})

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "centres"}), flush=True)
        save()

    run(args, emit, done)
    save()  # also when every row was there already: the summary and provenance of this code
    if args.plot or args.json:
        plot(summary(rows), args.plot or args.json.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli

    sys.exit(run_cli(main))
