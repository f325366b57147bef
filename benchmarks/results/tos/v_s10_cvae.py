"""Diagnostic (issue 14): ONE conditional conv VAE over all digits (label as input), dpgm's DP-SGD."""
import argparse
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag
import train_on_synthetic as tos

from dpgm.models.conv_vae import init_conv
from dpgm.models.vae import init_linear
from dpgm.training.part_means import bias_shift


class CondConvVAE(nn.Module):
    def __init__(self, n_items, n_labels, channels, latent, generator=None, deep=False):
        super().__init__()
        side = math.isqrt(n_items); small = side // 4; c1, c2 = channels
        self.n_items, self.n_labels, self.latent = n_items, n_labels, latent
        self.enc_conv = nn.Sequential(nn.Unflatten(-1, (1, side, side)), nn.Conv2d(1, c1, 4, 2, 1), nn.ReLU(),
                                      nn.Conv2d(c1, c2, 4, 2, 1), nn.ReLU(), nn.Flatten(-3))
        self.enc_head = nn.Linear(c2 * small * small + n_labels, 2 * latent)
        self.dec_head = nn.Linear(latent + n_labels, c2 * small * small)
        self.dec_conv = nn.Sequential(nn.ReLU(), nn.Unflatten(-1, (c2, small, small)),
                                      nn.Upsample(scale_factor=2), nn.Conv2d(c2, c1, 3, padding=1), nn.ReLU(),
                                      nn.Upsample(scale_factor=2), nn.Conv2d(c1, 1, 3, padding=1), nn.Flatten(-3))
        self.deep = deep
        if deep:
            self.lab1 = nn.Linear(n_labels, c1 * side * side // 4, bias=False)
            self.lab2 = nn.Linear(n_labels, c2 * small * small, bias=False)
            nn.init.zeros_(self.lab1.weight); nn.init.zeros_(self.lab2.weight)
        self.label_bias = nn.Parameter(torch.zeros(n_labels, n_items), requires_grad=False)
        for l in [*self.enc_conv, self.enc_head, self.dec_head, *self.dec_conv]:
            if isinstance(l, nn.Linear): init_linear(l, generator)
            elif isinstance(l, nn.Conv2d): init_conv(l, generator)
    def decode(self, z, y):
        h = self.dec_head(torch.cat([z, y], -1))
        if not self.deep:
            return self.dec_conv(h) + y @ self.label_bias
        d = self.dec_conv
        h = d[1](d[0](h + self.lab2(y)))  # relu, unflatten (c2, s, s)
        h = d[4](d[3](d[2](h)))           # up, conv, relu -> (c1, 2s, 2s)
        h = h + self.lab1(y).unflatten(-1, h.shape[-3:])
        return d[7](d[6](d[5](h))) + y @ self.label_bias
    def step_noise(self, n, generator): return torch.randn(n, self.latent, generator=generator)
    def record_losses(self, x, eps):
        img, y = x[..., :self.n_items], x[..., self.n_items:]
        stats = self.enc_head(torch.cat([self.enc_conv(img), y], -1))
        mu, logvar = stats[..., :self.latent], stats[..., self.latent:]
        z = mu + torch.exp(0.5 * logvar) * eps
        logits = self.decode(z, y)
        recon = F.binary_cross_entropy_with_logits(logits, img, reduction="none").sum(-1)
        return recon + 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(-1)
    def post_processing_noise(self, g): return None
    def post_processing_loss(self, n): return None
    @torch.no_grad()
    def logits_for(self, labels, generator):
        y = F.one_hot(torch.as_tensor(labels), self.n_labels).float()
        return self.decode(torch.randn(len(labels), self.latent, generator=generator), y)

p = argparse.ArgumentParser()
p.add_argument("--eps", type=float, default=10.0)
p.add_argument("--epochs", type=float, default=30)
p.add_argument("--q", type=float, default=0.01)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--ch", type=int, nargs=2, default=[16, 32])
p.add_argument("--latent", type=int, default=16)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--calibrate", type=int, default=1)
p.add_argument("--nonprivate", action="store_true")
p.add_argument("--deep", action="store_true")
a = p.parse_args()
train, val = diag.validation_split()
shape = train.image_shape
X = torch.as_tensor(train.dense(np.uint8), dtype=torch.float32); Y = torch.as_tensor(train.labels, dtype=torch.long)
n, m = X.shape
rng = np.random.default_rng(a.seed)
# noisy label histogram (sigma 40) and noisy per-label means (sigma 20, clip 12), as in mnist_labels
counts = np.bincount(Y.numpy(), minlength=10) + (0 if a.nonprivate else rng.normal(0, 40, 10))
norms = X.norm(dim=1, keepdim=True); Xc = X * torch.clamp(12.0 / norms, max=1.0)
sums = torch.zeros(10, m).index_add_(0, Y, Xc).numpy() + (0 if a.nonprivate else rng.normal(0, 20 * 12, (10, m)))
means = np.clip(sums / counts[:, None], 1e-5, 1 - 1e-5)
gen = torch.Generator().manual_seed(a.seed)
model = CondConvVAE(m, 10, a.ch, a.latent, generator=gen, deep=a.deep)
model.label_bias.data.copy_(torch.logit(torch.as_tensor(means, dtype=torch.float32)))
print("weights", sum(p.numel() for p in model.parameters() if p.requires_grad), flush=True)
rows = torch.cat([X, F.one_hot(Y, 10).float()], 1).numpy()
dt = diag.train_dp(model, rows, gen, eps=a.eps, epochs=a.epochs, q=a.q, lr=a.lr, clip=a.clip, nonprivate=a.nonprivate,
                   log_every=200, size=counts.sum())
model.eval()
g = torch.Generator().manual_seed(123)
if a.calibrate:
    for c in range(10):
        lg = model.logits_for(np.full(20000, c), g)
        model.label_bias.data[c] += bias_shift(lg - model.label_bias.data[c], torch.as_tensor(means[c], dtype=torch.float32)) - model.label_bias.data[c]
share = np.maximum(counts, 0) / np.maximum(counts, 0).sum()
labs = rng.choice(10, size=60000, p=share)
imgs = np.concatenate([torch.bernoulli(torch.sigmoid(model.logits_for(labs[i:i+10000], g)), generator=g).numpy().astype(np.uint8) for i in range(0, 60000, 10000)])
torch.save({"imgs": imgs, "labs": labs}, f"/tmp/cvae_{a.eps}_{a.seed}_{a.deep}_{a.nonprivate}.pt")
clf = tos.train_classifier(imgs, labs, shape, epochs=3, seed=a.seed, select_on="none")
print(f"CVAE eps {a.eps} {vars(a)}: val accuracy {tos.accuracy(clf, val.dense(np.uint8), val.labels, shape):.4f}, train {dt:.0f} s", flush=True)
