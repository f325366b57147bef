"""Images: train on synthetic, test on real (MNIST, Fashion-MNIST), and each partitioner's MNIST release."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pages.common import RESULTS, load, mean_sd, num, seconds, source, table

#: Train on synthetic, test on real: the runs of the shipped labelled MNIST configs.
TOS_FILES = (
    "tos/final_mnist_s01.json", "tos/final_mnist_s1.json", "tos/final_mnist_s2.json",
    "tos/final_s12_seed0.json", "tos/final_s12_seed1.json", "tos/final_s12_seed2.json",
    "tos/final_fashion_s0.json",
)


TOS_METHODS = {"dpgm": "dpgm", "nonprivate": "dpgm, no noise", "real": "real images"}


def train_on_synthetic() -> str:
    """A fixed CNN trained on labelled dpgm images, tested on the real test set."""
    acc: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    secs: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for name in TOS_FILES:
        data = load(name)
        s = data["settings"]
        for r in data["results"]:
            eps = "" if r["epsilon"] is None else num(r["epsilon"])
            key = (s["dataset"], s["config_used"], r["method"], eps)
            acc[key].append(r["accuracy"])
            secs[key] += [r["dpgm_seconds"]] if r.get("dpgm_seconds") else []
    rows = [(ds, f"`{config}`", TOS_METHODS.get(method, method), eps, mean_sd(v), len(v),
             f"{np.mean(secs[k]) / 60:.0f}" if secs[k] else "")
            for k, v in acc.items() for ds, config, method, eps in [k]]
    return "\n\n".join([
        "## Train on synthetic, test on real",
        ("`benchmarks/train_on_synthetic.py`: 60,000 labelled images released by a config, a "
        "fixed small CNN trained on them and tested on the real test set (delta 1e-5; the "
        "configs were chosen on a validation split of the training images, never the test set). "
        "Trained on: the release of the config at that epsilon, the same config without noise, "
        "or the real training images. Accuracy: mean ± sd over the seeds (each seed's figure is "
        "in the JSON). Minutes: the dpgm run (partition, training, release) at one thread."),
        table(("data", "config", "trained on", "epsilon", "accuracy", "seeds", "minutes"),
              rows),
        source(*TOS_FILES)])


def partition_tos() -> str:
    """MNIST train-on-synthetic accuracy with each partitioner, the label as ten more items."""
    files = sorted((RESULTS / "tos").glob("partitioner_*.json"))
    if not files:
        return ""
    rows, real = [], None
    for path in files:
        data = load(f"tos/{path.name}")
        method = path.stem.removeprefix("partitioner_")
        for r in data["results"]:
            if r["method"] == "real":
                real = r["accuracy"]
            else:
                rows.append((f"`{method}`", f"{r['epsilon']:g}", f"{r['accuracy']:.4f}", seconds(r["dpgm_seconds"])))
    return "\n".join([
        "## Each partitioner on MNIST: train on synthetic, test on real", "",
        ("`benchmarks/train_on_synthetic.py --config mnist --labels-as-items --epsilons 10 --seeds 1 --set "
         "partition.method=M partition.init=random partition.target_epsilon=1`: the paper's MNIST plan (10 parts, "
         "one VAE each, DP-SGD with DPNorm) on the images with their label as ten more items, every partitioner "
         "at the same partition budget (epsilon 1 of 10, its noise calibrated to it; subspace: SuLQ, 5-dimensional "
         "parts); 60,000 synthetic images, each labelled by its one label item (records holding none or several "
         "are drawn again), train the fixed CNN and test it on the real test set; one seed, one thread."
         + ("" if real is None else f" The same CNN trained on the real images: {real:.4f}.")), "",
        table(("partitioner", "epsilon", "accuracy", "dpgm s"), rows), "",
        source(*[f"tos/{p.name}" for p in files])])
