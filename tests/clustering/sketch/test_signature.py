"""Sensitivities of the sketch sum: a search for the worst record, and Theorem 1's Laplace scale."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpgm.clustering.sketch import (
    C_F,
    SketchOperator,
    l1_sensitivity,
    l2_sensitivity,
    theorem1_sigma_xi,
)
from dpgm.privacy.events import Neighbouring
from tests.clustering.sketch._helpers import (
    SHRINK,
    SIGNATURES,
    direct_f,
    l1,
    l2,
    one_record_sums,
    operator,
)


def adversarial_records(op: SketchOperator) -> np.ndarray:
    """Records putting EVERY phase at pi/4 (d = m: Omega is square), where |cos|+|sin| peaks,
    and their opposites (phases + pi), which maximise the replace-one change."""
    x = np.linalg.solve(op.omega.T, np.pi / 4 - op.dither)
    y = np.linalg.solve(op.omega.T, np.pi / 4 + np.pi - op.dither)
    return np.stack([x, y])


def box_records(d: int, rng: np.random.Generator, count: int = 300) -> np.ndarray:
    corners = np.array(list(itertools.product([-3.0, 3.0], repeat=d)))
    return np.vstack(
        [corners, rng.uniform(-3, 3, size=(count, d)), rng.normal(scale=10, size=(count, d))]
    )


@pytest.mark.parametrize("signature", SIGNATURES)
@pytest.mark.parametrize("r", [1, 3, 8])
def test_add_remove_change_never_exceeds_the_sensitivity_and_is_attained(signature, r):
    op = operator(8, 8, signature, r)  # d = m so that the adversary controls every phase
    rng = np.random.default_rng(7)
    records = np.vstack([box_records(8, rng, 30), adversarial_records(op)])
    change = one_record_sums(op, records)  # S(D + x) - S(D) under the same masks for D
    assert l1(change).max() <= l1_sensitivity(signature, r)  # exactly: the margin absorbs rounding
    assert l2(change).max() <= l2_sensitivity(signature, r)
    worst = SHRINK[signature]  # attained, up to f_e's rounding margin
    assert l1(change[-2:]).max() == pytest.approx(worst * l1_sensitivity(signature, r), rel=1e-9)
    assert l2(change).max() == pytest.approx(worst * l2_sensitivity(signature, r), rel=1e-9)


@pytest.mark.parametrize("signature", SIGNATURES)
def test_adding_a_record_to_a_dataset_changes_the_sum_by_its_masked_contribution(signature):
    op = operator(8, 8, signature, 3)
    rng = np.random.default_rng(8)
    data = rng.normal(size=(50, 8))
    x = adversarial_records(op)[:1]
    a = op.sum(data, np.random.default_rng(9), chunk_rows=1, dtype=np.float64)
    b = op.sum(np.vstack([data, x]), np.random.default_rng(9), chunk_rows=1, dtype=np.float64)
    diff = (b.re - a.re) + 1j * (b.im - a.im)
    assert l1(diff) <= l1_sensitivity(signature, 3)
    assert l1(diff) == pytest.approx(SHRINK[signature] * l1_sensitivity(signature, 3), rel=1e-9)


@pytest.mark.parametrize("signature", SIGNATURES)
@pytest.mark.parametrize("r", [1, 3, 8])
def test_replace_one_change_never_exceeds_twice_the_sensitivity(signature, r):
    op = operator(8, 8, signature)  # r = m: per-entry values; the worst mask keeps the r largest
    rng = np.random.default_rng(10)
    records = np.vstack([box_records(8, rng, 40), adversarial_records(op)])
    f = direct_f(records @ op.omega + op.dither, signature)
    diff = f[:, None, :] - f[None, :, :]
    per_entry = np.abs(diff.real) + np.abs(diff.imag)
    worst_l1 = np.sort(per_entry, axis=-1)[..., -r:].sum(-1).max()
    worst_l2 = np.sqrt(np.sort(np.abs(diff) ** 2, axis=-1)[..., -r:].sum(-1)).max()
    assert worst_l1 <= l1_sensitivity(signature, r, Neighbouring.REPLACE_ONE) + 1e-9
    assert worst_l1 == pytest.approx(
        l1_sensitivity(signature, r, Neighbouring.REPLACE_ONE), rel=1e-9
    )
    assert worst_l2 <= l2_sensitivity(signature, r, Neighbouring.REPLACE_ONE) + 1e-9



@pytest.mark.parametrize("signature", SIGNATURES)
@pytest.mark.parametrize(
    "r,m,n,eps", [(1, 100, 10**5, 0.1), (100, 100, 10**4, 1.0), (7, 50, 999, 3.0)]
)
def test_laplace_scale_is_theorem_1(signature, r, m, n, eps):
    """Theorem 1 (replace-one, public n, per-record sketch scaled by 1/sqrt(m)) adds
    Lap(sigma_xi / 2) / sqrt(alpha m n) to each real coordinate of the normalised sketch."""
    alpha = r / m
    paper = theorem1_sigma_xi(C_F[signature], r, m, n, eps) / 2 / math.sqrt(alpha * m * n)
    ours = l1_sensitivity(signature, r, Neighbouring.REPLACE_ONE) / eps / (alpha * n * math.sqrt(m))
    assert ours == pytest.approx(paper, rel=1e-12)
    add_remove = l1_sensitivity(signature, r) / eps / (alpha * n * math.sqrt(m))
    assert add_remove == pytest.approx(paper / 2, rel=1e-12)
