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
