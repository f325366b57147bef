"""The noise mechanisms: the ONE place where noise meets private values.

A release charges its events to the accountant (which refuses, releasing nothing, when the
budget would be exceeded) and only then draws the noise. Noise std is the noise multiplier
times the L2 sensitivity under add/remove-one-record (docs/privacy.md); Laplace scale is
the L1 sensitivity over epsilon. Released statistics get exact integer noise (discrete.py:
discrete Gaussian / discrete Laplace, CKS 2020), real-valued ones on a power-of-two grid.
``gaussian_noise`` and friends draw DP-SGD's continuous noise, for mechanisms that charge a
joint event themselves (a DP-SGD step releases a histogram and a gradient from one batch: one
``SampledJointGaussianEvent``, charged by the trainer before the step); ``secure`` adds the
floating-point defence of Holohan and Braghin (2021) that Opacus's secure_mode uses. A table's
schema is measured by OpenDP's releases (``quantile_releases``, ``thresholded_counts``), whose noise
comes from OpenDP's own CSPRNG.

Noisy counts that later act as sizes or weights get one documented floor, ``floor_counts``
(post-processing, ``dpgm.privacy.postprocess``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dpgm.errors import ConfigError
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_gaussian, discrete_laplace, is_secure, noisy_max_index, opendp
from dpgm.privacy.events import (
    AsymptoticExponentialEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    DpEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    SmoothSensitivityGaussianEvent,
    ThresholdGaussianEvent,
)
from dpgm.privacy.noise_scale import noise_scale
from dpgm.privacy.postprocess import COUNT_FLOOR, floor_counts, project_to_total  # noqa: F401 (re-exported)
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon

#: Snapping a real-valued statistic to its grid raises its sensitivity by at most this share.
SNAP_SHARE = 2.0**-10
#: Relative margin that rounds a float bound up (a few ulps of float64).
_ULPS = 2.0**-50
#: Snapped values are clipped to +-2^62 grid units and noise scales kept below 2^55: int64 sums.
_MAX_GRID_VALUE = 2.0**62
_MAX_NOISE_SCALE = 2.0**55

if TYPE_CHECKING:  # torch is imported by the functions that need it: the privacy CLI stays fast
    import torch
    from torch import Tensor

ArrayLike = np.ndarray | float


def snap_grid(sensitivity: float, dim: int, norm: int = 2) -> float:
    """The grid spacing for a real-valued statistic: the largest power of two g with
    g d^(1/norm) <= SNAP_SHARE x sensitivity, from public quantities only (the snapping then
    adds at most that share to the sensitivity, ``grid_sensitivity``)."""
    return 2.0 ** math.floor(math.log2(SNAP_SHARE * sensitivity / dim ** (1.0 / norm)))


def grid_sensitivity(sensitivity: float, dim: int, grid: float, norm: int = 2) -> float:
    """Sensitivity in grid units of a statistic snapped to the grid ``grid`` (rounded up).

    Neighbours' values a, b with ||a - b|| <= s snap to A = rint(a / g), B = rint(b / g); each of
    the d coordinates moves by at most 1/2, so ||A - B|| <= s / g + ||e_a - e_b|| <= s / g +
    d^(1/norm) (L2: sqrt(d); L1: d). OpenDP's float Gaussian uses the same rule: its privacy
    map adds 2^k sqrt(d) to the sensitivity before dividing by the scale (make_gaussian, k).
    """
    return _up(_up(sensitivity / grid) + _up(dim ** (1.0 / norm)))


def _up(x: float) -> float:
    """x rounded up by a few ulps: a float standing for a bound is never below the exact bound."""
    return x * (1.0 + _ULPS)


@dataclass(frozen=True)
class _Plan:
    """How one value is released: snapped to ``grid`` (None: integer-valued, used as it is),
    integer noise of parameter ``scale`` (grid units), and the event that is charged."""

    grid: float | None
    scale: float
    event: DiscreteGaussianEvent | DiscreteLaplaceEvent


def _plan(value: np.ndarray, scale: float, event: DpEvent) -> _Plan:
    """The exact discrete release standing for the continuous one ``event`` names at ``scale``,
    with the sensitivity in grid units (the noise grows by the snapping share, at most SNAP_SHARE,
    none for integer values). Gaussian: the same multiplier, the same RDP curve. Laplace: the
    discrete Laplace's curve is randomised response's, above the continuous one's at the same
    epsilon, so it gets the matched e' < epsilon (rdp.matched_discrete_laplace_epsilon): any plan
    or budget check made for the continuous release holds for the charged one."""
    dim = max(int(value.size), 1)
    integer = np.issubdtype(value.dtype, np.integer) or value.dtype == np.bool_
    if isinstance(event, GaussianEvent):
        mult, norm = event.noise_multiplier, 2
        sensitivity = _up(scale / mult)
    elif isinstance(event, LaplaceEvent):
        norm = 1
        sensitivity = _up(scale * event.epsilon)
        mult = matched_discrete_laplace_epsilon(event.epsilon)
    else:
        raise TypeError(f"no discrete release for event kind {event.kind!r}")
    grid = None if integer else snap_grid(sensitivity, dim, norm)
    units = sensitivity if grid is None else grid_sensitivity(sensitivity, dim, grid, norm)
    common = {"sensitivity": units, "dim": dim, "grid": 1.0 if grid is None else grid}
    if norm == 2:
        charged: DiscreteGaussianEvent | DiscreteLaplaceEvent
        charged = DiscreteGaussianEvent(noise_multiplier=mult, **common)
        plan = _Plan(grid, _up(mult * units), charged)
    else:
        charged = DiscreteLaplaceEvent(epsilon=mult, **common)
        plan = _Plan(grid, _up(units / mult), charged)
    if not plan.scale < _MAX_NOISE_SCALE:
        raise ValueError(f"noise scale {plan.scale:g} grid units is beyond the int64 samplers")
    return plan


def _release(value: np.ndarray, plan: _Plan, rng: np.random.Generator) -> np.ndarray:
    """value (snapped) + exact integer noise, back in the value's units (float64)."""
    # clipping to the int64 range is a contraction: the sensitivity bound still holds
    if plan.grid is None:
        base = np.clip(value, -_MAX_GRID_VALUE, _MAX_GRID_VALUE).astype(np.int64)
    else:
        snapped = np.rint(np.nan_to_num(value.astype(np.float64)) / plan.grid)
        base = np.clip(snapped, -_MAX_GRID_VALUE, _MAX_GRID_VALUE).astype(np.int64)
    draw = discrete_gaussian if isinstance(plan.event, DiscreteGaussianEvent) else discrete_laplace
    factor = noise_scale()
    noise = draw(value.shape, plan.scale * factor, rng) if factor > 0 else np.zeros(value.shape, dtype=np.int64)
    noisy = (base + noise).astype(np.float64)
    return noisy if plan.grid is None else noisy * plan.grid


def noisy_releases(
    values: Sequence[ArrayLike],
    scales: Sequence[float],
    events: Sequence[GaussianEvent | LaplaceEvent],
    *,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Charge the releases of all ``values`` (all or none), THEN add exact integer noise to each.

    ``events[i]`` names the mechanism ``scales[i]`` is for: GaussianEvent (scale = multiplier x
    L2 sensitivity) or LaplaceEvent (scale = L1 sensitivity / epsilon). Each value is released by
    its exact discrete counterpart (CKS 2020, ``_plan``): integer values as they are, real values
    snapped to a power-of-two grid, charged as DiscreteGaussianEvent / DiscreteLaplaceEvent. The
    noise comes from the OS CSPRNG unless ``rng`` is an experiment's seeded generator
    (``discrete.is_secure``). float64 out. In a distributed run each value is this rank's part of a
    sum over records: the release is of the sum over all ranks, with rank 0's noise
    (``collective``: every rank draws, so seeded generators stay in step, and keeps rank 0's).
    """
    if not (len(values) == len(scales) == len(events)) or not values:
        raise ValueError("noisy_releases needs one scale and one event per value, and at least one value")
    arrays = [collective.sum_over_ranks(np.asarray(v)) for v in values]  # a distributed run: all ranks' sum
    plans = [_plan(arr, float(scale), event) for arr, scale, event in zip(arrays, scales, events)]
    accountant.spend(stage, *(plan.event for plan in plans))
    return [collective.from_rank0(_release(arr, plan, rng)) for arr, plan in zip(arrays, plans)]


def gaussian_releases(
    values: Sequence[ArrayLike],
    sensitivities: Sequence[float],
    *,
    noise_multiplier: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Gaussian releases with one multiplier (std noise_multiplier x sensitivities[i]), as exact
    discrete Gaussians (``noisy_releases``), charged together before any draw."""
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
    """One Gaussian release, noise_multiplier x sensitivity per coordinate (exact discrete)."""
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
    """One Laplace release (pure epsilon-DP), scale l1_sensitivity / epsilon (exact discrete)."""
    return noisy_releases([values], [float(l1_sensitivity) / epsilon], [LaplaceEvent(epsilon=epsilon)],
                          accountant=accountant, stage=stage, rng=rng)[0]


def smooth_sensitivity_release(
    values: np.ndarray,
    *,
    smooth_bound: float,
    noise_multiplier: float,
    beta: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """values + N(0, (noise_multiplier x smooth_bound)^2) per coordinate, ``smooth_bound`` a beta-smooth
    upper bound on the local L2 sensitivity (NRS 2007): one ``SmoothSensitivityGaussianEvent`` is charged
    first. The scale is data-dependent, so no fixed grid fits: continuous noise as DP-SGD's
    (``gaussian_noise``). A private run's is DP-SGD's secure mode (Holohan and Braghin's sum of draws) from
    a generator seeded from the OS CSPRNG; an experiment's seeded ``rng`` seeds it instead (reproducible)."""
    import torch

    arr = np.asarray(values, dtype=np.float64)
    event = SmoothSensitivityGaussianEvent(noise_multiplier=noise_multiplier, beta=beta, dim=max(int(arr.size), 1))
    accountant.spend(stage, event)
    secure = is_secure(rng)
    seed = collective.shared_entropy(64) if secure else int(rng.integers(2**62))  # every rank's the same
    noise = gaussian_noise(arr.shape, float(noise_multiplier) * float(smooth_bound),
                           torch.Generator().manual_seed(seed), secure=secure)
    return arr + noise.numpy()


T = TypeVar("T")


def asymptotic_exponential_chain(
    chain: Callable[[], T], *, epsilon: float, accountant: Accountant, stage: str
) -> T:
    """Charge ONE ``AsymptoticExponentialEvent(epsilon)``, then run ``chain``: a finite Markov chain whose
    target is an epsilon exponential mechanism (private only in the limit of the chain)."""
    accountant.spend(stage, AsymptoticExponentialEvent(epsilon=epsilon))
    return chain()


def quantile_releases(values: np.ndarray, candidates: Sequence[float], levels: Sequence[float], *, epsilon: float,
                      accountant: Accountant, stage: str) -> list[float]:
    """The ``levels`` quantiles of ``values`` among the public ``candidates``, each by an epsilon exponential
    mechanism (OpenDP's make_private_quantile in its zCDP form: Gumbel noise, rho = epsilon^2 / 8, epsilon-
    bounded range): one ExponentialEvent per level, at the epsilon OpenDP's map gives, charged first."""
    dp = opendp()
    space = (dp.domains.vector_domain(dp.domains.atom_domain(T=float, nan=False)), dp.metrics.symmetric_distance())
    grid = [float(c) for c in candidates]

    def measure(level: float, scale: float) -> Any:
        return dp.measurements.make_private_quantile(*space, dp.measures.zero_concentrated_divergence(),
                                                     candidates=grid, alpha=float(level), scale=scale)
    scales = [math.sqrt(8.0 * measure(level, 1.0).map(1)) / float(epsilon) for level in levels]  # rho ~ scale^-2
    events = [ExponentialEvent(epsilon=_up(math.sqrt(8.0 * measure(level, scale).map(1))))
              for level, scale in zip(levels, scales)]
    accountant.spend(stage, *events)
    data = np.asarray(values, dtype=np.float64).tolist()
    return [float(measure(level, scale * noise_scale())(data)) for level, scale in zip(levels, scales)]


def thresholded_counts(keys: Sequence[str], *, noise_multiplier: float, threshold: int, accountant: Accountant,
                       stage: str) -> dict[str, int]:
    """The noisy counts that reach ``threshold`` of a histogram over ``keys`` (one per record, the set of keys
    not known in advance), by OpenDP's make_gaussian_threshold (exact discrete Gaussian noise of std
    ``noise_multiplier``): ONE ThresholdGaussianEvent charged first. A key held by few records is absent."""
    dp = opendp()
    accountant.spend(stage, ThresholdGaussianEvent(noise_multiplier=noise_multiplier, threshold=threshold))
    domain = dp.domains.map_domain(dp.domains.atom_domain(T=str), dp.domains.atom_domain(T=int))
    measure = dp.measurements.make_gaussian_threshold(
        domain, dp.metrics.l02inf_distance(dp.metrics.absolute_distance(T=int)),
        scale=float(noise_multiplier) * noise_scale(), threshold=int(threshold))
    return {str(key): int(count) for key, count in measure(dict(Counter(str(k) for k in keys))).items()}


# ------------------------------------------------------------------- noise for joint events
#: Secure mode: after one draw thrown away, each N(0, 1) is (z_1 + ... + z_4) / 2, the sum of 2n
#: draws with n = 2 (Holohan and Braghin 2021, section 5.1; Opacus's ``_generate_noise``).
SECURE_DRAWS = 4


def exponential_mechanisms(
    scores: Sequence[np.ndarray],
    *,
    epsilon: float,
    sensitivity: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
) -> list[int]:
    """One epsilon exponential mechanism per score vector, P(i) ~ exp(epsilon u_i / (2 sensitivity)),
    the vectors scoring DISJOINT records (parallel composition): ONE ``ExponentialEvent`` charged,
    then one index drawn per vector, exactly (``discrete.noisy_max_index``)."""
    accountant.spend(stage, ExponentialEvent(epsilon=epsilon))
    scale = 2.0 * float(sensitivity) / float(epsilon)
    picks = np.array([noisy_max_index(u, scale, rng) for u in scores], dtype=np.int64)
    return [int(i) for i in collective.from_rank0(picks)]  # scores of all ranks' records: rank 0's draw


#: Draws over every candidate that ``exponential_mechanism`` with ``fits`` tries before it keeps only those that fit.
FITTING_TRIES = 64


def exponential_mechanism(
    scores: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    accountant: Accountant,
    stage: str,
    rng: np.random.Generator,
    fits: Callable[[int], bool] | None = None,
    tries: int = FITTING_TRIES,
) -> int:
    """One epsilon exponential mechanism, P(i) ~ exp(epsilon u_i / (2 sensitivity)), over the indices i with
    ``fits(i)`` when given (a predicate that does not look at the data): ONE ``ExponentialEvent`` charged,
    then the index drawn exactly (``discrete.noisy_max_index``; with ``fits``, ``_fitting_index``)."""
    accountant.spend(stage, ExponentialEvent(epsilon=epsilon))
    scale = 2.0 * float(sensitivity) / float(epsilon)
    pick = (noisy_max_index(scores, scale, rng) if fits is None
            else _fitting_index(scores, scale, rng, fits, tries, stage))
    return int(collective.from_rank0(np.array([pick], dtype=np.int64))[0])


def _fitting_index(scores: np.ndarray, scale: float, rng: np.random.Generator, fits: Callable[[int], bool],
                   tries: int, stage: str) -> int:
    """The noisy max over the indices that fit, without evaluating ``fits`` on every one: up to ``tries``
    draws over all until one fits, else one draw over those that fit. With P the mechanism over all, F the
    mass P gives the fitting ones and P_F the restricted one, P(k) = F P_F(k), so a fitting k comes out with
    probability sum_{j < tries} (1 - F)^j F P_F(k) + (1 - F)^tries P_F(k) = P_F(k): exactly P_F."""
    for _ in range(tries):
        k = noisy_max_index(scores, scale, rng)
        if fits(k):
            return k
    keep = np.array([i for i in range(len(scores)) if fits(i)], dtype=np.int64)
    if keep.size == 0:
        raise ConfigError(f"{stage}: no candidate fits (the size limit of the model)")
    return int(keep[noisy_max_index(np.asarray(scores)[keep], scale, rng)])


def gaussian_noise(
    shape: Sequence[int] | torch.Size,
    std: float,
    generator: torch.Generator | None,
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    secure: bool = False,
) -> Tensor:
    """N(0, std^2) noise (torch) for a mechanism whose event the caller has already charged."""
    import torch

    if not secure:
        return torch.normal(0.0, float(std) * noise_scale(), size=tuple(shape), generator=generator,
                            dtype=dtype or torch.float64, device=device)
    out = torch.empty(tuple(shape), dtype=dtype or torch.float64, device=device)
    return standard_normal_(out, generator, secure=True).mul_(float(std))


def standard_normal_(
    out: Tensor, generator: torch.Generator | None, *, secure: bool = False
) -> Tensor:
    """Fill ``out`` with N(0, 1) in place (scaled later by the caller's charged noise std).

    ``secure``: the floating-point defence of Holohan and Braghin (2021, section 5.1): a sum of
    several draws leaves no low-order-bit pattern that reveals the noise (an attack needs ~2^159
    work for n = 2, against ~2^53 for one draw); one draw is thrown away first, as in Opacus.
    A buffer on another device than ``generator`` (a GPU's gradients, a CPU stream) is filled from
    the generator's device (``dpgm.streams``).
    """
    if generator is not None and out.device != generator.device:
        drawn = out.new_empty(out.shape, device=generator.device)
        return out.copy_(standard_normal_(drawn, generator, secure=secure))
    factor = noise_scale()
    if not secure:
        out.normal_(generator=generator)
        return out if factor == 1.0 else out.mul_(factor)
    out.new_empty(1).normal_(generator=generator)  # thrown away
    extra = out.new_empty(out.shape)
    out.normal_(generator=generator)
    for _ in range(SECURE_DRAWS - 1):
        out.add_(extra.normal_(generator=generator))
    return out.mul_(factor * SECURE_DRAWS**-0.5)

