"""Feasibility check (issue 14, session 8): ONE conditional VAE for all digits, trained with dpgm's
ghost clipping and accountant, at epsilon 10 on the validation split (first 50,000 training images;
accuracy of the fixed classifier on the last 10,000). Not a dpgm feature yet: a measurement of the
lever. Each step averages ~1,500 clipped gradients instead of ~150 per digit."""

import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, "benchmarks")
import train_on_synthetic as tos

from dpgm.models.vae import mlp
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate
from dpgm.privacy.events import GaussianEvent, SampledGaussianEvent
from dpgm.threads import set_threads
from dpgm.training.per_sample import GhostClipper

EPS, DELTA, Q, EPOCHS, LR, CLIP = float(sys.argv[1]), 1e-5, float(sys.argv[2]), float(sys.argv[3]), 3e-3, 1.0
HIDDEN, LATENT, LABEL_SIGMA, MEAN_SIGMA, MEAN_CLIP = int(sys.argv[4]), int(sys.argv[5]), 40.0, 20.0, 12.0


class CVAE(nn.Module):
    def __init__(self, m: int, k: int, g: torch.Generator) -> None:
        super().__init__()
        self.m, self.k = m, k
        self.enc = mlp([m + k, HIDDEN, 2 * LATENT], g)
        self.dec = mlp([LATENT + k, HIDDEN, m], g)

    def record_losses(self, xy: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        x, y = xy[:, : self.m], xy[:, self.m:]
        mu, logvar = self.enc(xy).chunk(2, dim=-1)
        z = mu + torch.exp(0.5 * logvar) * eps
        logits = self.dec(torch.cat([z, y], dim=-1))
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(-1)
        kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(-1)
        return rec + kl


def main() -> None:
    set_threads(1)
    args = tos.parse_args(["--evaluate-on", "validation", "--epsilons", str(EPS), "--seeds", "1"])
    train, held = tos.load_data(args, 0.5)
    x = torch.as_tensor(train.dense(np.float32))
    labels = torch.as_tensor(np.asarray(train.labels), dtype=torch.long)
    n, m, k = x.shape[0], x.shape[1], 10
    steps = int(np.ceil(EPOCHS / Q))
    rng = np.random.default_rng(0)
    g = torch.Generator().manual_seed(0)

    def plan(s):
        return [(SampledGaussianEvent(sampling_rate=Q, noise_multiplier=s), steps),
                (GaussianEvent(noise_multiplier=LABEL_SIGMA), 1), (GaussianEvent(noise_multiplier=MEAN_SIGMA), 1)]

    sigma = calibrate(plan, target_epsilon=EPS, delta=DELTA)
    acc = Accountant(delta=DELTA)
    acc.spend("labels", GaussianEvent(noise_multiplier=LABEL_SIGMA))
    counts = np.bincount(labels.numpy(), minlength=k) + rng.normal(0, LABEL_SIGMA, k)
    shares = np.clip(counts, 0, None) / np.clip(counts, 0, None).sum()
    acc.spend("mean", GaussianEvent(noise_multiplier=MEAN_SIGMA))
    norms = x.norm(dim=1, keepdim=True).clamp_min(1e-12)
    clipped = x * (MEAN_CLIP / norms).clamp(max=1.0)
    mean = ((clipped.sum(0).numpy() + rng.normal(0, MEAN_SIGMA * MEAN_CLIP, m)) / counts.sum()).clip(1e-3, 1 - 1e-3)
    model = CVAE(m, k, g)
    with torch.no_grad():
        model.dec[-1].bias.copy_(torch.logit(torch.as_tensor(mean, dtype=torch.float32)))
    clipper = GhostClipper(model)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    xy = torch.cat([x, F.one_hot(labels, k).float()], dim=1)
    start = time.time()
    for step in range(steps):
        acc.spend("training", SampledGaussianEvent(sampling_rate=Q, noise_multiplier=sigma))
        batch = xy[torch.rand(n, generator=g) < Q]
        eps = torch.randn(len(batch), LATENT, generator=g)
        gb = clipper.compute(lambda b=batch, e=eps: model.record_losses(b, e))
        weights = (CLIP / gb.norms.clamp_min(1e-12)).clamp(max=1.0)
        sums = gb.clipped_sum(weights)
        for p, s in zip(gb.params, sums):
            p.grad = (s + torch.randn(s.shape, generator=g) * sigma * CLIP) / (Q * n)
        opt.step()
        if step % 500 == 0:
            print(f"step {step}/{steps} loss {float(gb.losses.mean()):.1f} {time.time() - start:.0f} s", flush=True)
    print(f"sigma {sigma:.4f} epsilon {acc.spent().epsilon:.4f} train {time.time() - start:.0f} s", flush=True)
    with torch.no_grad():
        y = torch.as_tensor(rng.choice(k, 60000, p=shares))
        z = torch.randn(60000, LATENT, generator=g)
        probs = torch.sigmoid(model.dec(torch.cat([z, F.one_hot(y, k).float()], dim=1)))
        images = torch.bernoulli(probs, generator=g).to(torch.uint8).numpy()
    clf = tos.train_classifier(images, y.numpy(), train.image_shape, epochs=3, seed=0, select_on="none")
    print(f"RESULT eps {EPS} q {Q} epochs {EPOCHS} hidden {HIDDEN} latent {LATENT} validation accuracy "
          f"{tos.accuracy(clf, held.dense(np.uint8), held.labels, train.image_shape):.4f}", flush=True)


if __name__ == "__main__":
    main()
