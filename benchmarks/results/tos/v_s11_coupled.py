"""Diagnostic: draw each image's pixels with ONE shared uniform (pixel = p > u) instead of one per pixel.

Every pixel keeps its Bernoulli(p) marginal (post-processing of the trained decoder), but an image's
strokes come out solid, their thickness set by u. Compared with independent draws on a saved
validation-split release (v_s9_conv.py), two draw seeds each.
"""
import argparse
import sys

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

p = argparse.ArgumentParser(); p.add_argument("--mix", default="/tmp/dpgm_s9_mix_chosen_e10_s1.pt")
p.add_argument("--modes", nargs="*", default=["independent", "shared"]); p.add_argument("--gseeds", type=int, nargs="*", default=[0, 1])
a = p.parse_args()
train, val = diag.validation_split(); shape = train.image_shape
mix = torch.load(a.mix, weights_only=False)
shares = np.maximum(mix.noisy_sizes, 0); shares = shares / shares.sum()
N = 60000
for gseed in a.gseeds:
    for mode in a.modes:
        g = torch.Generator().manual_seed(gseed)
        imgs, labs = [], []
        for j, m in enumerate(mix.models):
            want = round(N * shares[j])
            with torch.no_grad():
                pr = torch.sigmoid(m.decoder(torch.randn(want, m.latent, generator=g)))
                if mode == "independent":
                    x = torch.bernoulli(pr, generator=g)
                else:  # "shared": one uniform per image
                    x = (pr > torch.rand(want, 1, generator=g)).float()
            imgs.append(x.numpy().astype(np.uint8)); labs.append(np.full(want, j))
        imgs, labs = np.concatenate(imgs), np.concatenate(labs)
        ink = imgs.sum(1).mean()
        clf = tos.train_classifier(imgs, labs, shape, epochs=3, seed=gseed, select_on="none")
        acc = tos.accuracy(clf, val.dense(np.uint8), val.labels, shape)
        print(f"{a.mix} gseed {gseed} {mode}: ink {ink:.1f} val accuracy {acc:.4f}", flush=True)
