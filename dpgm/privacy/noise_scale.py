"""The audit's test switch: a factor every noise of ``dpgm.privacy.mechanisms`` is drawn at.

It is 1 in every run. Only ``dpgm.audit --noise-scale`` sets it, to make a run less private than it
claims (the events charged stay those of the unscaled noise) and check that the audit refutes it;
what such a run reports says NOT DIFFERENTIALLY PRIVATE.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: The factor every noise draw is multiplied by: 1 in every run but an audit's weakened one (``scaled_noise``).
_NOISE_SCALE: ContextVar[float] = ContextVar("noise_scale", default=1.0)


@contextmanager
def scaled_noise(factor: float) -> Iterator[None]:
    """AUDIT ONLY: inside, every noise ``mechanisms`` draws is multiplied by ``factor`` (0: none) while the
    events charged stay those of the unscaled noise: a run less private than it claims, which
    ``dpgm.audit --noise-scale`` must refute; what such a run reports says NOT DIFFERENTIALLY PRIVATE."""
    if not (math.isfinite(factor) and factor >= 0):
        raise ValueError(f"the noise scale must be finite and >= 0, got {factor!r}")
    token = _NOISE_SCALE.set(float(factor))
    try:
        yield
    finally:
        _NOISE_SCALE.reset(token)


def noise_scale() -> float:
    """The factor noise is drawn at now: 1 unless inside ``scaled_noise``."""
    return _NOISE_SCALE.get()
