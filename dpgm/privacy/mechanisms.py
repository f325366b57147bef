"""The noise mechanisms: the ONE place where noise meets private values.

A release charges its events to the accountant (which refuses, releasing nothing, when the
budget would be exceeded) and only then draws the noise. Noise std is the noise multiplier
times the L2 sensitivity under add/remove-one-record (DESIGN.md section 2); Laplace scale is
the L1 sensitivity over epsilon. ``gaussian_noise`` and friends draw noise for mechanisms that
charge a joint event themselves (a DP-SGD step releases a histogram and a gradient from one
batch: one ``SampledJointGaussianEvent``, charged by the trainer before the step).

Noisy counts that later act as sizes or weights get one documented floor, ``floor_counts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent, LaplaceEvent

#: A released count used as a size or a divisor is never below this (data-independent) floor.
COUNT_FLOOR = 1.0

if TYPE_CHECKING:  # torch is imported by the functions that need it: the privacy CLI stays fast
    import torch
    from torch import Tensor

ArrayLike = np.ndarray | float


def floor_counts(noisy: ArrayLike, floor: float = COUNT_FLOOR) -> np.ndarray:
    """Released counts made usable as sizes or divisors: max(noisy, floor) (post-processing)."""
    return np.maximum(np.asarray(noisy, dtype=np.float64), floor)


def project_to_total(values: ArrayLike, total: ArrayLike, caps: ArrayLike | None = None) -> np.ndarray:
    """The closest x to ``values`` (Euclidean, along axis 0) with 0 <= x <= caps and sum(x) = total.

    Post-processing of noisy counts that must not add mass (DESIGN.md section 2): clamping each
    noisy count at zero biases small counts upward, and the bias grows with the number of counts
    (k parts each clamped). The projection keeps the released total: x_j = clip(v_j - tau, 0, cap_j)
    with tau found by bisection (the sum is non-increasing in tau). ``values`` [k] or [k, m] with
    ``total`` a number or [m]; ``total`` is first clipped to [0, sum(caps)].
    """
    v = np.asarray(values, dtype=np.float64)
    flat = v.ndim == 1
    v = v[:, None] if flat else v
    cap = np.full(v.shape[0], np.inf) if caps is None else np.asarray(caps, dtype=np.float64)
    cap = np.broadcast_to(cap.reshape(-1, 1), v.shape)
    target = np.clip(np.broadcast_to(np.asarray(total, dtype=np.float64), v.shape[1:]), 0.0, cap.sum(axis=0))
    lo = v.min(axis=0) - np.where(np.isinf(cap), target, cap).max(axis=0) - 1.0  # sum(x(lo)) >= target
    hi = v.max(axis=0)  # x(hi) = 0
    for _ in range(100):
        mid = (lo + hi) / 2
        above = np.clip(v - mid, 0.0, cap).sum(axis=0) > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out = np.clip(v - (lo + hi) / 2, 0.0, cap)
    return out[:, 0] if flat else out


def noisy_releases(
    values: Sequence[ArrayLike],
    scales: Sequence[float],
    events: Sequence[GaussianEvent | LaplaceEvent],
    *,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Charge all ``events`` (all or none), THEN add noise to each value: N(0, scale^2) for a
    GaussianEvent, Laplace(scale) for a LaplaceEvent, per coordinate (float64 out)."""
    if not (len(values) == len(scales) == len(events)) or not values:
        raise ValueError("noisy_releases needs one scale and one event per value, and at least one value")
    accountant.spend(stage, *events)
    out = []
    for value, scale, event in zip(values, scales, events):
        arr = np.asarray(value, dtype=np.float64)
        draw = rng.laplace if isinstance(event, LaplaceEvent) else rng.normal
        out.append(arr + draw(0.0, float(scale), size=arr.shape))
    return out


def gaussian_releases(
    values: Sequence[ArrayLike],
    sensitivities: Sequence[float],
    *,
    noise_multiplier: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Gaussian releases with one multiplier: values[i] + N(0, (noise_multiplier sensitivities[i])^2),
    one ``GaussianEvent(noise_multiplier)`` each, charged together before any draw."""
    event = GaussianEvent(noise_multiplier=noise_multiplier)
    return noisy_releases(values, [noise_multiplier * float(s) for s in sensitivities], [event] * len(values),
                          accountant=accountant, stage=stage, rng=rng)


def gaussian_release(
    values: ArrayLike,
    *,
    sensitivity: float,
    noise_multiplier: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """One Gaussian release: values + N(0, (noise_multiplier * sensitivity)^2) per coordinate."""
    return gaussian_releases([values], [sensitivity], noise_multiplier=noise_multiplier,
                             accountant=accountant, stage=stage, rng=rng)[0]


def laplace_release(
    values: ArrayLike,
    *,
    l1_sensitivity: float,
    epsilon: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """One Laplace release (pure epsilon-DP): values + Laplace(l1_sensitivity / epsilon) per coordinate."""
    return noisy_releases([values], [float(l1_sensitivity) / epsilon], [LaplaceEvent(epsilon=epsilon)],
                          accountant=accountant, stage=stage, rng=rng)[0]


# ------------------------------------------------------------------- noise for joint events
def gaussian_noise(
    shape: Sequence[int] | torch.Size,
    std: float,
    generator: torch.Generator | None,
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Tensor:
    """N(0, std^2) noise (torch) for a mechanism whose event the caller has already charged."""
    import torch

    return torch.normal(0.0, float(std), size=tuple(shape), generator=generator, dtype=dtype or torch.float64,
                        device=device)


def standard_normal_(out: Tensor, generator: torch.Generator | None) -> Tensor:
    """Fill ``out`` with N(0, 1) in place (scaled later by the caller's charged noise std)."""
    return out.normal_(generator=generator)
