"""Shared by the issue-14 diagnostics here: the validation split, and one model trained by dpgm's DP-SGD engine."""
import sys
import time
import types

import numpy as np
import torch

sys.path.insert(0, "benchmarks")  # run from the repository root
import train_on_synthetic as tos

from dpgm.config import TrainingConfig
from dpgm.privacy.calibrate import sigma_for_epsilon, steps_for_epochs
from dpgm.training.mechanism import step_event
from dpgm.training.mixture import MixtureTrainer, RecordStore


def validation_args(config=None):
    """train_on_synthetic's arguments for the validation split of MNIST (``config``: dpgm's config, default its own)."""
    return types.SimpleNamespace(dataset="mnist", evaluate_on="validation", limit=None, config=config, fashion_dir=None)


def validation_split(config=None):
    """(train, val): dpgm's first 50,000 MNIST training images and the last 10,000; one thread."""
    torch.set_num_threads(1)
    return tos.load_data(validation_args(config), 0.5)


class _Free:
    """An accountant that charges nothing (the diagnostic calibrates sigma itself)."""

    def spend(self, *a, **k):
        pass


def train_dp(model, rows, gen, *, eps, epochs, q, lr, clip=1.0, optimizer="adam", nonprivate=False, log_every=0,
             size=None):
    """Train ``model`` on ``rows`` (one part; ``size``: its noisy size, default the true one) with DP-SGD at
    (eps, 1e-5), sigma calibrated; returns seconds."""
    steps = steps_for_epochs(epochs, q)
    ev = lambda s: step_event(sampling_rate=q, noise_multiplier=s, clipping="fixed", hist_noise_multiplier=1.0)
    sigma = 1e-9 if nonprivate else sigma_for_epsilon(sampling_rate=q, steps=steps, delta=1e-5, target_epsilon=eps,
                                                      event_factory=ev)
    print(f"n {len(rows)} steps {steps} sigma {sigma:.4f} batch {q * len(rows):.0f}", flush=True)
    cfg = TrainingConfig(epochs=epochs, sampling_rate=q, noise_multiplier=sigma, clipping="fixed", clip_norm=clip,
                         learning_rate=lr, optimizer=optimizer)
    trainer = MixtureTrainer([model], RecordStore(rows), np.zeros(len(rows), dtype=int), np.array([float(size or len(rows))]),
                             cfg, generator=gen, total_steps=steps)
    t0 = time.perf_counter()
    for i in range(steps):
        trainer.step(_Free())
        if log_every and i % log_every == 0:
            print(f"step {i} {time.perf_counter() - t0:.0f}s", flush=True)
    return time.perf_counter() - t0


def repeated_accuracy(release, shape, val, seed, repeats, label):
    """Validation accuracies of ``repeats`` classifiers, each trained on ``release(rs)`` (images, labels) for the
    repeat seed rs of train_on_synthetic (the plain run's seed first); prints each."""
    accs = []
    for r in range(repeats):
        rs = tos.repeat_seed(seed, r)
        x, y = release(rs)
        clf = tos.train_classifier(x, y, shape, epochs=3, seed=rs, select_on="none")
        accs.append(tos.accuracy(clf, val.dense(np.uint8), val.labels, shape))
        print(f"  {label} repeat {r}: {accs[-1]:.4f} ink {x.sum(1).mean():.1f}", flush=True)
    return accs
