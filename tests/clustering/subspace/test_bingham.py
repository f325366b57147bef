"""The Bingham samplers match their target densities (KS tests, fixed seeds)."""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats

from dpgm.clustering.subspace.bingham import sample_matrix_bingham, sample_vector_bingham


def cdf_from_density(density, lo: float, hi: float):
    """A CDF for ``density`` on [lo, hi] by numerical integration on a fine grid."""
    grid = np.linspace(lo, hi, 4001)
    cum = integrate.cumulative_trapezoid(density(grid), grid, initial=0.0)
    return lambda t: np.interp(t, grid, cum / cum[-1])


def test_circle_angle_follows_exp_a_cos2():
    rng = np.random.default_rng(0)
    a = np.diag([3.0, 0.0])
    xs = np.array([sample_vector_bingham(a, rng) for _ in range(3000)])
    theta = np.mod(np.arctan2(xs[:, 1], xs[:, 0]), np.pi)  # a line: the angle modulo pi
    exact = cdf_from_density(lambda t: np.exp(3.0 * np.cos(t) ** 2), 0.0, np.pi)
    assert stats.kstest(theta, exact).pvalue > 0.01
    assert stats.kstest(theta, stats.uniform(0, np.pi).cdf).pvalue < 1e-6  # the test can tell


def test_sphere_coordinate_density_in_three_dimensions():
    # on S^2, x_1 is uniform on [-1, 1]; under exp(a x_1^2) |x_1| has density ~ exp(a c^2) on [0, 1]
    rng = np.random.default_rng(1)
    a = np.diag([4.0, 0.0, 0.0])
    c = np.abs(np.array([sample_vector_bingham(a, rng)[0] for _ in range(3000)]))
    exact = cdf_from_density(lambda t: np.exp(4.0 * t**2), 0.0, 1.0)
    assert stats.kstest(c, exact).pvalue > 0.01
    assert stats.kstest(c, stats.uniform(0, 1).cdf).pvalue < 1e-6


def test_gibbs_frames_of_planes_in_three_dimensions():
    # exp(tr(U^T A U)) = exp(tr A - n^T A n) for the plane's normal n: |n_1| has density ~ exp(-a c^2)
    rng = np.random.default_rng(2)
    a = np.diag([2.5, 0.0, 0.0])
    normals = []
    for _ in range(1200):
        u = sample_matrix_bingham(a, 2, rng, sweeps=4)
        normals.append(abs(np.cross(u[:, 0], u[:, 1])[0]))
    exact = cdf_from_density(lambda t: np.exp(-2.5 * t**2), 0.0, 1.0)
    assert stats.kstest(np.array(normals), exact).pvalue > 0.01
    assert stats.kstest(np.array(normals), stats.uniform(0, 1).cdf).pvalue < 1e-4
