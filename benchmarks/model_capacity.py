"""What a model family can reach at best: exact (noise-free) fits beside the fit sample itself.

A question for the rules, not a private release: on the leave-one-dataset-out grid's split
(``rules_lodo.py``: the fit half, a sample of it, the held-out half), each model is fitted EXACTLY to
the fit sample and as many records are drawn from it; their 1-, 2- and 3-way marginal TVDs to the
held-out half show the error the model's structure alone leaves, below which no privacy budget can
bring it. Models:

- ``sample``: the fit sample itself (the floor: what the split alone costs);
- ``tree``: the Chow-Liu tree (the maximum spanning tree of the pairs' mutual information), the model
  the generic rules fit with noise (``dpgm/stages/item_pairs.py``);
- ``bn<K>``: a Bayesian network whose every item has at most K parents, grown greedily as PrivBayes
  grows it (Zhang et al. 2017, Alg. 4 without noise): the next item and its parents among the items
  already placed are the pair of largest mutual information;
- ``mix<K>``: K groups of records (k-means on the records, exact) with a Chow-Liu tree each, each group
  drawing its own number of records: the generic rules' model where groups form, without noise;
- ``independent``: every item at its frequency.

    python benchmarks/model_capacity.py --datasets msnbc --sizes 3000 30000 --json results/model_capacity.json
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import rules_lodo
from provenance import write_json

from dpgm.data.dataset import BinaryDataset
from dpgm.evaluation.marginal_tvd import marginal_tvd

Network = dict[int, list[int]]  # an item's parents, items in the order they were placed


def entropy(x: np.ndarray, cols: Sequence[int]) -> float:
    """The joint entropy (nats) of the binary columns ``cols`` of x [n, m]."""
    keys = x[:, list(cols)] @ (1 << np.arange(len(cols)))
    p = np.bincount(keys, minlength=1 << len(cols)) / len(x)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def information(x: np.ndarray, item: int, parents: Sequence[int]) -> float:
    """I(item; parents) in nats."""
    return entropy(x, [item]) + entropy(x, parents) - entropy(x, [item, *parents])


def chow_liu(x: np.ndarray) -> Network:
    """The maximum spanning tree of the pairs' mutual information (Prim's), rooted at item 0."""
    m = x.shape[1]
    weight = np.array([[information(x, a, [b]) if a != b else -1.0 for b in range(m)] for a in range(m)])
    placed, network = [0], {0: []}
    while len(placed) < m:
        _, parent, item = max((weight[a, b], a, b) for a in placed for b in range(m) if b not in network)
        network[item] = [parent]
        placed.append(item)
    return network


def greedy_network(x: np.ndarray, k: int) -> Network:
    """PrivBayes's greedy network without noise: at most ``k`` parents each (module docstring)."""
    m = x.shape[1]
    first = int(np.argmax([entropy(x, [j]) for j in range(m)]))
    network: Network = {first: []}
    while len(network) < m:
        _, item, parents = max((information(x, j, pa), j, list(pa)) for j in range(m) if j not in network
                               for pa in itertools.combinations(network, min(k, len(network))))
        network[item] = parents
    return network


def draw(x: np.ndarray, network: Network, rng: np.random.Generator) -> np.ndarray:
    """len(x) records drawn from ``network`` fitted exactly to x (ancestral sampling, placement order)."""
    out = np.zeros_like(x)
    for item, parents in network.items():
        keys = x[:, parents] @ (1 << np.arange(len(parents)))
        ones = np.bincount(keys, weights=x[:, item], minlength=1 << len(parents))
        seen = np.bincount(keys, minlength=1 << len(parents))
        cond = np.where(seen > 0, ones / np.maximum(seen, 1), x[:, item].mean())
        out[:, item] = rng.random(len(x)) < cond[out[:, parents] @ (1 << np.arange(len(parents)))]
    return out


def mixture_draw(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """len(x) records from ``k`` exact Chow-Liu trees, one per k-means group of x, each drawing its group's size."""
    from sklearn.cluster import KMeans

    groups = KMeans(n_clusters=k, n_init=3, random_state=int(rng.integers(2**31))).fit_predict(x)
    return np.concatenate([draw(x[groups == j], chow_liu(x[groups == j]), rng) for j in range(k)])


def models(x: np.ndarray, bn: Sequence[int]) -> dict[str, Network | None]:
    """Every model's network (None: the fit sample itself)."""
    out: dict[str, Network | None] = {"sample": None, "independent": {j: [] for j in range(x.shape[1])},
                                      "tree": chow_liu(x)}
    out.update({f"bn{k}": greedy_network(x, k) for k in bn})
    return out


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for name in args.datasets:
        held = rules_lodo.Held(name, argparse.Namespace(data_dir=args.data_dir, queries=5, top_items=None))  # the fewest queries it draws: unused here
        for size in args.sizes:
            n = None if size == "full" else int(size)
            if n is not None and n > held.half:
                continue
            fit = held.fit(n, args.seed)
            x = np.asarray(fit.records.todense() if hasattr(fit.records, "todense") else fit.records, dtype=np.int64)
            fitted: dict[str, Any] = {**models(x, args.bn), **{f"mix{k}": k for k in args.mix}}
            for model, network in fitted.items():
                start = time.perf_counter()
                rng = np.random.default_rng(args.seed)
                drawn = (x if network is None else mixture_draw(x, network, rng) if isinstance(network, int)
                         else draw(x, network, rng))
                synthetic = BinaryDataset(records=drawn.astype(np.uint8), item_names=fit.item_names, name=model)
                tvd = marginal_tvd(held.held_out, synthetic)
                rows.append({"dataset": name, "size": size, "n_fit": len(x), "n_items": x.shape[1], "model": model,
                             "tvd1": tvd.oneway, "tvd2": tvd.twoway, "tvd3": tvd.threeway,
                             "seconds": time.perf_counter() - start})
                print(f"{name}/{size} {model:12s} tvd1 {tvd.oneway:.4f} tvd2 {tvd.twoway:.4f} "
                      f"tvd3 {tvd.threeway:.4f}", flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["msnbc"], choices=rules_lodo.DATASETS)
    p.add_argument("--sizes", nargs="+", default=["30000"], help="fit sample sizes, or full (the whole fit half)")
    p.add_argument("--bn", nargs="*", type=int, default=[2, 3], help="the parents' bound K of each network bn<K>")
    p.add_argument("--mix", nargs="*", type=int, default=[2, 4, 8], help="the groups K of each mixture mix<K>")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    rows = run(args)
    if args.json:
        write_json(args.json, {"settings": {k: v for k, v in vars(args).items()}, "rows": rows})
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
