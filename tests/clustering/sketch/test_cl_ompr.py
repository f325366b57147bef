"""CL-OMPR decoder: gradients, recovery from a noiseless sketch, the public box."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans

from dpgm.clustering.sketch import SketchOperator
from dpgm.clustering.sketch.cl_ompr import _correlation, _fit_loss, decode


def sse(x: np.ndarray, centres: np.ndarray) -> float:
    return float(((x[:, None, :] - centres[None]) ** 2).sum(-1).min(1).sum())


def mixture(n: int, centres: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return centres[rng.integers(len(centres), size=n)] + rng.normal(size=(n, centres.shape[1]))


def numeric_grad(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e)[0] - f(x - e)[0]) / (2 * h)
    return g


@pytest.mark.parametrize("signature", ["exp", "quantised"])
def test_gradients_match_finite_differences(signature):
    rng = np.random.default_rng(0)
    op = SketchOperator.draw(3, 30, sigma2=1.0, rng=rng, signature=signature)
    z = rng.normal(size=30) + 1j * rng.normal(size=30)
    flat = np.concatenate([rng.normal(size=6), rng.random(2)])
    np.testing.assert_allclose(
        _fit_loss(flat, op, z, 2, 3)[1],
        numeric_grad(lambda v: _fit_loss(v, op, z, 2, 3), flat),
        rtol=1e-5,
        atol=1e-6,
    )
    c = rng.normal(size=6)
    np.testing.assert_allclose(
        _correlation(c, op, z, 3)[1],
        numeric_grad(lambda v: _correlation(v, op, z, 3), c),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("signature", ["exp", "quantised"])
def test_recovers_well_separated_centres_from_a_noiseless_sketch(signature):
    rng = np.random.default_rng(1)
    k, d = 4, 3
    true = np.array([[-6.0, 0, 0], [6, 0, 0], [0, 6, 3], [0, -6, -3]])
    x = mixture(4000, true, rng)
    op = SketchOperator.draw(d, 10 * k * d, sigma2=2.0, rng=rng, signature=signature)
    s = op.sum(x, rng)
    result = decode((s.re + 1j * s.im) / s.n, op, k, -10.0, 10.0, rng, restarts=2)
    km = KMeans(k, n_init=3, random_state=0).fit(x)
    assert sse(x, result.centres) / sse(x, km.cluster_centers_) < 1.05
    assert result.weights / result.weights.sum() == pytest.approx(np.full(k, 0.25), abs=0.05)


def test_centroids_stay_in_the_public_box():
    rng = np.random.default_rng(2)
    true = np.array([[4.0, 4.0], [-4.0, -4.0]])
    x = mixture(2000, true, rng)
    op = SketchOperator.draw(2, 40, sigma2=2.0, rng=rng)
    s = op.sum(x, rng)
    result = decode((s.re + 1j * s.im) / s.n, op, 2, [-2.0, -8.0], [2.0, 8.0], rng)
    assert (result.centres[:, 0] >= -2.0).all() and (result.centres[:, 0] <= 2.0).all()
    assert (np.abs(result.centres[:, 1]) <= 8.0).all()
    assert np.sort(result.centres[:, 1]) == pytest.approx([-4.0, 4.0], abs=0.5)
