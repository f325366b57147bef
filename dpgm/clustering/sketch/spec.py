"""Public parameters of a sketch, and the operators they give (SPARS 2019, eq. 2).

Everything here is data-independent (or comes from a public sample): the projection, the
frequencies Omega and the dithers xi. ``draw_sketcher`` builds them from one generator; a
``SketchSpec`` fixes that generator's seed, so that every data holder builds the SAME operator
and their sums can be merged. Its ``fingerprint`` identifies the parameters themselves (a hash
of the spec, not of the floating-point frequencies, which may differ in the last bit between
machines' maths libraries).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from dpgm.clustering.sketch.frequencies import FrequencyLaw
from dpgm.clustering.sketch.operator import SketchOperator
from dpgm.clustering.sketch.projection import Projection, make_projection
from dpgm.clustering.sketch.signature import Signature
from dpgm.errors import ConfigError

#: sigma^2 without a public sample or a given value: the largest variance of a [0, 1] variable.
DEFAULT_SIGMA2 = 0.25


def require_positive(where: str, **values: float | None) -> None:
    """ConfigError naming the first of ``values`` that is given (not None) and not > 0."""
    for key, value in values.items():
        if value is not None and not value > 0:
            raise ConfigError(f"{where}.{key}: must be > 0, got {value}")


@dataclass(frozen=True)
class Sketcher:
    """The projection, the operator in the projected space (the decoder's atoms) and the
    operator on raw records (projection folded in: the one that sketches the data)."""

    projection: Projection
    operator: SketchOperator
    raw: SketchOperator
    sigma2: float


def draw_sketcher(
    n_items: int,
    *,
    size: int,
    rng: np.random.Generator,
    sigma2: float | None = None,
    signature: Signature = "exp",
    measurements: int | None = None,
    law: FrequencyLaw = "adapted_radius",
    projection: int | None = 10,
    public: np.ndarray | None = None,
) -> Sketcher:
    """Projection (``make_projection``), then Omega and xi at scale sigma2: given, else the mean
    variance of the projected public sample, else 1/4."""
    proj = make_projection(n_items, projection, public, rng)
    if sigma2 is None:
        sigma2 = DEFAULT_SIGMA2
        if public is not None:
            sigma2 = float(max(np.var(proj.apply(public), axis=0).mean(), 1e-3))
    op = SketchOperator.draw(
        len(proj.lower), size, sigma2=sigma2, rng=rng, signature=signature,
        measurements=measurements, law=law,
    )
    return Sketcher(proj, op, proj.sketch_operator(op), float(sigma2))


@dataclass(frozen=True)
class SketchSpec:
    """What every holder must share: item universe, seed and the operator's parameters."""

    items: int
    seed: int
    size: int = 1000
    sigma2: float | None = None
    signature: Signature = "exp"
    measurements: int | None = None
    frequencies: FrequencyLaw = "adapted_radius"
    projection: int | None = 10

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ConfigError(f"sketch spec: seed must be >= 0, got {self.seed}")
        require_positive("sketch spec", items=self.items, size=self.size, sigma2=self.sigma2,
                         projection=self.projection)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SketchSpec:
        if not isinstance(data, dict):
            raise ConfigError("sketch spec: expected a mapping of parameters")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"sketch spec: unknown keys {unknown}")
        return cls(**data)

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the spec (16 hex digits)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def build(self) -> Sketcher:
        """The operators, from a generator seeded with ``seed`` (no public sample)."""
        return draw_sketcher(
            self.items, size=self.size, rng=np.random.default_rng(self.seed), sigma2=self.sigma2,
            signature=self.signature, measurements=self.measurements, law=self.frequencies,
            projection=self.projection,
        )
