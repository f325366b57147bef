"""The signature f of the sketch, its bounds, and the sensitivities of the sketch sum.

f is f_e(t) = exp(i t) or the 1-bit f_q(t) = sign(cos t) + i sign(sin t) (Schellekens et al.,
SPARS 2019, eq. 2). Add/remove neighbours (docs/privacy.md): conditioned on the data-independent
masks, adding or removing record x changes the sketch SUM by f(Omega^T x + xi) (.) b, which has
r non-zero entries, so
  L1 sensitivity (real and imaginary parts of the 2m coordinates) = r * c_f / 2,
  L2 sensitivity = sqrt(r) * max_t |f(t)|,
with c_f = 2 max_t (|Re f| + |Im f|) of Theorem 1 (2 sqrt 2 for f_e, 4 for f_q). Under
replace-one both double. The release is a mixture, over the masks, of mechanisms that each
meet the bound, which keeps both the pure and the Renyi guarantee.

Theorem 1 is replace-one with a public n; its noise is right only if each record's sketch is
scaled by 1/sqrt(m) (eq. 2 as printed omits the factor, which would understate the noise by
sqrt(m)). ``theorem1_sigma_xi`` gives its sigma_xi; the tests check that our replace-one
Laplace scale equals it once put in the paper's normalisation.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dpgm.privacy.events import Neighbouring

Signature = Literal["exp", "quantised"]

#: Theorem 1's c_f = 2 max_t (|Re f(t)| + |Im f(t)|).
C_F: dict[str, float] = {"exp": 2.0 * math.sqrt(2.0), "quantised": 4.0}
#: max_t |f(t)| (for the L2 sensitivity).
MAX_ABS: dict[str, float] = {"exp": 1.0, "quantised": math.sqrt(2.0)}
#: First Fourier coefficient of f: E f(t + U) ~ gain * exp(i t); the decoder's atoms use it.
GAIN: dict[str, float] = {"exp": 1.0, "quantised": 4.0 / math.pi}


def signature_parts(theta: np.ndarray, signature: str) -> tuple[np.ndarray, np.ndarray]:
    """(Re f(theta), Im f(theta)) elementwise (eq. 2). f_q from the quadrant of theta: Re = +1 on
    [-pi/2, pi/2), Im = +1 on [0, pi) (mod 2 pi), i.e. sign(cos), sign(sin) with the boundaries
    (measure zero) on half-open quadrants, so |Re f_q| = |Im f_q| = 1 everywhere."""
    if signature == "exp":
        return np.cos(theta), np.sin(theta)
    quadrant = np.floor(theta * (2.0 / math.pi)).astype(np.int64) & 3  # 0..3, also for theta < 0
    one = theta.dtype.type(1.0)
    return one - ((quadrant + 1) & 2).astype(theta.dtype), one - (quadrant & 2).astype(theta.dtype)


def signature_sums(
    theta: np.ndarray,
    signature: str,
    work: np.ndarray | None = None,
    iwork: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Column sums of (Re f(theta), Im f(theta)) over a block of records, accumulated in float64.

    ``work`` (float, like theta) and ``iwork`` (int32): optional scratch of at least its shape.
    """
    rows = theta.shape[0]
    work = np.empty_like(theta) if work is None else work[:rows]
    if signature == "exp":
        re = np.cos(theta, out=work).sum(0, dtype=np.float64)  # each entry to float64, then summed
        return re, np.sin(theta, out=work).sum(0, dtype=np.float64)
    q = np.empty(theta.shape, dtype=np.int32) if iwork is None else iwork[:rows]
    np.multiply(theta, 2.0 / math.pi, out=work)
    np.floor(work, out=work)
    # q = the quadrant of theta; Im = -1 where (q & 2), Re = -1 where ((q + 1) & 2)
    np.copyto(q, work, casting="unsafe")
    im_neg = np.bitwise_and(q, 2, out=q).sum(0, dtype=np.int32)  # int32 is exact: rows < 2^30
    np.copyto(q, work, casting="unsafe")
    np.add(q, 1, out=q)
    re_neg = np.bitwise_and(q, 2, out=q).sum(0, dtype=np.int32)
    return (rows - re_neg).astype(np.float64), (rows - im_neg).astype(np.float64)


def l1_sensitivity(
    signature: str, r: int, neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
) -> float:
    """L1 sensitivity of the sketch SUM over its 2m real coordinates: r c_f / 2 (add/remove), r c_f (replace)."""
    per_entry = C_F[signature] / 2.0
    return r * per_entry * (2.0 if neighbouring == Neighbouring.REPLACE_ONE else 1.0)


def l2_sensitivity(
    signature: str, r: int, neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
) -> float:
    """L2 sensitivity of the sketch SUM: sqrt(r) max|f| (add/remove), twice that (replace-one)."""
    return (
        math.sqrt(r)
        * MAX_ABS[signature]
        * (2.0 if neighbouring == Neighbouring.REPLACE_ONE else 1.0)
    )


def theorem1_sigma_xi(c_f: float, r: int, m: int, n: int, epsilon: float) -> float:
    """sigma_xi = 2 c_f sqrt(r m) / (sqrt(n) epsilon) of Theorem 1 (SPARS 2019; replace-one, public n)."""
    return 2.0 * c_f * math.sqrt(r * m) / (math.sqrt(n) * epsilon)

