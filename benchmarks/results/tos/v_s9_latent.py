"""Diagnostic (issue 14): sample each digit's VAE from a Gaussian fitted to its aggregate posterior (non-private fit)."""
import argparse
import sys
import time

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

p = argparse.ArgumentParser()
p.add_argument("--mix", default="/tmp/dpgm_s9_mix_eps10_s0.pt")
a = p.parse_args()
train, val = diag.validation_split()
shape = train.image_shape
X = torch.as_tensor(train.dense(np.uint8), dtype=torch.float32); Y = np.asarray(train.labels)
vx, vy = val.dense(np.uint8), val.labels
mixture = torch.load(a.mix, weights_only=False)
labels = np.asarray(mixture.part_labels.labels)
imgs0, labs = tos.draw(mixture, 60_000, 0, None)
gen = torch.Generator().manual_seed(5)
def evaluate(name, x, y):
    t = time.perf_counter()
    m = tos.train_classifier(x[:60000], y[:60000], shape, epochs=3, seed=0, select_on="none")
    print(f"{name}: val accuracy {tos.accuracy(m, vx, vy, shape):.4f} ({time.perf_counter()-t:.0f} s)", flush=True)
variants = {"post-gauss": [], "mu-gauss": [], "recon": [], "prior": []}
with torch.no_grad():
    for j, model in enumerate(mixture.models):
        d = labels[j]; n = int((labs == d).sum())
        xd = X[Y == d]
        st = model.encoder(xd); mu, lv = st[:, :model.latent], st[:, model.latent:]
        m = mu.mean(0); C = torch.cov(mu.T); Cp = C + torch.diag(lv.exp().mean(0))
        print(f"digit {d}: mean |m| {m.norm():.2f}, eig(cov mu) {torch.linalg.eigvalsh(C).numpy().round(2)}, mean var {lv.exp().mean(0).numpy().round(2)}", flush=True)
        for name, cov in (("post-gauss", Cp), ("mu-gauss", C)):
            L = torch.linalg.cholesky(cov + 1e-5 * torch.eye(len(m)))
            z = m + torch.randn(n, len(m), generator=gen) @ L.T
            variants[name].append((torch.bernoulli(torch.sigmoid(model.decoder(z)), generator=gen), d))
        idx = torch.randint(len(xd), (n,), generator=gen)
        z = mu[idx] + (0.5 * lv[idx]).exp() * torch.randn(n, len(m), generator=gen)
        variants["recon"].append((torch.bernoulli(torch.sigmoid(model.decoder(z)), generator=gen), d))
        z = torch.randn(n, len(m), generator=gen)
        variants["prior"].append((torch.bernoulli(torch.sigmoid(model.decoder(z)), generator=gen), d))
for name, parts in variants.items():
    x = torch.cat([p for p, _ in parts]).numpy().astype(np.uint8); y = np.concatenate([[d] * len(p) for p, d in parts])
    perm = np.random.default_rng(0).permutation(len(x))
    evaluate(name, x[perm], y[perm])
