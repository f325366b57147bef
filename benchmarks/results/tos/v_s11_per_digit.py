"""Diagnostic: per-digit validation accuracy of the fixed CNN trained on a saved epsilon-10 release
(v_s9_conv.py's validation split) and on the 50,000 real training images, with the confusions."""
import argparse
import sys

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

p = argparse.ArgumentParser(); p.add_argument("--mix", default="/tmp/dpgm_s9_mix_chosen_e10_s1.pt"); p.add_argument("--gseed", type=int, default=0)
a = p.parse_args()
train, val = diag.validation_split(); shape = train.image_shape
mix = torch.load(a.mix, weights_only=False)
shares = np.maximum(mix.noisy_sizes, 0); shares = shares / shares.sum()
g = torch.Generator().manual_seed(a.gseed)
imgs, labs = [], []
for j, m in enumerate(mix.models):
    want = round(60000 * shares[j])
    with torch.no_grad():
        imgs.append(m.sample(want, g).numpy().astype(np.uint8)); labs.append(np.full(want, j))
vx, vy = val.dense(np.uint8), val.labels
for name, (x, y) in {"synthetic": (np.concatenate(imgs), np.concatenate(labs)), "real": (train.dense(np.uint8), train.labels)}.items():
    clf = tos.train_classifier(x, y, shape, epochs=3, seed=a.gseed, select_on="none").eval()
    with torch.no_grad():
        pred = torch.cat([clf(tos._tensor(vx[i:i + 1000], shape)).argmax(1) for i in range(0, len(vx), 1000)]).numpy()
    conf = np.zeros((10, 10), dtype=int)
    np.add.at(conf, (vy, pred), 1)
    print(f"{name}: accuracy {np.mean(pred == vy):.4f}; per digit: " + " ".join(f"{d}:{conf[d, d] / conf[d].sum():.3f}" for d in range(10)), flush=True)
    off = conf - np.diag(np.diag(conf))
    top = np.dstack(np.unravel_index(np.argsort(off.ravel())[::-1][:6], off.shape))[0]
    print("  most frequent confusions (true -> predicted: count): " + ", ".join(f"{t}->{q}: {off[t, q]}" for t, q in top), flush=True)
