"""Diagnostic (issue 14): does filtering synthetic digits by the VAEs' own Bayes classifier help?"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

p = argparse.ArgumentParser()
p.add_argument("--epsilon", type=float, default=10.0)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--k", type=int, default=8)
p.add_argument("--sets", nargs="*", default=[])
p.add_argument("--tag", default="")
a = p.parse_args()
args = diag.validation_args()
train, val = diag.validation_split()
shape = train.image_shape
cache = Path(f"/tmp/dpgm_s9_mix_eps{a.epsilon:g}_s{a.seed}{a.tag}.pt")
t0 = time.perf_counter()
if cache.exists():
    mixture = torch.load(cache, weights_only=False)
else:
    mixture, report = tos.synthesize(tos.dpgm_config(args), train, a.epsilon, a.seed, 1, a.sets)
    torch.save(mixture, cache)
print(f"dpgm {time.perf_counter()-t0:.0f} s", flush=True)
labels_of_part = np.asarray(mixture.part_labels.labels)
from dpgm.release import mixture_shares

shares = np.asarray(mixture_shares(mixture))[: len(mixture.models)]
logprior = torch.log(torch.as_tensor(shares / shares.sum(), dtype=torch.float32))

@torch.no_grad()
def log_px(model, x, k, gen):
    stats = model.encoder(x)
    mu, logvar = stats[:, : model.latent], stats[:, model.latent:]
    std = torch.exp(0.5 * logvar)
    eps = torch.randn(k, *mu.shape, generator=gen)
    z = mu + std * eps
    logits = model.decoder(z)
    ll = -torch.nn.functional.binary_cross_entropy_with_logits(logits, x.expand(k, *x.shape), reduction="none").sum(-1)
    lpz = -0.5 * (z.pow(2) + math.log(2 * math.pi)).sum(-1)
    lqz = -0.5 * (eps.pow(2) + math.log(2 * math.pi) + logvar).sum(-1)
    return torch.logsumexp(ll + lpz - lqz, 0) - math.log(k)

def gen_classify(images, k=a.k):
    gen = torch.Generator().manual_seed(123)
    x = torch.as_tensor(images, dtype=torch.float32)
    out = []
    for i in range(0, len(x), 5000):
        xb = x[i:i+5000]
        scores = torch.stack([log_px(m, xb, k, gen) for m in mixture.models], 1) + logprior
        out.append(scores.argmax(1))
    return labels_of_part[torch.cat(out).numpy()]

t0 = time.perf_counter()
vx, vy = val.dense(np.uint8), val.labels
gv = gen_classify(vx)
print(f"VAE Bayes classifier on real validation: {np.mean(gv == vy):.4f} ({time.perf_counter()-t0:.0f} s)", flush=True)
imgs, labs = tos.draw(mixture, 150_000, a.seed, None)
t0 = time.perf_counter()
g = gen_classify(imgs)
agree = g == labs
print(f"synthetic agreement with VAE classifier: {agree.mean():.4f} ({time.perf_counter()-t0:.0f} s)", flush=True)
for d in range(10):
    print(f"  digit {d}: agree {agree[labs==d].mean():.3f}", end="")
print()
real_cnn = tos.train_classifier(train.dense(np.uint8), train.labels, shape, epochs=3, seed=a.seed, select_on="none")
with torch.no_grad():
    x = tos._tensor(imgs, shape)
    o = np.concatenate([real_cnn(x[i:i+5000]).argmax(1).numpy() for i in range(0, len(x), 5000)])
oracle = o == labs
print(f"synthetic agreement with real CNN (oracle): {oracle.mean():.4f}; real CNN on val {tos.accuracy(real_cnn, vx, vy, shape):.4f}", flush=True)
print(f"VAE-classifier vs real-CNN agreement on synthetic: {(g == o).mean():.4f}", flush=True)

def evaluate(name, x, y):
    t = time.perf_counter()
    m = tos.train_classifier(x[:60000], y[:60000], shape, epochs=3, seed=a.seed, select_on="none")
    print(f"{name}: n={min(60000, len(x))} val accuracy {tos.accuracy(m, vx, vy, shape):.4f} ({time.perf_counter()-t:.0f} s)", flush=True)

evaluate("baseline", imgs, labs)
evaluate("VAE-filter", imgs[agree], labs[agree])
evaluate("VAE-relabel", imgs, g)
evaluate("oracle-filter", imgs[oracle], labs[oracle])
