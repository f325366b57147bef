"""The RDP bound of Gaussian noise scaled by a beta-smooth sensitivity bound, checked by numerical
integration of the Renyi divergence of every pair of neighbours' Gaussians it must cover."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpgm.privacy.rdp import smooth_gaussian_rdp


def renyi(mu1: float, s1: float, mu2: float, s2: float, alpha: float) -> float:
    """D_alpha(N(mu1, s1^2) || N(mu2, s2^2)) by quadrature."""
    def density(x: float) -> float:
        log_p = -((x - mu1) ** 2) / (2 * s1 * s1) - math.log(s1)
        log_q = -((x - mu2) ** 2) / (2 * s2 * s2) - math.log(s2)
        return math.exp(alpha * log_p + (1 - alpha) * log_q) / math.sqrt(2 * math.pi)

    lo, hi = min(mu1, mu2) - 40 * max(s1, s2), max(mu1, mu2) + 40 * max(s1, s2)
    value, _ = integrate.quad(density, lo, hi, limit=400, points=[mu1, mu2])
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize(("c", "beta", "alpha"), [(2.0, 0.05, 2.0), (2.0, 0.1, 4.0), (5.0, 0.01, 8.0)])
def test_the_bound_covers_every_pair_of_neighbours_and_is_reached(c: float, beta: float, alpha: float) -> None:
    """Neighbours: bounds S = 1 and S' = e^r (|r| <= beta), means at most min(S, S') apart, std c S."""
    bound = smooth_gaussian_rdp([alpha], c, beta, 1)[0]
    worst = 0.0
    for r in np.linspace(-beta, beta, 5):
        other = math.exp(r)
        for shift in np.linspace(0.0, min(1.0, other), 3):
            worst = max(worst, renyi(0.0, c, shift, c * other, alpha), renyi(shift, c * other, 0.0, c, alpha))
    assert worst <= bound * (1 + 1e-9)
    assert worst == pytest.approx(bound, rel=1e-6)  # reached at r = +-beta, the full shift


def test_no_beta_is_the_gaussian_curve_and_large_orders_are_infinite() -> None:
    assert smooth_gaussian_rdp([2.0, 8.0], 3.0, 1e-12, 4) == pytest.approx([2.0 / 18, 8.0 / 18], rel=1e-6)
    assert math.isinf(smooth_gaussian_rdp([1.0 / (1.0 - math.exp(-0.2)) + 1.0], 3.0, 0.1, 1)[0])


def test_a_private_smooth_sensitivity_release_does_not_follow_torchs_global_seed() -> None:
    """Not seeded (a private run): the noise comes from the OS CSPRNG, as DP-SGD's secure mode's; a seeded
    experiment's repeats."""
    import torch

    from dpgm.privacy.accountant import Accountant
    from dpgm.privacy.discrete import secure_generator
    from dpgm.privacy.mechanisms import smooth_sensitivity_release

    def release(rng: np.random.Generator) -> np.ndarray:
        torch.manual_seed(0)
        return smooth_sensitivity_release(np.zeros(8), smooth_bound=1.0, noise_multiplier=1.0, beta=0.1,
                                          accountant=Accountant(delta=1e-6), stage="s", rng=rng)

    assert not np.array_equal(release(secure_generator()), release(secure_generator()))
    assert not np.array_equal(release(np.random.default_rng()), release(np.random.default_rng()))
    np.testing.assert_array_equal(release(np.random.default_rng(4)), release(np.random.default_rng(4)))
