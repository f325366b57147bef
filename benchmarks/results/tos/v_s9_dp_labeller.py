"""Diagnostic (issue 14): relabel / filter synthetic digits with a DP classifier trained by dpgm's DP-SGD."""
import argparse
import sys
import time

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
from collections.abc import Sequence

import diag
import torch.nn.functional as F
import train_on_synthetic as tos
from torch import Tensor, nn

from dpgm.errors import ConfigError
from dpgm.models.vae import mlp


# The labeller, trained by dpgm's DP-SGD engine (not a dpgm feature: it did not pay).
class LabelClassifier(nn.Module):
    """MLP ``n_items -> hidden... -> n_labels`` (ReLU); ``generator`` (keyword) seeds the initialisation."""

    def __init__(self, n_items: int, n_labels: int, hidden: Sequence[int] = (512,), *,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if n_items < 1 or n_labels < 2 or any(h < 1 for h in hidden):
            raise ConfigError(f"a label classifier needs n_items >= 1, n_labels >= 2 and hidden widths >= 1, "
                              f"got {n_items}, {n_labels}, {list(hidden)}")
        self.n_items, self.n_labels, self.hidden = int(n_items), int(n_labels), [int(h) for h in hidden]
        self.net = mlp([self.n_items, *self.hidden, self.n_labels], generator)

    def forward(self, x: Tensor) -> Tensor:
        """Label logits [..., B, n_labels] of records [..., B, n_items]."""
        return self.net(x)

    def step_noise(self, n: int, generator: torch.Generator | None) -> Tensor:
        """No per-record randomness: an empty [n, 0] tensor."""
        return torch.empty(n, 0)

    def record_losses(self, x: Tensor, noise: Tensor) -> Tensor:
        """Cross-entropy per labelled row [..., B] of ``x`` [..., B, n_items + n_labels]."""
        logits = self(x[..., : self.n_items])
        target = x[..., self.n_items:]
        return -(F.log_softmax(logits, dim=-1) * target).sum(dim=-1)

    def post_processing_noise(self, generator: torch.Generator | None) -> Tensor | None:
        return None

    def post_processing_loss(self, noise: Tensor) -> Tensor | None:
        return None

    @torch.no_grad()
    def predict(self, x: Tensor) -> Tensor:
        """The most likely label index [B] of each record of ``x`` [B, n_items]."""
        return self(x).argmax(dim=-1)


def labelled_rows(records: Tensor, labels: Tensor, n_labels: int) -> Tensor:
    """The rows [x, one-hot(y)] [B, n_items + n_labels] the classifier trains on."""
    return torch.cat([records, F.one_hot(labels.long(), n_labels).to(records.dtype)], dim=1)


p = argparse.ArgumentParser()
p.add_argument("--clf-eps", type=float, default=4.0)
p.add_argument("--mix", default="/tmp/dpgm_s9_mix_eps10_s0.pt")
p.add_argument("--epochs", type=float, default=40)
p.add_argument("--q", type=float, default=0.02)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--hidden", type=int, default=512)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()
train, val = diag.validation_split()
shape = train.image_shape
X = torch.as_tensor(train.dense(np.uint8), dtype=torch.float32); Y = torch.as_tensor(train.labels, dtype=torch.long)
vx, vy = val.dense(np.uint8), val.labels
gen = torch.Generator().manual_seed(a.seed)
model = LabelClassifier(784, 10, [a.hidden], generator=gen)
rows = labelled_rows(X, Y, 10).numpy()
t0 = time.perf_counter()
diag.train_dp(model, rows, gen, eps=a.clf_eps, epochs=a.epochs, q=a.q, lr=a.lr)
model.eval()
pv = model.predict(torch.as_tensor(vx, dtype=torch.float32)).numpy()
print(f"DP MLP eps {a.clf_eps}: val accuracy {np.mean(pv == vy):.4f} ({time.perf_counter()-t0:.0f} s)", flush=True)
mixture = torch.load(a.mix, weights_only=False)
imgs, labs = tos.draw(mixture, 150_000, 0, None)
pl = np.concatenate([model.predict(torch.as_tensor(imgs[i:i+10000], dtype=torch.float32)).numpy() for i in range(0, len(imgs), 10000)])
agree = pl == labs
print(f"agreement DP MLP vs generating label: {agree.mean():.4f}", flush=True)
def evaluate(name, x, y):
    t = time.perf_counter()
    m = tos.train_classifier(x[:60000], y[:60000], shape, epochs=3, seed=0, select_on="none")
    print(f"{name}: val accuracy {tos.accuracy(m, vx, vy, shape):.4f} ({time.perf_counter()-t:.0f} s)", flush=True)
evaluate("DP-relabel", imgs, pl)
evaluate("DP-filter", imgs[agree], labs[agree])
