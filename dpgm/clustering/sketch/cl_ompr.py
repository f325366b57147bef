"""CL-OMPR: decode k centroids and weights from a (noisy) sketch (Keriven et al. 2017, Alg. 1).

Pure post-processing of a released sketch z (m complex moments). Atoms are the expected
sketches of Diracs, a(c) = g exp(i (Omega^T c + xi)), g the signature's first harmonic
(4/pi for f_q: its higher harmonics act as structured noise, Schellekens & Jacques 2018). Each of the 2k
iterations: (1) add the atom most correlated with the residual, found by L-BFGS-B from the
best of several start points in the public box; (3) beyond k atoms, keep the k with the
largest non-negative least-squares weights (replacement); (4) non-negative least squares
for the weights; (5) joint L-BFGS-B refinement of centroids (in the box) and weights (>= 0).
``decode`` runs it ``restarts`` times and keeps the smallest residual ||z - sum a|| / ||z||.
The bounded optimisations use SciPy's L-BFGS-B with analytic gradients (NumPy, on the CPU):
the problems are small (k (d + 1) variables), and the box needs a bounded solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import optimize

from dpgm.progress import StageBar, stage_bar
from dpgm.threads import serial_blas

#: Random start points scored per atom search, and how many of the best are refined.
N_RANDOM_STARTS = 256
N_REFINED_STARTS = 4
#: L-BFGS-B iteration limits for the atom search (step 1) and the joint refinement (step 5).
MAXITER_ATOM = 100
MAXITER_JOINT = 200

#: A box bound: one number for every coordinate, or one per coordinate.
Bound = float | np.ndarray


class AtomOperator(Protocol):
    """What the decoder needs from a sketch operator."""

    omega: np.ndarray
    dither: np.ndarray

    @property
    def gain(self) -> float: ...


@dataclass
class DecodeResult:
    """k centroids (k x d), their non-negative weights (sum ~ 1), and the relative sketch residual."""

    centres: np.ndarray
    weights: np.ndarray
    residual: float


def _atoms(op: AtomOperator, centres: np.ndarray) -> np.ndarray:
    return op.gain * np.exp(1j * (centres @ op.omega + op.dither))


def _stack(atoms: np.ndarray) -> np.ndarray:
    """Complex (k x m) atoms as a real (2m x k) design matrix."""
    return np.concatenate([atoms.real, atoms.imag], axis=1).T


def _nnls(atoms: np.ndarray, z: np.ndarray) -> np.ndarray:
    """argmin_{w >= 0} ||z - w^T atoms|| (steps 3 and 4)."""
    w, _ = optimize.nnls(
        _stack(atoms), np.concatenate([z.real, z.imag]), maxiter=50 * atoms.shape[0]
    )
    return w


def _correlation(
    flat: np.ndarray, op: AtomOperator, residual: np.ndarray, dim: int
) -> tuple[float, np.ndarray]:
    """Sum over start points of -Re <a(c), residual> and its gradient (batched step 1)."""
    c = flat.reshape(-1, dim)
    conj = np.conj(_atoms(op, c)) * residual  # conj(a_j) r_j, (p x m)
    grad = -(conj.imag @ op.omega.T)
    return -float(conj.real.sum()), grad.ravel()


def _box(lower: np.ndarray, upper: np.ndarray, count: int) -> list[tuple[float, float]]:
    return list(zip(np.tile(lower, count), np.tile(upper, count)))


def _select_atom(
    residual: np.ndarray,
    op: AtomOperator,
    lower: np.ndarray,
    upper: np.ndarray,
    rng: np.random.Generator,
    candidates: np.ndarray | None,
) -> np.ndarray:
    """Step 1: the centroid c in the box maximising Re <a(c), residual>, from the best start points."""
    dim = lower.shape[0]
    starts = lower + (upper - lower) * rng.random((N_RANDOM_STARTS, dim))
    if candidates is not None:
        starts = np.vstack([starts, candidates])
    scores = (np.conj(_atoms(op, starts)) @ residual).real
    best = starts[np.argsort(scores)[-N_REFINED_STARTS:]]
    res = optimize.minimize(
        _correlation,
        best.ravel(),
        args=(op, residual, dim),
        jac=True,
        method="L-BFGS-B",
        bounds=_box(lower, upper, len(best)),
        options={"maxiter": MAXITER_ATOM},
    )
    refined = res.x.reshape(-1, dim)
    final = (np.conj(_atoms(op, refined)) @ residual).real
    return refined[int(np.argmax(final))]


def _fit_loss(
    flat: np.ndarray, op: AtomOperator, z: np.ndarray, k: int, dim: int
) -> tuple[float, np.ndarray]:
    """||z - sum_k w_k a(c_k)||^2 and its gradient in (centres, weights) (step 5)."""
    c, w = flat[: k * dim].reshape(k, dim), flat[k * dim :]
    atoms = _atoms(op, c)
    rho = z - w @ atoms
    grad_w = -2.0 * (np.conj(atoms) @ rho).real
    grad_c = 2.0 * w[:, None] * ((atoms * np.conj(rho)).imag @ op.omega.T)
    return float(np.vdot(rho, rho).real), np.concatenate([grad_c.ravel(), grad_w])


def _refine(
    z: np.ndarray,
    op: AtomOperator,
    centres: np.ndarray,
    weights: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Step 5: joint L-BFGS-B over centroids (in the box) and weights (>= 0)."""
    k, dim = centres.shape
    bounds = _box(lower, upper, k) + [(0.0, None)] * k
    res = optimize.minimize(
        _fit_loss,
        np.concatenate([centres.ravel(), weights]),
        args=(op, z, k, dim),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": MAXITER_JOINT},
    )
    return res.x[: k * dim].reshape(k, dim), res.x[k * dim :]


def cl_ompr(z: np.ndarray, op: AtomOperator, k: int, lower: Bound, upper: Bound, rng: np.random.Generator,
            *, candidates: np.ndarray | None = None, bar: StageBar | None = None) -> DecodeResult:
    """CL-OMPR with replacement, 2k iterations (Keriven et al. 2017, Alg. 1); box [lower, upper]^d.

    ``bar`` advances by one per iteration."""
    dim = op.omega.shape[0]
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (dim,)).copy()
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (dim,)).copy()
    norm = float(np.linalg.norm(z))
    if not norm > 0:
        raise ValueError("cannot decode an all-zero sketch")
    zn = np.asarray(z, dtype=np.complex128) / norm
    centres = np.empty((0, dim))
    weights = np.empty(0)
    residual = zn
    for _ in range(2 * k):
        c = _select_atom(residual, op, lower, upper, rng, candidates)
        centres = np.vstack([centres, c])
        if len(centres) > k:  # step 3: replacement (atoms share one norm, so plain NNLS ranks them)
            keep = np.argsort(_nnls(_atoms(op, centres), zn))[-k:]
            centres = centres[np.sort(keep)]
        weights = _nnls(_atoms(op, centres), zn)
        centres, weights = _refine(zn, op, centres, weights, lower, upper)
        residual = zn - weights @ _atoms(op, centres)
        if bar is not None:
            bar.advance()
    res = float(np.linalg.norm(residual))
    return DecodeResult(centres=centres, weights=weights * norm, residual=res)


def decode(z: np.ndarray, op: AtomOperator, k: int, lower: Bound, upper: Bound, rng: np.random.Generator,
           *, restarts: int = 1, candidates: np.ndarray | None = None) -> DecodeResult:
    """Best of ``restarts`` CL-OMPR runs by relative residual (uses only the released sketch)."""
    restarts = max(1, restarts)
    # small matmuls: threads only add overhead
    with serial_blas(), stage_bar("partition: sketch decoder", restarts * 2 * k, unit="iter") as bar:
        runs = [cl_ompr(z, op, k, lower, upper, rng, candidates=candidates, bar=bar) for _ in range(restarts)]
    return min(runs, key=lambda r: r.residual)
