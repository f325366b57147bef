"""The private sketch: merge exact sums of several holders, then ONE noisy release.

Each data holder computes an exact ``SketchSum`` of its own records (``operator.py``); sums of
disjoint holders add (``merge_sums``), and ``release_sketch`` of the merged sum adds the noise once, through
``dpgm.privacy.mechanisms.noisy_releases`` (charge first, then draw), to the sum and to the
record count (sensitivity 1). The release is the sketch of eq. (3) up to the normalisation
``PrivateSketch.normalised()`` = sum / (alpha_r count) (SPARS 2019, eq. 3).

Privacy (add/remove neighbours): the sum's L1/L2 sensitivities are in ``signature.py``; the
two releases compose (pure epsilon adds; Gaussian RDP adds). Merging released sketches of
holders who each added their own noise (``PrivateSketch.merge``, SPARS Fig. 4) is the other
workflow: each record lies in one holder's shard (parallel composition).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dpgm.clustering.base import STAGE
from dpgm.clustering.sketch.operator import SketchOperator, SketchSum, check_same_operator
from dpgm.clustering.sketch.signature import l1_sensitivity, l2_sensitivity
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant, rdp_curve
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon
from dpgm.privacy.events import GaussianEvent, LaplaceEvent, Neighbouring
from dpgm.privacy.mechanisms import floor_counts, noisy_releases

Mechanism = Literal["laplace", "gaussian"]

#: Default share of the stage's budget spent on the noisy record count.
DEFAULT_COUNT_SHARE = 0.05


def merge_sums(sums: Iterable[SketchSum]) -> SketchSum:
    """The exact sum over the union of disjoint holders' records: sums and counts add (eq. 3 is linear)."""
    items = list(sums)
    if not items:
        raise DataError("no sketch sums to merge")
    total = items[0]
    for other in items[1:]:
        total = total + other
    return total


@dataclass(frozen=True)
class PrivateSketch:
    """A released sketch: noisy sum (re, im), noisy count, and how it was made. Mergeable.

    ``normalised()`` = sum / (alpha_r count): the sketch s_X of eq. (3). ``merge`` of shards
    (one per data holder, each with its own noise) gives the count-weighted average of
    their normalised sketches (SPARS Fig. 4). Each record lies in one shard, so the merged
    release is as private as the least private shard (parallel composition).
    """

    re: np.ndarray
    im: np.ndarray
    count: float
    alpha: float
    fingerprint: str
    privacy: dict[str, Any] = field(default_factory=dict)
    holders: int = 1

    def normalised(self) -> np.ndarray:
        """The complex normalised sketch; the count gets the one documented floor (post-processing)."""
        return (self.re + 1j * self.im) / (self.alpha * float(floor_counts(self.count)))

    @staticmethod
    def merge(sketches: Iterable[PrivateSketch]) -> PrivateSketch:
        """Combine shard sketches: sums and counts add, i.e. normalised sketches average with weights n_l."""
        items = list(sketches)
        if not items:
            raise ValueError("nothing to merge")
        for s in items[1:]:
            check_same_operator(items[0].fingerprint, s.fingerprint)
        return PrivateSketch(
            re=np.sum([s.re for s in items], axis=0),
            im=np.sum([s.im for s in items], axis=0),
            count=float(sum(s.count for s in items)),
            alpha=items[0].alpha,
            fingerprint=items[0].fingerprint,
            privacy={"shards": [s.privacy for s in items]},
            holders=sum(s.holders for s in items),
        )


@dataclass(frozen=True)
class SketchNoise:
    """Noise plan of one release: Laplace (pure eps, split) or Gaussian (multiplier, split)."""

    mechanism: Mechanism
    epsilon: float | None = None
    noise_multiplier: float | None = None
    count_share: float = DEFAULT_COUNT_SHARE

    def __post_init__(self) -> None:
        if self.mechanism not in ("laplace", "gaussian"):
            raise ConfigError(f"partition.options.mechanism: unknown mechanism {self.mechanism!r}")
        if not 0.0 < self.count_share < 1.0:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share}")
        value = self.epsilon if self.mechanism == "laplace" else self.noise_multiplier
        if value is None or not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"{self.mechanism} sketch noise needs a finite positive "
                f"{'epsilon' if self.mechanism == 'laplace' else 'noise_multiplier'}"
            )

    def stage_epsilon(self, delta: float) -> float:
        """Epsilon of the two releases together, alone: Laplace pure epsilon; Gaussian by RDP at delta."""
        if self.mechanism == "laplace":
            return float(self.epsilon)
        sketch_event, count_event = self.events()
        extra = rdp_curve(count_event)
        return plan_epsilon(sketch_event, steps=1, delta=delta, extra_rdp=extra)

    def events(self) -> tuple[LaplaceEvent | GaussianEvent, LaplaceEvent | GaussianEvent]:
        """(sketch event, count event). Laplace: eps split (1-s, s); Gaussian: RDP split (1-s, s)."""
        s = self.count_share
        if self.mechanism == "laplace":
            return LaplaceEvent(epsilon=(1 - s) * self.epsilon), LaplaceEvent(
                epsilon=s * self.epsilon
            )
        return (
            GaussianEvent(noise_multiplier=self.noise_multiplier / math.sqrt(1 - s)),
            GaussianEvent(noise_multiplier=self.noise_multiplier / math.sqrt(s)),
        )


def release_sketch(
    total: SketchSum,
    operator: SketchOperator,
    noise: SketchNoise,
    *,
    accountant: Accountant,
    rng: np.random.Generator,
    stage: str = STAGE,
) -> PrivateSketch:
    """Charge both events, THEN add noise: Laplace(L1 sens / eps) or N(0, (sigma L2 sens)^2) per coordinate.

    Add/remove neighbours: the sum's sensitivity is ``l1_sensitivity``/``l2_sensitivity``,
    the count's is 1. The two releases compose (pure eps adds; Gaussian RDP adds).
    """
    check_same_operator(total.fingerprint, operator.fingerprint())  # the sum is this operator's
    sketch_event, count_event = noise.events()
    if noise.mechanism == "laplace":
        scale = l1_sensitivity(operator.signature, operator.r) / sketch_event.epsilon
        count_scale = 1.0 / count_event.epsilon
    else:
        scale = sketch_event.noise_multiplier * l2_sensitivity(operator.signature, operator.r)
        count_scale = count_event.noise_multiplier
    (re, im), count = noisy_releases(  # re then im: one complex sketch, one event
        [np.stack([total.re, total.im]), total.n], [scale, count_scale], [sketch_event, count_event],
        accountant=accountant, stage=stage, rng=rng,
    )
    privacy = {
        "mechanism": noise.mechanism,
        "neighbouring": Neighbouring.ADD_REMOVE.value,
        "sketch_event": sketch_event.to_dict(),
        "count_event": count_event.to_dict(),
        "sketch_noise_scale": scale,
        "count_noise_scale": count_scale,
        "l1_sensitivity": l1_sensitivity(operator.signature, operator.r),
        "l2_sensitivity": l2_sensitivity(operator.signature, operator.r),
    }
    return PrivateSketch(re, im, float(count), operator.alpha, total.fingerprint, privacy)


def plan_noise(
    mechanism: Mechanism,
    *,
    target_epsilon: float | None,
    noise_multiplier: float,
    delta: float,
    count_share: float = DEFAULT_COUNT_SHARE,
) -> SketchNoise:
    """Laplace: total eps = target (or 1/noise_multiplier); Gaussian: multiplier calibrated to the target."""
    if mechanism == "laplace":
        eps = target_epsilon if target_epsilon is not None else 1.0 / noise_multiplier
        return SketchNoise("laplace", epsilon=eps, count_share=count_share)
    sigma = noise_multiplier
    if target_epsilon is not None:  # the two Gaussians together are one with multiplier sigma
        sigma = sigma_for_epsilon(
            steps=1,
            delta=delta,
            target_epsilon=target_epsilon,
            event_factory=lambda s: GaussianEvent(noise_multiplier=s),
        )
    return SketchNoise("gaussian", noise_multiplier=sigma, count_share=count_share)
