"""Independent-marginals baseline: noisy item frequencies, synthetic records drawn item by item.

Privacy (add/remove one record, docs/privacy.md): each record is first clipped to at
most ``max_length`` items (a public bound L; a longer record keeps L of its items chosen at
random), then the vector (count of item 1, ..., count of item m, n) is released once with
noise. One record moves that vector by at most L + 1 in L1 norm and sqrt(L + 1) in L2 norm,
so the release is either a Laplace mechanism with scale (L + 1) / epsilon (pure epsilon-DP)
or a Gaussian mechanism with noise std = noise_multiplier * sqrt(L + 1). The record count n
is private too and is released inside the same vector, so nothing else is charged. The item
frequencies p_j = clip(noisy count_j / noisy n, 0, 1) and everything drawn from them are
post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.evaluation.queries import as_csr
from dpgm.evaluation.saved import Arrays, saved_as
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DpEvent, GaussianEvent, LaplaceEvent
from dpgm.privacy.mechanisms import floor_counts, noisy_releases

Mechanism = Literal["laplace", "gaussian"]
_SAMPLE_CHUNK = 1 << 16  # records drawn per chunk when sampling


@dataclass(frozen=True)
@saved_as("marginals")
class MarginalsModel:
    """Released item frequencies ``probabilities`` (m,) and the noisy record count ``n_noisy``."""

    probabilities: np.ndarray
    n_noisy: float
    item_names: list[str]

    def state(self) -> tuple[dict[str, Any], Arrays]:
        return ({"n_noisy": self.n_noisy, "item_names": list(self.item_names)},
                {"probabilities": np.asarray(self.probabilities, dtype=np.float64)})

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: Arrays) -> MarginalsModel:
        return cls(probabilities=arrays["probabilities"], n_noisy=float(meta["n_noisy"]),
                   item_names=list(meta["item_names"]))

    def sample(self, n: int, rng: np.random.Generator) -> BinaryDataset:
        """``n`` records with item j present independently with probability p_j (post-processing)."""
        if n < 1:
            raise ConfigError(f"marginals: number of synthetic records must be >= 1, got {n}")
        blocks = []
        for start in range(0, n, _SAMPLE_CHUNK):
            size = min(_SAMPLE_CHUNK, n - start)
            blocks.append(sp.csr_matrix(rng.random((size, self.probabilities.size)) < self.probabilities))
        records = sp.vstack(blocks, format="csr")
        return BinaryDataset(records=records, item_names=list(self.item_names), name="marginals")


def clipped_item_counts(records: sp.csr_matrix, max_length: int, rng: np.random.Generator) -> np.ndarray:
    """Item counts after keeping at most ``max_length`` random items of every record."""
    rows = np.repeat(np.arange(records.shape[0]), np.diff(records.indptr))
    order = np.lexsort((rng.random(rows.size), rows))  # random order of items within each row
    rank = np.arange(rows.size) - records.indptr[rows[order]]
    kept = records.indices[order][rank < max_length]
    return np.bincount(kept, minlength=records.shape[1]).astype(np.float64)


def marginals_event(
    mechanism: Mechanism, *, epsilon: float | None = None, noise_multiplier: float | None = None
) -> DpEvent:
    """The ledger event of one release: LaplaceEvent(epsilon) or GaussianEvent(noise_multiplier)."""
    if mechanism == "laplace":
        if epsilon is None:
            raise ConfigError("marginals: the laplace mechanism needs epsilon")
        return LaplaceEvent(epsilon=epsilon)
    if mechanism == "gaussian":
        if noise_multiplier is None:
            raise ConfigError("marginals: the gaussian mechanism needs noise_multiplier")
        return GaussianEvent(noise_multiplier=noise_multiplier)
    raise ConfigError(f"marginals: unknown mechanism {mechanism!r} (laplace or gaussian)")


def fit_marginals(
    data: BinaryDataset,
    *,
    accountant: Accountant,
    rng: np.random.Generator,
    mechanism: Mechanism = "gaussian",
    epsilon: float | None = None,
    noise_multiplier: float | None = None,
    max_length: int | None = None,
    stage: str = "marginals",
) -> MarginalsModel:
    """Release noisy item counts and n (one charged mechanism, see the module docstring).

    ``max_length`` is the public clipping bound L (default: m, i.e. no clipping).
    """
    m = data.n_items
    length = m if max_length is None else int(max_length)
    if length < 1:
        raise ConfigError(f"marginals: max_length must be >= 1, got {max_length}")
    event = marginals_event(mechanism, epsilon=epsilon, noise_multiplier=noise_multiplier)
    counts = np.append(clipped_item_counts(as_csr(data), length, rng), data.n_records)
    if isinstance(event, LaplaceEvent):
        scale = (length + 1) / event.epsilon
    else:
        scale = event.noise_multiplier * math.sqrt(length + 1)
    (noisy,) = noisy_releases([counts], [scale], [event], accountant=accountant, stage=stage, rng=rng)
    n_noisy = float(floor_counts(noisy[-1]))
    probabilities = np.clip(noisy[:-1] / n_noisy, 0.0, 1.0)
    return MarginalsModel(probabilities=probabilities, n_noisy=n_noisy, item_names=list(data.item_names))
