"""Session 8's one-off check (issue 14): draw the chosen config's release with the latent z scaled by
a temperature (the "truncation trick"), epsilon 10, validation split, seed 0, one thread. Output:
v_s8_temperature.log. Run from the repository root with benchmarks/ on sys.path."""

import sys
import time

import numpy as np
import torch

sys.path.insert(0, "benchmarks")
import train_on_synthetic as tos

from dpgm.threads import set_threads


def main() -> None:
    args = tos.parse_args(["--evaluate-on", "validation", "--epsilons", "10", "--seeds", "1", "--threads", "1"])
    set_threads(1)
    train, held_out = tos.load_data(args, 0.5)
    start = time.time()
    mixture, report = tos.synthesize(tos.dpgm_config(args), train, 10.0, 0, 1)
    print("trained", time.time() - start, report["epsilon"], flush=True)
    x, y = held_out.dense(np.uint8), held_out.labels
    for tau in (1.0, 0.8, 0.6):
        for m in mixture.models:  # z ~ N(0, tau^2 I) instead of N(0, I)
            m.sample_logits = lambda n, g, m=m, tau=tau: m.decoder(torch.randn(n, m.latent, generator=g) * tau)
        images, labels = tos.draw(mixture, 60000, 0, None)
        clf = tos.train_classifier(images, labels, train.image_shape, epochs=3, seed=0, select_on="none")
        print("tau", tau, "accuracy", tos.accuracy(clf, x, y, train.image_shape), flush=True)


if __name__ == "__main__":
    main()
