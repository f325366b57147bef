"""Diagnostic: keep the crispest decoder draws per digit (post-processing): score = sum of pixel entropies at z."""
import argparse
import sys

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

p = argparse.ArgumentParser(); p.add_argument("--mix", default="/tmp/dpgm_s9_mix_chosen_e10_s1.pt")
p.add_argument("--keep", type=float, nargs="*", default=[1.0, 0.8, 0.6]); p.add_argument("--score", default="entropy"); p.add_argument("--gseed", type=int, default=0)
a = p.parse_args()
train, val = diag.validation_split(); shape = train.image_shape
mix = torch.load(a.mix, weights_only=False)
shares = np.maximum(mix.noisy_sizes, 0); shares = shares / shares.sum()
g = torch.Generator().manual_seed(a.gseed)
N = 60000
for keep in a.keep:
    imgs, labs = [], []
    for j, m in enumerate(mix.models):
        want = round(N * shares[j]); draw = int(np.ceil(want / keep))
        with torch.no_grad():
            z = torch.randn(draw, m.latent, generator=g)
            logits = m.decoder(z); pr = torch.sigmoid(logits)
            x = torch.bernoulli(pr, generator=g)
            if a.score == "entropy":
                s = -(pr * torch.log(pr.clamp_min(1e-12)) + (1 - pr) * torch.log((1 - pr).clamp_min(1e-12))).sum(1)
            else:  # negative log-likelihood of the drawn record at its z
                s = torch.nn.functional.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(1)
        idx = torch.argsort(s)[:want]
        imgs.append(x[idx].numpy().astype(np.uint8)); labs.append(np.full(want, j))
    imgs, labs = np.concatenate(imgs), np.concatenate(labs)
    clf = tos.train_classifier(imgs, labs, shape, epochs=3, seed=0, select_on="none")
    print(f"{a.mix} score {a.score} gseed {a.gseed} keep {keep}: val accuracy {tos.accuracy(clf, val.dense(np.uint8), val.labels, shape):.4f}", flush=True)
