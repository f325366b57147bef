"""Post-processing of released counts: a floor for counts used as sizes, and a projection that adds no mass.

Both read only released (noisy) values, so they cost no privacy (docs/privacy.md, "Post-processing that adds
no mass"); ``dpgm.privacy.mechanisms`` re-exports them beside the releases whose outputs they take.
"""

from __future__ import annotations

import numpy as np

#: A released count used as a size or a divisor is never below this (data-independent) floor.
COUNT_FLOOR = 1.0

ArrayLike = np.ndarray | float


def floor_counts(noisy: ArrayLike, floor: float = COUNT_FLOOR) -> np.ndarray:
    """Released counts made usable as sizes or divisors: max(noisy, floor) (post-processing)."""
    return np.maximum(np.asarray(noisy, dtype=np.float64), floor)


def project_to_total(values: ArrayLike, total: ArrayLike, caps: ArrayLike | None = None) -> np.ndarray:
    """The closest x to ``values`` (Euclidean, along axis 0) with 0 <= x <= caps and sum(x) = total.

    Post-processing of noisy counts that must not add mass (docs/privacy.md): clamping each
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
