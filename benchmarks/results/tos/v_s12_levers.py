"""Diagnostic (issue 14, session 12): release-time and training-time levers on one validation-split run.

One dpgm run of the config on the validation split (saved to /tmp/dpgm_s12_mix_<tag>.pt, reused when present),
then for each latent temperature T in ``--temps`` (z ~ N(0, T^2 I) at release: session 8 found T = 0.8 loses 1.2
points, does T > 1 gain?) ``--repeats`` releases of 60,000 images and a classifier each. Training-time levers:
``--shift S`` (records rolled by up to S pixels) and ``--encoder nonprivate`` (an upper bound, see below).
Run from the repository root with DPGM_DATA_DIR set, one thread:

    python benchmarks/results/tos/v_s12_levers.py --seed 0 --tag T --temps 1.0 1.25 1.5
    python benchmarks/results/tos/v_s12_levers.py --seed 0 --tag T --shift 1 --repeats 3
    python benchmarks/results/tos/v_s12_levers.py --seed 0 --tag T --encoder nonprivate
    python benchmarks/results/tos/v_s12_levers.py --seed 0 --tag T --decoder-share 0.5
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]
import diag
import train_on_synthetic as tos

from dpgm.models.vae import GaussianVAE

TEMP = 1.0


@torch.no_grad()
def _hot_logits(self, n, generator):
    device, dtype = self._device_dtype()
    z = torch.randn(n, self.latent, generator=generator, device=device, dtype=dtype)
    return self.decoder(TEMP * z)


GaussianVAE.sample_logits = _hot_logits
SHIFT, SHIFT_GEN = 0, torch.Generator().manual_seed(12345)
_record_losses = GaussianVAE.record_losses


def _shifted_losses(self, x, noise):
    """--shift S: each training record's image rolled by a uniform (dy, dx) in [-S, S]^2 (MNIST's 4-pixel empty
    border makes a roll of <= 2 a shift); data-independent randomness, so DP-SGD's guarantee is unchanged."""
    if SHIFT and self.training:
        side = round(x.shape[-1] ** 0.5)
        imgs = x.reshape(-1, side, side)
        d = torch.randint(-SHIFT, SHIFT + 1, (len(imgs), 2), generator=SHIFT_GEN)
        out = torch.empty_like(imgs)
        for dy in range(-SHIFT, SHIFT + 1):
            for dx in range(-SHIFT, SHIFT + 1):
                rows = (d[:, 0] == dy) & (d[:, 1] == dx)
                if rows.any():
                    out[rows] = torch.roll(imgs[rows], (dy, dx), dims=(1, 2))
        x = out.reshape(x.shape)
    return _record_losses(self, x, noise)


GaussianVAE.record_losses = _shifted_losses

# --encoder nonprivate: an UPPER BOUND, never a release. Each model's encoder is left out of DP-SGD (frozen for the
# engine, so the whole clip budget and the noise fall on the decoder) and stepped without clipping or noise on the
# same sampled rows. It asks: would a better-trained encoder (e.g. one shared by all digits, 10x the batch) pay?
from dpgm.training.dpsgd import DPSGD
from dpgm.training.mixture import MixtureTrainer

ENCODER_NONPRIVATE, ENC_OPT, ENC_GEN = False, {}, torch.Generator().manual_seed(54321)
_trainer_init, _engine_step = MixtureTrainer.__init__, DPSGD.step


def _init(self, models, *args, **kw):
    if ENCODER_NONPRIVATE:
        for m in models:
            for q in m.encoder.parameters():
                q.requires_grad_(False)
            ENC_OPT[id(m)] = torch.optim.Adam(m.encoder.parameters(), lr=args[3].learning_rate if len(args) > 3 else 3e-3)
    _trainer_init(self, models, *args, **kw)


def _step_both(self, x, part=None, active=None):
    out = _engine_step(self, x, part, active)
    if ENCODER_NONPRIVATE:
        part = torch.zeros(len(x), dtype=torch.long) if part is None else part
        for j, m in enumerate(self.models):
            rows = x[part == j]
            if not len(rows):
                continue
            enc = list(m.encoder.parameters())
            for q in enc:
                q.requires_grad_(True)
            loss = m.loss_per_record(rows, ENC_GEN).mean()
            grads = torch.autograd.grad(loss, enc)
            for q, g in zip(enc, grads):
                q.grad = g
                q.requires_grad_(False)
            ENC_OPT[id(m)].step()
            ENC_OPT[id(m)].zero_grad(set_to_none=True)
    return out


MixtureTrainer.__init__, DPSGD.step = _init, _step_both

# --decoder-share s: clip each record's decoder gradient to C sqrt(s) and its encoder gradient to C sqrt(1 - s)
# (per-group clipping, McMahan et al. 2018): the record's whole gradient still has norm <= C, so the noise and the
# ledger are unchanged. Flat clipping leaves the decoder 13-20% of the squared norm (tos/v_s12_levers.py's log).
# Done here by rescaling each layer's clipped-sum weights by min(1, C_g/||g_g||) / min(1, C/||g||) (fixed C only).
from dpgm.training import per_sample

DECODER_SHARE, CLIP = None, 1.0
_compute = per_sample.GhostClipper.compute


class _Scaled:
    def __init__(self, factors, ratio):
        self.factors, self.ratio = factors, ratio

    def squared_norms(self):
        return self.factors.squared_norms()

    def add_weighted(self, weights, out):
        self.factors.add_weighted(weights * self.ratio.to(weights.dtype), out)


def _group_compute(self, loss_fn):
    batch = _compute(self, loss_fn)
    if DECODER_SHARE is None or not batch._factors:
        return batch
    decoder = {id(m) for m in self.model.decoder.modules()}
    sq = {True: torch.zeros_like(batch.norms), False: torch.zeros_like(batch.norms)}
    for f in batch._factors:
        sq[id(f.layer) in decoder] = sq[id(f.layer) in decoder] + f.squared_norms()
    flat = torch.clamp(CLIP / batch.norms.clamp_min(1e-30), max=1.0)
    ratio = {}
    for is_dec, share in ((True, DECODER_SHARE), (False, 1.0 - DECODER_SHARE)):
        group = torch.clamp(CLIP * share ** 0.5 / sq[is_dec].sqrt().clamp_min(1e-30), max=1.0)
        ratio[is_dec] = group / flat
    batch._factors = [_Scaled(f, ratio[id(f.layer) in decoder]) for f in batch._factors]
    return batch


per_sample.GhostClipper.compute = _group_compute


def main():
    global TEMP, SHIFT, ENCODER_NONPRIVATE, DECODER_SHARE
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="mnist_labels_conv")
    p.add_argument("--epsilon", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--temps", type=float, nargs="+", default=[1.0, 1.2, 1.4])
    p.add_argument("--sets", nargs="*", default=[])
    p.add_argument("--tag", required=True)
    p.add_argument("--shift", type=int, default=0, help="train on records rolled by up to S pixels (augmentation)")
    p.add_argument("--encoder", choices=("dp", "nonprivate"), default="dp", help="nonprivate: an upper bound (see above)")
    p.add_argument("--decoder-share", type=float, default=None, help="per-group clipping (see above; C = 1 fixed)")
    a = p.parse_args()
    SHIFT = a.shift
    ENCODER_NONPRIVATE = a.encoder == "nonprivate"
    DECODER_SHARE = a.decoder_share
    args = diag.validation_args(a.config)
    train, val = diag.validation_split(a.config)
    shape = train.image_shape
    path = f"/tmp/dpgm_s12_mix_{a.tag}.pt"
    if os.path.exists(path):
        mixture = torch.load(path, weights_only=False)
    else:
        t0 = time.perf_counter()
        mixture, report = tos.synthesize(tos.dpgm_config(args), train, a.epsilon, a.seed, 1, a.sets)
        print(f"dpgm {time.perf_counter() - t0:.0f} s, eps {report['epsilon']:.4f}", flush=True)
        torch.save(mixture, path)
    for t in a.temps:
        TEMP = t
        accs = diag.repeated_accuracy(lambda rs: tos.draw(mixture, 60_000, rs, None), shape, val, a.seed, a.repeats, f"T={t}")
        print(f"{a.tag} seed {a.seed} T={t}: mean {np.mean(accs):.4f} each {' '.join(f'{v:.4f}' for v in accs)}", flush=True)


if __name__ == "__main__":
    main()
