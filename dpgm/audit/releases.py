"""Audit of the generic pipeline's Gaussian statistics releases: a distinguishing test on the released
vector (Jagielski, Ullman and Oprea, NeurIPS 2020; Nasr et al., S&P 2021).

A release (``RELEASES``: the part means, the record-length histogram, every pair's counts) runs through
its stage's own function ``trials`` times on the base records D and ``trials`` times on D plus one
canary record (``length`` items: the records' clip, so the canary moves the release by its whole
sensitivity). Each output is scored by its projection on the canary's direction (the difference of
the two outputs with the noise off: the auditor's own computation, not a release). Half the runs
choose the threshold, the other half count its false positives and negatives, and
``bounds.distinguishing_lower_bound`` turns them into a lower bound on epsilon at the run's delta,
to set against the claim: the epsilon the accountant charges for one release. The noise is drawn as
in a private run (the OS CSPRNG); ``noise_scale`` multiplies it while the claim stays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpgm.audit.bounds import best_threshold, distinguishing_lower_bound
from dpgm.audit.plan import weakened
from dpgm.clustering.base import Partition
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_share, zcdp_rho
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.events import GaussianEvent
from dpgm.privacy.noise_scale import scaled_noise
from dpgm.privacy.verdict import stamped
from dpgm.progress import progress_scope, stage_bar
from dpgm.registry import Registry
from dpgm.stages.item_pairs import noisy_every_pair, pair_bound
from dpgm.stages.part_means import noisy_part_means
from dpgm.stages.record_lengths import noisy_length_shares

#: A release: (records, noise multiplier, the canary's length, accountant, generator) -> the released vector.
Release = Callable[[BinaryDataset, float, int, Accountant, np.random.Generator], np.ndarray]
RELEASES: Registry[Release] = Registry("audit release")


@RELEASES.register("part_means", doc="the noisy part means (one part; records clipped to the canary's norm)")
def _part_means(data: BinaryDataset, sigma: float, length: int, accountant: Accountant,
                rng: np.random.Generator) -> np.ndarray:
    parts = np.zeros(data.n_records, dtype=np.int64)
    return noisy_part_means(data.records, parts, np.array([1000.0]), clip=math.sqrt(length), noise_multiplier=sigma,
                            accountant=accountant, rng=rng).ravel()


@RELEASES.register("record_lengths", doc="the noisy histogram of record lengths")
def _record_lengths(data: BinaryDataset, sigma: float, length: int, accountant: Accountant,
                    rng: np.random.Generator) -> np.ndarray:
    return np.asarray(noisy_length_shares(data, noise_multiplier=sigma, accountant=accountant, rng=rng))


@RELEASES.register("every_pair", doc="the noisy counts of every pair of items (one part)")
def _every_pair(data: BinaryDataset, sigma: float, length: int, accountant: Accountant,
                rng: np.random.Generator) -> np.ndarray:
    one = Partition(np.zeros(data.n_records, dtype=np.int64), np.array([float(data.n_records)]))
    return noisy_every_pair(data, one, pair_bound(math.sqrt(length)), noise_multiplier=sigma, accountant=accountant,
                            rng=rng).ravel()


@dataclass(frozen=True)
class ReleaseAudit:
    """What the auditor chooses: the release, its runs on each neighbour, the release's own epsilon (its
    noise calibrated to it alone), the canary's items, the confidence and the noise scale (test switch)."""

    release: str = "part_means"
    trials: int = 1000
    epsilon: float = 1.0
    length: int = 9
    confidence: float = 0.95
    noise_scale: float = 1.0

    def validate(self) -> None:
        RELEASES.entry(self.release)
        if self.trials < 20:
            raise ConfigError(f"audit: trials must be >= 20, got {self.trials}")
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ConfigError(f"audit: epsilon must be finite and > 0, got {self.epsilon}")
        if self.length < 2:
            raise ConfigError(f"audit: the canary needs >= 2 items, got {self.length}")
        if not (math.isfinite(self.noise_scale) and self.noise_scale >= 0):
            raise ConfigError(f"audit: noise_scale must be finite and >= 0, got {self.noise_scale}")


def neighbours(base: BinaryDataset, length: int) -> tuple[BinaryDataset, BinaryDataset]:
    """D and D plus a canary holding the ``length`` items whose frequency is nearest 1/2 (no
    post-processing clamp hides its mark there)."""
    if length > base.n_items:
        raise ConfigError(f"audit: the canary's {length} items exceed the data's {base.n_items}")
    dense = np.asarray(base.records.todense() if base.is_sparse else base.records, dtype=np.uint8)
    canary = np.zeros((1, base.n_items), dtype=np.uint8)
    canary[0, np.argsort(np.abs(dense.mean(axis=0) - 0.5), kind="stable")[:length]] = 1
    return (BinaryDataset(dense, base.item_names, name=base.name),
            BinaryDataset(np.vstack([dense, canary]), base.item_names, name=base.name))


def true_epsilon(sigma: float, delta: float) -> float:
    """Epsilon of one Gaussian release at multiplier ``sigma`` (inf at 0): a weakened release's true cost."""
    if sigma == 0:
        return math.inf
    accountant = Accountant(delta=delta)
    accountant.spend("audit", GaussianEvent(noise_multiplier=sigma))
    return accountant.spent().epsilon


def audit_release(base: BinaryDataset, audit: ReleaseAudit, *, delta: float, progress: bool = True) -> dict[str, Any]:
    """Run the release on both neighbours, score, choose a threshold on half the runs, bound on the rest."""
    audit.validate()
    start = time.perf_counter()
    release = RELEASES.entry(audit.release).factory
    sigma = sigma_for_share(zcdp_rho(audit.epsilon, delta), 1.0)
    null, alt = neighbours(base, audit.length)
    rng = secure_generator()

    def run(data: BinaryDataset, accountant: Accountant) -> np.ndarray:
        return release(data, sigma, audit.length, accountant, rng)

    with scaled_noise(0.0):  # the auditor's own noiseless values: the canary's direction
        centre = run(null, Accountant(delta=delta))
        direction = run(alt, Accountant(delta=delta)) - centre
    if not np.any(direction):
        raise ConfigError(f"audit: the canary does not move the {audit.release} release")
    claims: set[float] = set()
    scores = {False: np.empty(audit.trials), True: np.empty(audit.trials)}
    with progress_scope(enabled=progress), stage_bar(f"audit: {audit.release}", 2 * audit.trials,
                                                     unit="release") as bar, scaled_noise(audit.noise_scale):
        for i in range(audit.trials):
            for inside, data in ((False, null), (True, alt)):
                accountant = Accountant(delta=delta)
                scores[inside][i] = float((run(data, accountant) - centre) @ direction) / float(direction @ direction)
                claims.add(accountant.spent().epsilon)
                bar.advance()
    half = audit.trials // 2
    threshold = best_threshold(scores[False][:half], scores[True][:half], delta, audit.confidence)
    false_pos = int((scores[False][half:] > threshold).sum())
    false_neg = int((scores[True][half:] <= threshold).sum())
    counted = audit.trials - half
    bound = distinguishing_lower_bound(false_pos, counted, false_neg, counted, delta, audit.confidence)
    claim = max(claims)
    return stamped({
        **weakened(audit.noise_scale, true_epsilon(sigma * audit.noise_scale, delta)),
        "method": "distinguishing test on two neighbours (Clopper-Pearson bounds on FPR and FNR)",
        "audited": audit.release, "claimed_epsilon": claim, "lower_bound": bound, "refuted": bound > claim,
        "epsilon_cap": distinguishing_lower_bound(0, counted, 0, counted, delta, audit.confidence),
        "delta": delta, "confidence": audit.confidence, "noise_multiplier": sigma,
        "canary_items": audit.length, "trials": audit.trials,
        "threshold": threshold, "false_positives": false_pos, "false_negatives": false_neg, "counted": counted,
        "base_records": base.n_records, "base_items": base.n_items, "dataset": base.name,
        "wall_s": time.perf_counter() - start,
    })
