"""Diagnostic (session 10): synthetic digits carry less ink than real ones; shift each digit's logits (post-processing).

On a saved validation-split mixture: none; one scalar logit shift per digit so that the expected ink
per image equals the sum of the digit's released noisy mean (``scalar``); the per-pixel calibration
to the noisy means (``pixel``, dpgm.training.part_means.calibrate_to_means); an oracle scalar shift to
the real ink (``oracle``, diagnostic only). Validation accuracy of the fixed CNN, per draw seed.
"""
import argparse
import copy
import sys

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

from dpgm.training.part_means import calibrate_to_means

p = argparse.ArgumentParser()
p.add_argument("--mix", default="/tmp/dpgm_s9_mix_chosen_e10_s1.pt")
p.add_argument("--ways", nargs="+", default=["none", "scalar", "pixel", "oracle"])
p.add_argument("--draws", type=int, nargs="+", default=[0, 1])
a = p.parse_args()
train, val = diag.validation_split()
shape = train.image_shape
X, Y = train.dense(np.uint8).astype(np.float32), np.asarray(train.labels)
base = torch.load(a.mix, weights_only=False)


@torch.no_grad()
def scalar_shift(model, target_ink):
    """Add one logit shift to every pixel so that E[ink per image] = target_ink (bisection, fixed z draws)."""
    logits = model.sample_logits(20_000, torch.Generator().manual_seed(7))
    lo, hi = -10.0, 10.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if torch.sigmoid(logits + mid).sum(1).mean() < target_ink else (lo, mid)
    model.output_bias().add_((lo + hi) / 2)


for way in a.ways:
    mix = copy.deepcopy(base)
    for j, m in enumerate(mix.models):
        noisy_mean = torch.sigmoid(m.output_bias()).clone()  # the fixed bias is logit(noisy mean)
        ink = float(X[Y == j].sum(1).mean())
        synth = float(torch.sigmoid(m.sample_logits(20_000, torch.Generator().manual_seed(7))).sum(1).mean())
        if way == "scalar":
            scalar_shift(m, float(noisy_mean.sum()))
        elif way == "oracle":
            scalar_shift(m, ink)
        elif way == "pixel":
            calibrate_to_means(m, noisy_mean)
        if way == a.ways[0]:
            print(f"digit {j}: ink real {ink:.1f}, noisy-mean sum {float(noisy_mean.sum()):.1f}, model {synth:.1f}", flush=True)
    for d in a.draws:
        imgs, labs = tos.draw(mix, 60_000, d, None)
        clf = tos.train_classifier(imgs, labs, shape, epochs=3, seed=d, select_on="none")
        print(f"{way} draw {d}: val accuracy {tos.accuracy(clf, val.dense(np.uint8), val.labels, shape):.4f}, "
              f"ink per image {imgs.sum(1).mean():.1f}", flush=True)
