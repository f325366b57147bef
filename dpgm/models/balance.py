"""Balanced picks: a resample whose feature sums are what its weights ask, not that plus sampling noise.

Picking n rows of a pool by their weights (``tilt.resample``) gives each feature a sum of n times its
weighted mean, plus a sampling error of about sqrt(n p): on a release of tens of thousands of records
that error is as large as the privacy noise of the measured item frequencies, where a plain release's
systematic draws (dpgm/models/draws.py) leave none. ``balance`` removes most of it as balanced sampling
does (Deville and Tille 2004, the cube method's aim), greedily: each round swaps the picked rows whose
removal most reduces the squared gap between the sums and their goal for the rows whose addition most
reduces it, fewer rows each round, while the gap shrinks. Post-processing of draws: nothing here reads
the records.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Rounds of swaps at most; the first swaps about sqrt(picks) rows, round r about sqrt(picks) / r.
ROUNDS = 60


def balance(f: sp.csr_matrix, picks: np.ndarray, goal: np.ndarray, *, rounds: int = ROUNDS) -> np.ndarray:
    """The indices of ``len(picks)`` rows of ``f`` (with repeats, sorted) whose feature sums are close to
    ``len(picks) * goal``: ``picks`` with swaps that each lower the squared gap (module docstring)."""
    n, count = f.shape[0], len(picks)
    if n < 2 or count == 0:
        return np.sort(picks)
    held = np.bincount(picks, minlength=n).astype(np.float64)
    target = count * np.asarray(goal, dtype=np.float64)
    sums = f.T @ held
    norms = np.asarray(f.multiply(f).sum(axis=1)).ravel()
    step = max(1, int(np.sqrt(count)))
    for r in range(rounds):
        gap = target - sums
        pull = f @ gap
        gain_in = 2.0 * pull - norms  # the squared gap's drop from adding a row, alone
        gain_out = np.where(held > 0, -2.0 * pull - norms, -np.inf)  # ... from removing one
        size = min(max(1, step // (r + 1)), n - 1, int(np.count_nonzero(held)))
        ins, outs = _best(gain_in, size), _best(gain_out, size)
        worth = gain_in[ins] + gain_out[outs] > 0
        if not worth.any():
            break
        delta = np.bincount(ins[worth], minlength=n) - np.bincount(outs[worth], minlength=n)
        moved = sums + f.T @ delta
        if np.sum((target - moved) ** 2) < np.sum(gap ** 2):
            held, sums = held + delta, moved
        elif size == 1:
            break
    return np.repeat(np.arange(n), held.astype(np.int64))


def _best(gain: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` indices of the largest gains, largest first."""
    top = np.argpartition(-gain, size - 1)[:size]
    return top[np.argsort(-gain[top], kind="stable")]
