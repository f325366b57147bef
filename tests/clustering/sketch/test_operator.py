"""The sketch operator: values against eq. (2), streaming and sparse inputs, masks, exact shard sums."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.clustering.sketch import random_subsets
from tests.clustering.sketch._helpers import SIGNATURES, added_f, one_record_sums, operator


@pytest.mark.parametrize("signature", SIGNATURES)
def test_sketch_equals_direct_formula(signature):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 3))
    op = operator(3, 5, signature)
    s = op.sum(x, rng, dtype=np.float64, chunk_rows=3)
    expected = added_f(x @ op.omega + op.dither, signature).sum(axis=0)
    np.testing.assert_allclose(s.re + 1j * s.im, expected, atol=1e-9)
    assert s.n == 7


@pytest.mark.parametrize("signature", SIGNATURES)
def test_float32_streaming_and_sparse_inputs_agree(signature):
    rng = np.random.default_rng(4)
    x = (rng.random((300, 20)) < 0.2).astype(np.uint8)
    op = operator(20, 64, signature)
    ref = op.sum(x, rng, dtype=np.float64)
    for records in (x, sp.csr_matrix(x), iter([x[:100], x[100:250], x[250:]])):
        got = op.sum(records, rng, chunk_rows=37)
        # float32 phases can flip f_q at a quadrant boundary: allow one flip (2) per entry
        np.testing.assert_allclose(got.re, ref.re, atol=2.01 if signature == "quantised" else 1e-3)
        np.testing.assert_allclose(got.im, ref.im, atol=2.01 if signature == "quantised" else 1e-3)
        assert got.n == 300


@pytest.mark.parametrize("r", [1, 2, 4, 5])  # 2r <= m (kept entries) and 2r > m (dropped ones)
def test_each_record_contributes_to_exactly_r_entries(r):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 3))
    op = operator(3, 5, "exp", r)
    single = one_record_sums(op, x)
    full = added_f(x @ op.omega + op.dither, "exp")
    kept = np.abs(single) > 1e-9
    assert (kept.sum(axis=1) == r).all()
    np.testing.assert_allclose(single[kept], full[kept], atol=1e-9)


def test_random_subsets_are_distinct_and_uniform():
    rng = np.random.default_rng(6)
    idx = random_subsets(20000, 10, 4, rng)
    assert idx.shape == (20000, 4)
    assert all(len(set(row)) == 4 for row in idx[:500])
    freq = np.bincount(idx.ravel(), minlength=10) / 20000
    np.testing.assert_allclose(freq, 0.4, atol=0.015)  # entry j kept with probability r/m


@pytest.mark.parametrize("r", [None, 3])
def test_merged_shard_sums_equal_the_one_shot_sum(r):
    op = operator(4, 12, "exp", r)
    data = np.random.default_rng(13).normal(size=(400, 4))
    one_shot = op.sum(data, np.random.default_rng(14), chunk_rows=100, dtype=np.float64)
    rng = np.random.default_rng(14)  # shards sketched one after the other draw the same masks
    shards = [
        op.sum(data[i : i + 100], rng, chunk_rows=100, dtype=np.float64) for i in range(0, 400, 100)
    ]
    merged = sum(shards[1:], shards[0])
    np.testing.assert_allclose(merged.re, one_shot.re, atol=1e-9)
    np.testing.assert_allclose(merged.im, one_shot.im, atol=1e-9)
    assert merged.n == 400
