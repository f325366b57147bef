"""The one noise module: charge first (all or none), then noise of the documented scale."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent, LaplaceEvent
from dpgm.privacy.ledger import LedgerEntry
from dpgm.privacy.mechanisms import (
    floor_counts,
    gaussian_release,
    gaussian_releases,
    laplace_release,
    noisy_releases,
    project_to_total,
)

PACKAGE = Path(__file__).resolve().parents[2] / "dpgm"

#: Random draws that are NOT privacy noise: data-independent maps, initialisation and sampling.
DATA_INDEPENDENT_DRAWS = {
    "features/rff.py",            # random Fourier frequencies (public randomness)
    "clustering/noisy_lloyd.py",  # random initial centres on the sphere
    "clustering/sketch/frequencies.py",  # sketch frequencies (public randomness)
    "clustering/sketch/projection.py",   # a random projection basis (public randomness)
    "models/vae.py",              # reparameterisation noise and sampling from the model
    "models/rbm.py",              # weight initialisation
}
NOISE_CALLS = {"normal", "normal_", "laplace", "randn"}


def test_noise_is_drawn_only_in_the_mechanism_module() -> None:
    """Grep the package's syntax trees: privacy noise comes from privacy/mechanisms.py only."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "privacy/mechanisms.py" or rel in DATA_INDEPENDENT_DRAWS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NOISE_CALLS:
                offenders.append(f"{rel}:{node.lineno} .{node.func.attr}(")
    assert offenders == []


def test_gaussian_release_charges_then_adds_noise_of_the_right_scale() -> None:
    acc = Accountant(delta=1e-5)
    out = gaussian_release(np.zeros(200_000), sensitivity=2.0, noise_multiplier=3.0, accountant=acc,
                           stage="s", rng=np.random.default_rng(0))
    assert acc.ledger.entries == [LedgerEntry("s", GaussianEvent(noise_multiplier=3.0), 1)]
    assert out.std() == pytest.approx(6.0, rel=0.01) and abs(out.mean()) < 0.05


def test_several_releases_are_one_entry_and_keep_the_draw_order() -> None:
    acc = Accountant(delta=1e-5)
    a, b = gaussian_releases([np.zeros(3), np.zeros((2, 2))], [1.0, 5.0], noise_multiplier=2.0,
                             accountant=acc, stage="s", rng=np.random.default_rng(1))
    ref = np.random.default_rng(1)
    np.testing.assert_array_equal(a, ref.normal(0.0, 2.0, size=3))
    np.testing.assert_array_equal(b, ref.normal(0.0, 10.0, size=(2, 2)))
    assert acc.ledger.entries == [LedgerEntry("s", GaussianEvent(noise_multiplier=2.0), 2)]


def test_refused_release_draws_nothing_and_records_nothing() -> None:
    acc = Accountant(delta=1e-5, budget_epsilon=0.5)
    rng = np.random.default_rng(2)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        noisy_releases([np.zeros(2), 0.0], [1.0, 1.0], [GaussianEvent(noise_multiplier=100.0), LaplaceEvent(epsilon=1.0)],
                       accountant=acc, stage="s", rng=rng)
    assert acc.ledger.entries == [] and rng.bit_generator.state == state


def test_laplace_release_scale_and_event() -> None:
    acc = Accountant(delta=1e-5)
    out = laplace_release(np.zeros(200_000), l1_sensitivity=2.0, epsilon=0.5, accountant=acc, stage="s",
                          rng=np.random.default_rng(3))
    assert acc.ledger.entries == [LedgerEntry("s", LaplaceEvent(epsilon=0.5), 1)]
    assert np.abs(out).mean() == pytest.approx(4.0, rel=0.02)  # E|Laplace(b)| = b = 2 / 0.5


def test_floor_counts() -> None:
    np.testing.assert_array_equal(floor_counts([-3.0, 0.5, 7.0]), [1.0, 1.0, 7.0])


def test_projection_keeps_the_total_hand_computed() -> None:
    np.testing.assert_allclose(project_to_total([3.0, -1.0, 1.0], 3.0), [2.5, 0.0, 0.5])
    np.testing.assert_allclose(project_to_total([5.0, 5.0], 6.0, caps=[2.0, 10.0]), [2.0, 4.0])
    np.testing.assert_allclose(project_to_total([-4.0, -1.0], -2.0), [0.0, 0.0])  # total clipped to 0
    cols = project_to_total(np.array([[3.0, 5.0], [-1.0, 5.0], [1.0, 0.0]]), np.array([3.0, 6.0]),
                            caps=[10.0, 2.0, 10.0])
    np.testing.assert_allclose(cols, [[2.5, 4.0], [0.0, 2.0], [0.5, 0.0]])


def test_projection_adds_no_mass_where_clamping_does() -> None:
    """20 parts each holding 2 records of a rare item (true total 40), noise std 20: clamping each
    part's noisy count at 0 inflates the total about 4.5-fold; the projection's total is exactly
    the noisy total clipped at 0 (one clip, not 20)."""
    rng = np.random.default_rng(0)
    noisy = 2.0 + rng.normal(0.0, 20.0, size=(20, 5000))
    clamped = np.maximum(noisy, 0.0).sum(axis=0)
    projected = project_to_total(noisy, noisy.sum(axis=0), caps=np.full(20, 1000.0)).sum(axis=0)
    np.testing.assert_allclose(projected, np.maximum(noisy.sum(axis=0), 0.0), atol=1e-6)
    assert clamped.mean() > 150.0 and projected.mean() < 65.0  # E[max(N(40, 89^2), 0)] = 59
