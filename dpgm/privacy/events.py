"""Privacy events: immutable descriptions of one noisy release (after dp_accounting's DpEvent).

Every mechanism that touches the data returns its value together with an event; the
accountant turns events into RDP curves. An event kind's meaning never changes: a new
kind of release gets a new class. All parameters are keyword-only and validated here.

Sensitivities are for the add/remove-one-record relation (docs/privacy.md): a noise
multiplier is the noise standard deviation divided by the L2 sensitivity under that relation.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

#: Analyses of dependent releases from one batch (docs/paper.md, note 6): "joint" treats them as one
#: sampled Gaussian with multiplier (sum sigma_i^-2)^(-1/2) (exact); "holder" uses the DPGM
#: paper's Theorem 3 (Hoelder split), raised to the joint value where the paper's bound undercuts it.
DEPENDENT_BOUNDS: tuple[str, ...] = ("joint", "holder")


class Neighbouring(enum.Enum):
    """Which datasets count as neighbours. The reports always name it."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _check_rate(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= 1):
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


@dataclass(frozen=True, kw_only=True)
class DpEvent:
    """Base class. ``kind`` names the event in JSON; subclasses register themselves."""

    kind: ClassVar[str] = "abstract"
    _registry: ClassVar[dict[str, type[DpEvent]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # private bases are not kinds of release
            DpEvent._registry[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind}
        for key, value in asdict(self).items():
            out[key] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True, kw_only=True)
class GaussianEvent(DpEvent):
    """Gaussian mechanism on the whole dataset: noise std = noise_multiplier x L2 sensitivity."""

    kind: ClassVar[str] = "gaussian"
    noise_multiplier: float

    def __post_init__(self) -> None:
        _check_positive("noise_multiplier", self.noise_multiplier)


@dataclass(frozen=True, kw_only=True)
class _DiscreteRelease(DpEvent):
    """Integer noise added to an integer vector of ``dim`` coordinates whose neighbours differ by
    at most ``sensitivity`` (its norm in grid units). A real-valued statistic is first snapped
    to the grid of spacing ``grid`` (a power of two; 1 for integer statistics): the released
    value is grid x (integer + noise). The subclass says which noise and norm."""

    sensitivity: float
    dim: int
    grid: float = 1.0
    #: The subclass's noise parameter, checked positive like the sensitivity and the grid.
    noise_field: ClassVar[str]

    def __post_init__(self) -> None:
        for name in ("sensitivity", "grid", self.noise_field):
            _check_positive(name, getattr(self, name))
        if not (isinstance(self.dim, int) and self.dim >= 1):
            raise ValueError(f"dim must be an integer >= 1, got {self.dim!r}")


@dataclass(frozen=True, kw_only=True)
class DiscreteGaussianEvent(_DiscreteRelease):
    """Discrete Gaussian N_Z(0, s^2) per coordinate with s = noise_multiplier x sensitivity
    (L2, grid units), drawn exactly (CKS 2020, Algorithm 3)."""

    kind: ClassVar[str] = "discrete_gaussian"
    noise_field: ClassVar[str] = "noise_multiplier"
    noise_multiplier: float


@dataclass(frozen=True, kw_only=True)
class DiscreteLaplaceEvent(_DiscreteRelease):
    """Discrete Laplace Lap_Z(b) per coordinate with b = sensitivity (L1, grid units) / epsilon,
    drawn exactly (CKS 2020, Algorithm 2): pure epsilon-DP."""

    kind: ClassVar[str] = "discrete_laplace"
    noise_field: ClassVar[str] = "epsilon"
    epsilon: float


@dataclass(frozen=True, kw_only=True)
class ThresholdGaussianEvent(DpEvent):
    """A histogram over keys not known in advance: each record adds 1 to one key's count, each count present
    gets discrete Gaussian noise N_Z(0, noise_multiplier^2), and only keys whose noisy count reaches
    ``threshold`` are released (OpenDP's make_gaussian_threshold; Rogers 2023).

    Approximate: a key held by one record is released with probability delta_0 = rdp.threshold_delta
    (noise_multiplier, threshold), which no RDP curve covers; conditioned on it not being released, the
    release is the discrete Gaussian's (its curve). The accountant adds delta_0 to delta (docs/privacy.md,
    "A histogram of unknown keys")."""

    kind: ClassVar[str] = "threshold_gaussian"
    noise_multiplier: float
    threshold: int

    def __post_init__(self) -> None:
        _check_positive("noise_multiplier", self.noise_multiplier)
        if isinstance(self.threshold, bool) or not (isinstance(self.threshold, int) and self.threshold >= 1):
            raise ValueError(f"threshold must be an integer >= 1, got {self.threshold!r}")


@dataclass(frozen=True, kw_only=True)
class SampledGaussianEvent(DpEvent):
    """Gaussian mechanism on a Poisson sample: each record joins with probability sampling_rate."""

    kind: ClassVar[str] = "sampled_gaussian"
    sampling_rate: float
    noise_multiplier: float

    def __post_init__(self) -> None:
        _check_rate("sampling_rate", self.sampling_rate)
        _check_positive("noise_multiplier", self.noise_multiplier)


@dataclass(frozen=True, kw_only=True)
class SampledJointGaussianEvent(DpEvent):
    """Several Gaussian releases computed from the SAME Poisson batch (dependent mechanisms).

    Example: the DPNorm histogram (multiplier sigma_C) and the clipped gradient sum
    (multiplier sigma_G) of one DP-SGD step. The event says WHAT was released; which analysis
    bounds it (docs/paper.md, note 6: "joint" or "holder", see ``DEPENDENT_BOUNDS``) is the accountant's
    choice, so one ledger can be reported under every bound without being rewritten.
    """

    kind: ClassVar[str] = "sampled_joint_gaussian"
    sampling_rate: float
    noise_multipliers: tuple[float, ...]

    def __post_init__(self) -> None:
        _check_rate("sampling_rate", self.sampling_rate)
        object.__setattr__(self, "noise_multipliers", tuple(float(s) for s in self.noise_multipliers))
        if not self.noise_multipliers:
            raise ValueError("noise_multipliers must name at least one mechanism")
        for s in self.noise_multipliers:
            _check_positive("noise_multipliers[i]", s)


@dataclass(frozen=True, kw_only=True)
class _PureEpsilonEvent(DpEvent):
    """A release that is epsilon-DP (pure); the subclass says which mechanism."""

    epsilon: float

    def __post_init__(self) -> None:
        _check_positive("epsilon", self.epsilon)


class LaplaceEvent(_PureEpsilonEvent):
    """Laplace mechanism with scale b = L1 sensitivity / epsilon (pure epsilon-DP)."""

    kind: ClassVar[str] = "laplace"


class ExponentialEvent(_PureEpsilonEvent):
    """Exponential mechanism that is epsilon-DP, e.g. P(r) ~ exp(epsilon u(r) / (2 sensitivity(u))).

    Such a mechanism is epsilon-bounded-range, which the accountant uses (rdp.exponential_rdp).
    """

    kind: ClassVar[str] = "exponential"


class AsymptoticExponentialEvent(_PureEpsilonEvent):
    """Exponential mechanism sampled by a finite MCMC chain: only asymptotically private.

    The target density is an epsilon-DP exponential mechanism (e.g. the Gibbs sampler of Wang, Wang
    and Singh 2015, Eq. 10); the guarantee holds only in the limit of the Gibbs chain, never exactly.
    """

    kind: ClassVar[str] = "asymptotic_exponential"
    #: The guarantee in plain words, for reports.
    description: ClassVar[str] = (
        "only asymptotically private: exact only in the limit of the Gibbs chain "
        "(an epsilon exponential mechanism sampled by a finite Markov chain)"
    )


@dataclass(frozen=True, kw_only=True)
class SmoothSensitivityGaussianEvent(DpEvent):
    """Gaussian noise of std noise_multiplier x S(X) in ``dim`` coordinates, S a ``beta``-smooth upper
    bound on the local L2 sensitivity (Nissim, Raskhodnikova and Smith 2007; sample-aggregate)."""

    kind: ClassVar[str] = "smooth_sensitivity_gaussian"
    noise_multiplier: float
    beta: float
    dim: int

    def __post_init__(self) -> None:
        _check_positive("noise_multiplier", self.noise_multiplier)
        _check_positive("beta", self.beta)
        if not (isinstance(self.dim, int) and self.dim >= 1):
            raise ValueError(f"dim must be an integer >= 1, got {self.dim!r}")


class PureDpEvent(_PureEpsilonEvent):
    """Any other pure epsilon-DP release."""

    kind: ClassVar[str] = "pure_dp"


@dataclass(frozen=True, kw_only=True)
class ChoiceEvent(DpEvent):
    """A choice between branches of later releases, made on earlier releases (adaptive composition).

    Each branch lists (event, count) pairs. At every order, the RDP of a mechanism chosen on earlier
    outputs is at most the largest of its choices' (Mironov 2017, Prop. 1), so the run's curve is the
    pointwise maximum of the branches'. The branch ``taken`` charges its own releases as they happen;
    this entry is what that maximum adds to them (docs/privacy.md, "A choice between models").
    """

    kind: ClassVar[str] = "choice"
    branches: tuple[tuple[tuple[DpEvent, int], ...], ...]
    taken: int

    def __post_init__(self) -> None:
        branches = tuple(tuple((_event(e), int(c)) for e, c in branch) for branch in self.branches)
        object.__setattr__(self, "branches", branches)
        if len(branches) < 2:
            raise ValueError("a choice needs at least two branches")
        if not (isinstance(self.taken, int) and 0 <= self.taken < len(branches)):
            raise ValueError(f"taken must index one of the {len(branches)} branches, got {self.taken!r}")
        if any(c < 1 for branch in branches for _, c in branch):
            raise ValueError("every count in a branch must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        branches = [[[e.to_dict(), c] for e, c in branch] for branch in self.branches]
        return {"kind": self.kind, "branches": branches, "taken": self.taken}


def _event(event: DpEvent | dict[str, Any]) -> DpEvent:
    """An event, or one rebuilt from its ``to_dict`` (a ledger read back from JSON)."""
    return event if isinstance(event, DpEvent) else event_from_dict(event)


def event_from_dict(data: dict[str, Any]) -> DpEvent:
    """Rebuild an event from ``DpEvent.to_dict()`` output; unknown kinds or keys are errors."""
    data = dict(data)
    kind = data.pop("kind", None)
    cls = DpEvent._registry.get(kind)  # type: ignore[arg-type]
    if cls is None or cls is DpEvent:
        raise ValueError(f"unknown privacy event kind {kind!r}")
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} for privacy event {kind!r}")
    for f in fields(cls):
        if f.name in data and isinstance(data[f.name], list):
            data[f.name] = tuple(data[f.name])
    return cls(**data)
