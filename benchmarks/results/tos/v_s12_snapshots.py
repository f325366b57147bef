"""Diagnostic (issue 14, session 12): release a mixture of late DP-SGD iterates instead of the last one.

Every iterate of DP-SGD is post-processing of the noisy gradients already on the ledger, so drawing each
image from one of the last S iterates of its digit's model (uniformly) costs nothing. EMA (averaging the
WEIGHTS) lost 0.5-0.8 points in session 8: it blurs the decoder. A mixture in SAMPLE space keeps each
decoder's sharpness while averaging out which digits a single noisy iterate happens to get wrong.

One dpgm run of the given config on the validation split (seed, epsilon 10), snapshots of every model's
weights at fractions FRACTIONS of the planned steps; for each S in --mix, ``--repeats`` releases of 60,000
images (each image's iterate uniform over the last S snapshots) and a classifier each. Run from the
repository root with DPGM_DATA_DIR set.
"""
import argparse
import copy
import sys
import time

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]
import diag
import train_on_synthetic as tos

from dpgm.training.mixture import MixtureTrainer

FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SNAPSHOTS: dict[float, list[dict]] = {}
_step = MixtureTrainer.step


def _capturing_step(self, accountant):
    log = _step(self, accountant)
    for f in FRACTIONS:
        if self.steps_taken == round(f * self.total_steps):
            SNAPSHOTS[f] = [copy.deepcopy(m.state_dict()) for m in self.released_models()]
    return log


MixtureTrainer.step = _capturing_step


def mixture_of(mixture, fractions, n, seed):
    """n labelled images, the k-th of len(fractions) equal shares drawn from the iterate at fractions[k]."""
    imgs, labs = [], []
    shares = np.full(len(fractions), n // len(fractions)); shares[: n - shares.sum()] += 1
    for k, (f, want) in enumerate(zip(fractions, shares)):
        m = copy.deepcopy(mixture)
        for model, state in zip(m.models, SNAPSHOTS[f]):
            model.load_state_dict(state)
        x, y = tos.draw(m, int(want), seed * 1000 + k, None)
        imgs.append(x); labs.append(y)
    order = np.random.default_rng(seed).permutation(n)
    return np.concatenate(imgs)[order], np.concatenate(labs)[order]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="mnist_labels_conv")
    p.add_argument("--epsilon", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--mix", type=int, nargs="+", default=[1, 2, 4, 6])
    p.add_argument("--sets", nargs="*", default=[])
    a = p.parse_args()
    args = diag.validation_args(a.config)
    train, val = diag.validation_split(a.config)
    shape = train.image_shape
    t0 = time.perf_counter()
    mixture, report = tos.synthesize(tos.dpgm_config(args), train, a.epsilon, a.seed, 1, a.sets)
    print(f"dpgm {time.perf_counter() - t0:.0f} s, eps {report['epsilon']:.4f}, snapshots {sorted(SNAPSHOTS)}", flush=True)
    for model, state in zip(mixture.models, SNAPSHOTS[1.0]):  # the last snapshot is the release
        assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())
    for s in a.mix:
        fr = FRACTIONS[-s:]
        accs = diag.repeated_accuracy(lambda rs, fr=fr: mixture_of(mixture, fr, 60_000, rs), shape, val, a.seed, a.repeats, f"S={s}")
        print(f"seed {a.seed} S={s} {fr}: mean {np.mean(accs):.4f} each {' '.join(f'{v:.4f}' for v in accs)}", flush=True)


if __name__ == "__main__":
    main()
