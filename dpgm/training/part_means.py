"""Noisy mean record of each part, to start every model's output bias at its logit (one release).

Starting a Bernoulli output layer at the logit of the data mean is standard practice (Hinton
2010, "A practical guide to training RBMs", section 8.1). Under DP-SGD it matters far more:
clipping shares each record's gradient norm among all parameters, so the output bias learns
slowly and, from a neutral start, the background of MNIST digits stays grey. Here the mean is
private: per part, the sum of the records (each scaled to L2 norm <= ``clip``) plus
N(0, (sigma clip)^2 I), divided by the part's released noisy size. The parts are disjoint, so the
k sums are ONE Gaussian mechanism with L2 sensitivity ``clip`` (add/remove a record): one
``GaussianEvent(sigma)``, charged before the noise is drawn.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.clustering.noisy_lloyd import clip_rows_to, part_sums
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent

#: Ledger stage of this release.
STAGE = "part_means"
#: Means are kept in [FLOOR, 1 - FLOOR] so that their logits are finite.
FLOOR = 1e-3


def noisy_part_means(
    records: Any,
    assignments: np.ndarray,
    noisy_sizes: np.ndarray,
    *,
    clip: float | None,
    noise_multiplier: float,
    accountant: Accountant,
    rng: np.random.Generator,
) -> np.ndarray:
    """[k, n_items] noisy per-part item frequencies in [FLOOR, 1 - FLOOR] (charged to ``accountant``).

    ``clip`` None means sqrt(n_items): no binary record is ever scaled down, so the means are
    unbiased, at the price of more noise than a tighter public bound would need.
    """
    n_items = records.shape[1]
    bound = math.sqrt(n_items) if clip is None else float(clip)
    accountant.charge(STAGE, GaussianEvent(noise_multiplier=noise_multiplier))
    rows = records.astype(np.float32) if sp.issparse(records) else np.asarray(records, dtype=np.float32)
    _, sums = part_sums(clip_rows_to(rows, bound), np.asarray(assignments), len(noisy_sizes))
    sums += rng.normal(0.0, noise_multiplier * bound, size=sums.shape)
    means = sums / np.maximum(np.asarray(noisy_sizes, dtype=np.float64), 1.0)[:, None]
    return np.clip(means, FLOOR, 1.0 - FLOOR)
