"""Random Fourier features: kernel approximation, norms, frequency law, sparse/batched input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.errors import DataError
from dpgm.features.rff import RandomFourierFeatures, rbf_kernel

GAMMA = 0.05


@pytest.fixture
def binary_rows() -> np.ndarray:
    return (np.random.default_rng(1).random((40, 30)) < 0.3).astype(np.uint8)


def kernel_error(x: np.ndarray, d: int, kind: str, seed: int) -> float:
    rff = RandomFourierFeatures.draw(
        x.shape[1], d, gamma=GAMMA, kind=kind, rng=np.random.default_rng(seed)
    )
    z = rff.transform(x, clip=False).astype(np.float64)
    return float(np.abs(z @ z.T - rbf_kernel(x, x, GAMMA)).mean())


@pytest.mark.parametrize("kind", ["paired", "cosine"])
def test_kernel_approximation_error_shrinks_with_d(binary_rows, kind):
    errors = [
        np.mean([kernel_error(binary_rows, d, kind, s) for s in range(5)]) for d in (10, 100, 1000)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03
    # Monte Carlo rate: error ~ 1/sqrt(D), so 100x more frequencies cut it by ~10x.
    assert errors[0] / errors[2] > 5


def test_paired_map_norms_are_exactly_one(binary_rows):
    rff = RandomFourierFeatures.draw(
        30, 64, gamma=GAMMA, kind="paired", rng=np.random.default_rng(0)
    )
    z = rff.transform(binary_rows)
    assert z.shape == (40, 128) and rff.dim == 128 and z.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-6)


def test_cosine_map_is_clipped_to_norm_one(binary_rows):
    rff = RandomFourierFeatures.draw(
        30, 8, gamma=GAMMA, kind="cosine", rng=np.random.default_rng(0)
    )
    raw = np.linalg.norm(rff.transform(binary_rows, clip=False), axis=1)
    clipped = np.linalg.norm(rff.transform(binary_rows), axis=1)
    assert raw.max() > 1.05  # the unclipped cosine map really exceeds 1 (docs/paper.md, note 2)
    assert clipped.max() <= 1.0 + 1e-6
    small = raw <= 1.0
    np.testing.assert_allclose(clipped[small], raw[small], rtol=1e-6)


def test_frequencies_have_variance_two_gamma():
    rff = RandomFourierFeatures.draw(
        2, 100_000, gamma=0.3, kind="cosine", rng=np.random.default_rng(0)
    )
    assert rff.frequencies.var() == pytest.approx(2 * 0.3, rel=0.02)
    assert 0.0 <= rff.phases.min() and rff.phases.max() < 2 * math.pi


def test_sparse_and_batched_input_match_dense(binary_rows):
    rff = RandomFourierFeatures.draw(
        30, 16, gamma=GAMMA, kind="cosine", rng=np.random.default_rng(3)
    )
    dense = rff.transform(binary_rows)
    np.testing.assert_allclose(rff.transform(sp.csr_matrix(binary_rows)), dense, atol=1e-6)
    np.testing.assert_allclose(rff.transform(binary_rows, batch_rows=7), dense, atol=1e-6)


def test_same_generator_gives_same_map_and_wrong_width_is_rejected(binary_rows):
    a = RandomFourierFeatures.draw(30, 5, gamma=GAMMA, kind="paired", rng=np.random.default_rng(9))
    b = RandomFourierFeatures.draw(30, 5, gamma=GAMMA, kind="paired", rng=np.random.default_rng(9))
    np.testing.assert_array_equal(a.frequencies, b.frequencies)
    with pytest.raises(DataError, match="expects rows of 30"):
        a.transform(binary_rows[:, :10])
    with pytest.raises(ValueError, match="feature map"):
        RandomFourierFeatures.draw(30, 5, gamma=GAMMA, kind="sine", rng=np.random.default_rng(0))
