"""Shared helpers of the sketch tests: the signature written out, small operators, per-record sums."""

from __future__ import annotations

import numpy as np

from dpgm.clustering.sketch import SketchOperator
from dpgm.privacy.clipping import CLIP_MARGIN

SIGNATURES = ("exp", "quantised")
#: The factor the operator applies to each record's f: f_e's rounding margin, none for f_q.
SHRINK = {"exp": 1.0 - CLIP_MARGIN, "quantised": 1.0}


def direct_f(theta: np.ndarray, signature: str) -> np.ndarray:
    """The signature functions of eq. (2), written out with NumPy."""
    if signature == "exp":
        return np.exp(1j * theta)
    return np.sign(np.cos(theta)) + 1j * np.sign(np.sin(theta))


def added_f(theta: np.ndarray, signature: str) -> np.ndarray:
    """What the operator adds per record: f, less the rounding margin for f_e (operator.py)."""
    return SHRINK[signature] * direct_f(theta, signature)


def operator(d: int, m: int, signature: str = "exp", r: int | None = None, seed: int = 0):
    return SketchOperator.draw(
        d, m, sigma2=1.0, rng=np.random.default_rng(seed), signature=signature, measurements=r
    )


def one_record_sums(op: SketchOperator, records: np.ndarray, seed: int = 1) -> np.ndarray:
    """Complex sketch sum of each record alone (its masked contribution), float64."""
    rng = np.random.default_rng(seed)
    out = []
    for x in records:
        s = op.sum(x[None, :], rng, dtype=np.float64)
        out.append(s.re + 1j * s.im)
    return np.array(out)


def l1(v: np.ndarray) -> np.ndarray:
    return np.abs(v.real).sum(-1) + np.abs(v.imag).sum(-1)


def l2(v: np.ndarray) -> np.ndarray:
    return np.sqrt((np.abs(v) ** 2).sum(-1))
