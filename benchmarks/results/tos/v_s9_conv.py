"""Diagnostic (issue 14): one dpgm run on the validation split with --set overrides; val TOS accuracy."""
import argparse
import sys
import time

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos


def main(config=None):
    """One run with ``--sets`` on dpgm ``config`` (default: train_on_synthetic's); prints its validation accuracy."""
    p = argparse.ArgumentParser()
    p.add_argument("--epsilon", default="10")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", required=True)
    p.add_argument("--sets", nargs="*", default=[])
    a = p.parse_args()
    args = diag.validation_args(config)
    train, val = diag.validation_split(config)
    shape = train.image_shape
    eps = None if a.epsilon == "none" else float(a.epsilon)
    t0 = time.perf_counter()
    mixture, report = tos.synthesize(tos.dpgm_config(args), train, eps, a.seed, 1, a.sets)
    dt = time.perf_counter() - t0
    torch.save(mixture, f"/tmp/dpgm_s9_mix_{a.tag}.pt")
    imgs, labs = tos.draw(mixture, 60_000, a.seed, None)
    m = tos.train_classifier(imgs, labs, shape, epochs=3, seed=a.seed, select_on="none")
    print(f"{a.tag} eps {eps} sets {a.sets}: val accuracy {tos.accuracy(m, val.dense(np.uint8), val.labels, shape):.4f}, dpgm {dt:.0f} s, "
          f"eps spent {report['epsilon']:.3f}", flush=True)


if __name__ == "__main__":
    main()
