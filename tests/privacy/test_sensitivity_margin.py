"""One record moves every released sum by at most its sensitivity, after rounding.

Records near the clip norm, and records whose float32 clipping would land above it, are clipped
and summed by the real code paths; each clipped row's norm and the change one added record makes
to a sum are measured in float64 and must not exceed the bound the noise is calibrated to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.clustering.kernel_kmeans import DPKernelKMeans
from dpgm.clustering.lloyd import DPLloyd
from dpgm.clustering.noisy_lloyd import part_sums
from dpgm.clustering.sketch import SketchOperator
from dpgm.data.dataset import BinaryDataset
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import CLIP_MARGIN, clip_rows, row_norms
from dpgm.stages import items as top_items
from dpgm.stages import part_means
from dpgm.stages.items import noisy_top_item_ids
from dpgm.training.mechanism import clip_factors

N = 200_000  # the size at which float32 sums moved by 1.001 for a sensitivity of 1
POSITIONS = (0, N // 2, N)  # where the added record goes: every rounding after it changes


def float64_norms(rows: Any) -> np.ndarray:
    """Exact-as-float64 L2 norms of stored rows (dense or CSR, any float dtype)."""
    dense = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    return np.sqrt((dense.astype(np.float64) ** 2).sum(axis=1))


def naive_float32_clip(rows: np.ndarray, bound: float) -> np.ndarray:
    """Clipping as float32 code writes it (no margin): the rounding the margin must absorb."""
    rows = rows.astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    scale = np.where(norms > bound, bound / norms, 1.0).astype(np.float32)
    return rows * scale[:, None]


def near_bound_rows(bound: float, rng: np.random.Generator, n: int = 20_000, dim: int = 50):
    """float32 rows of norm bound (1 + t), t in +-1e-6 (both sides of the margin) and +-10%."""
    g = rng.normal(size=(n, dim))
    tiny = rng.uniform(-1e-6, 1e-6, size=n)
    wide = rng.uniform(-0.1, 0.1, size=n)
    stretch = np.where(np.arange(n) % 2 == 0, tiny, wide)
    return (g / np.linalg.norm(g, axis=1, keepdims=True) * bound * (1 + stretch)[:, None]).astype(
        np.float32
    )


def neighbour_gap(statistic: Callable[[Any], np.ndarray], base: Any, extra: Any) -> float:
    """Largest ||statistic(base + extra) - statistic(base)||, extra inserted at each position."""
    before = statistic(base)
    gaps = []
    for pos in POSITIONS:
        if sp.issparse(base):
            both = sp.vstack([base[:pos], extra, base[pos:]], format="csr")
        else:
            both = np.insert(base, pos, extra, axis=0)
        gaps.append(float(np.linalg.norm(statistic(both) - before)))
    return max(gaps)


@pytest.mark.parametrize("bound", [1.0, 1.5, math.sqrt(784), 0.1])
@pytest.mark.parametrize("sparse", [False, True])
def test_clipped_rows_never_exceed_the_bound_where_float32_clipping_does(bound, sparse):
    rows = near_bound_rows(bound, np.random.default_rng(0))
    assert float64_norms(naive_float32_clip(rows, bound)).max() > bound  # the rows do bite
    clipped = clip_rows(sp.csr_matrix(rows) if sparse else rows, bound)
    norms = float64_norms(clipped)
    assert norms.max() <= bound
    original = float64_norms(rows)
    over = original > bound * (1 - CLIP_MARGIN)
    # rows over the margin end at it (float32 storage: relative 1e-7), the others are untouched
    np.testing.assert_allclose(norms[over], bound * (1 - CLIP_MARGIN), rtol=1e-7)
    dense = clipped.toarray() if sparse else clipped
    np.testing.assert_array_equal(dense[~over], rows[~over])
    np.testing.assert_allclose(row_norms(clipped), norms, rtol=1e-12)


def test_csr_rows_with_duplicate_entries_are_clipped_by_their_summed_value():
    rows = sp.csr_matrix((np.array([0.8, 0.8]), np.array([0, 0]), np.array([0, 2])), shape=(1, 3))
    assert float64_norms(clip_rows(rows, 1.0)).max() <= 1.0  # the entry is 1.6, not two 0.8s


def _binary(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Binary records holding 1..m items: clipped to norm 1, their entries are 1/sqrt(len)."""
    records = (rng.random((n, m)) < 0.5).astype(np.uint8)
    records[:, 0] = 1
    return records


def test_lloyd_sums_move_by_at_most_the_clip_norm_at_200000_records():
    rng = np.random.default_rng(1)
    lloyd = DPLloyd(k=2, clip_norm=1.0)
    lloyd._setup(4, rng)
    base = sp.csr_matrix(_binary(N, 4, rng))
    extra = sp.csr_matrix(np.ones((1, 4), dtype=np.uint8))  # the longest record: every entry scaled

    def sums(records: sp.csr_matrix) -> np.ndarray:
        rows = lloyd._rows(records)
        assert float64_norms(rows).max() <= 1.0
        counts, total = part_sums(rows, np.zeros(rows.shape[0], dtype=np.int64), 2)
        assert counts.dtype == np.float64 and total.dtype == np.float64
        return total

    assert neighbour_gap(sums, base, extra) <= lloyd.bound_


def test_lloyd_part_counts_move_by_one():
    rows = np.ones((N, 2), dtype=np.float32)
    parts = np.arange(N) % 3
    counts, _ = part_sums(rows, parts, 3)
    more, _ = part_sums(np.vstack([rows, rows[:1]]), np.append(parts, 1), 3)
    np.testing.assert_array_equal(more - counts, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("feature_map", ["paired", "cosine"])
def test_kernel_kmeans_feature_sums_move_by_at_most_one(feature_map):
    rng = np.random.default_rng(2)
    kkm = DPKernelKMeans(k=2, features=16, feature_map=feature_map, gamma=0.5)
    kkm._setup(5, rng)
    base = rng.normal(size=(N, 5)).astype(np.float32)
    candidates = rng.normal(size=(5000, 5)).astype(np.float32)
    raw = kkm.feature_map_.transform(candidates, clip=False)
    extra = candidates[[int(np.argmax(float64_norms(raw)))]]  # the feature row farthest out
    assert float64_norms(raw).max() > 1.0  # unclipped: rounding (paired), the map (cosine)

    def sums(records: np.ndarray) -> np.ndarray:
        rows = kkm._rows(records)
        assert float64_norms(rows).max() <= kkm.bound_
        return part_sums(rows, np.zeros(rows.shape[0], dtype=np.int64), 1)[1]

    assert neighbour_gap(sums, base, extra) <= kkm.bound_


def _captured(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[tuple[np.ndarray, float]]:
    """Replace ``module.gaussian_release`` by a recorder: (values, sensitivity) of each call."""
    calls: list[tuple[np.ndarray, float]] = []

    def record(values: Any, *, sensitivity: float, **_: Any) -> np.ndarray:
        calls.append((np.array(values, dtype=np.float64), sensitivity))
        return np.array(values, dtype=np.float64)

    monkeypatch.setattr(module, "gaussian_release", record)
    return calls


@pytest.mark.parametrize("clip", [1.0, None])
def test_part_mean_sums_move_by_at_most_their_sensitivity(monkeypatch, clip):
    calls = _captured(monkeypatch, part_means)
    rng = np.random.default_rng(3)
    m = 6
    extra = np.ones((1, m), dtype=np.uint8)  # norm sqrt(m): at the bound when clip is None

    def sums(records: np.ndarray) -> np.ndarray:
        part_means.noisy_part_means(records, np.zeros(len(records), dtype=np.int64),
                                    np.array([float(N), 1.0]), clip=clip, noise_multiplier=1.0,
                                    accountant=Accountant(delta=1e-5), rng=rng)
        return calls[-1][0]

    gap = neighbour_gap(sums, _binary(N, m, rng), extra)
    bound = math.sqrt(m) if clip is None else clip
    assert {sensitivity for _, sensitivity in calls} == {bound}
    assert gap <= bound


def test_top_item_counts_move_by_at_most_one(monkeypatch):
    calls = _captured(monkeypatch, top_items)
    rng = np.random.default_rng(4)
    base = _binary(N, 3, rng)
    for records in (base, np.vstack([np.ones((1, 3), dtype=np.uint8), base])):
        data = BinaryDataset(records=sp.csr_matrix(records), item_names=["a", "b", "c"])
        noisy_top_item_ids(data, 2, noise_multiplier=1.0, accountant=Accountant(delta=1e-5),
                           rng=rng)
    (before, bound), (after, _) = calls
    assert bound == 1.0 and np.linalg.norm(after - before) <= 1.0


def test_sketch_sum_moves_by_at_most_its_l2_sensitivity():
    rng = np.random.default_rng(5)
    m = 16
    op = SketchOperator.draw(3, m, sigma2=1.0, rng=rng, signature="exp")  # r = m: no masks
    base = rng.normal(size=(N, 3)).astype(np.float32)
    candidates = rng.normal(size=(20_000, 3)).astype(np.float32)
    theta = (candidates @ op.omega.astype(np.float32) + op.dither.astype(np.float32))
    size = np.sqrt((np.cos(theta).astype(np.float64) ** 2 + np.sin(theta).astype(np.float64) ** 2)
                   .sum(axis=1))
    assert size.max() > math.sqrt(m)  # float32 cos and sin put |f| above 1
    extra = candidates[[int(np.argmax(size))]]

    def sketch(records: np.ndarray) -> np.ndarray:
        s = op.sum(records, np.random.default_rng(0))
        return np.concatenate([s.re, s.im])

    assert neighbour_gap(sketch, base, extra) <= math.sqrt(m)  # l2_sensitivity("exp", m)


def test_dpsgd_clip_factors_keep_float32_gradients_within_the_clip_norm():
    gen = torch.Generator().manual_seed(6)
    for clip in (1.0, 0.37, 5.0):
        g = torch.randn(4000, 500, generator=gen)
        stretch = 1 + 1e-6 * (2 * torch.rand(4000, 1, generator=gen) - 1)  # norm C (1 +- 1e-6)
        g = g / g.norm(dim=1, keepdim=True) * clip * stretch
        norms = g.norm(dim=1)  # float32, as ghost clipping gives them
        clip_t = torch.tensor(clip, dtype=torch.float32)
        naive = g * torch.where(norms > clip_t, clip_t / norms, torch.ones_like(norms))[:, None]
        assert naive.double().norm(dim=1).max().item() > clip  # the margin-free factor exceeds C
        clipped = g * clip_factors(norms, clip)[:, None]
        assert clipped.double().norm(dim=1).max().item() <= clip
