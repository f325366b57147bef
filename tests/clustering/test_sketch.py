"""Compressive sketch: values, masks, sensitivity search, noise scales, merging, partitioner."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.clustering import make_partitioner
from dpgm.clustering.base import STAGE
from dpgm.clustering.sketch import (
    C_F,
    PrivateSketch,
    SketchNoise,
    SketchOperator,
    SketchPartitioner,
    l1_sensitivity,
    l2_sensitivity,
    make_projection,
    plan_noise,
    random_subsets,
    release_sketch,
    theorem1_sigma_xi,
)
from dpgm.config import PartitionConfig
from dpgm.errors import PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent, LaplaceEvent, Neighbouring
from tests.clustering._fixtures import block_dataset

SIGNATURES = ("exp", "quantised")


def direct_f(theta: np.ndarray, signature: str) -> np.ndarray:
    """The signature functions of eq. (2), written out with NumPy."""
    if signature == "exp":
        return np.exp(1j * theta)
    return np.sign(np.cos(theta)) + 1j * np.sign(np.sin(theta))


def operator(d: int, m: int, signature: str = "exp", r: int | None = None, seed: int = 0):
    return SketchOperator.draw(
        d, m, sigma2=1.0, rng=np.random.default_rng(seed), signature=signature, measurements=r
    )


def one_record_sums(op: SketchOperator, records: np.ndarray, seed: int = 1) -> np.ndarray:
    """Complex sketch sum of each record alone (its masked contribution), float64."""
    rng = np.random.default_rng(seed)
    out = []
    for x in records:
        s = op.sum(x[None, :], rng, dtype=np.float64)
        out.append(s.re + 1j * s.im)
    return np.array(out)


def l1(v: np.ndarray) -> np.ndarray:
    return np.abs(v.real).sum(-1) + np.abs(v.imag).sum(-1)


def l2(v: np.ndarray) -> np.ndarray:
    return np.sqrt((np.abs(v) ** 2).sum(-1))


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("signature", SIGNATURES)
def test_sketch_equals_direct_formula(signature):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 3))
    op = operator(3, 5, signature)
    s = op.sum(x, rng, dtype=np.float64, chunk_rows=3)
    expected = direct_f(x @ op.omega + op.dither, signature).sum(axis=0)
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
    full = direct_f(x @ op.omega + op.dither, "exp")
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


# ---------------------------------------------------------------- sensitivity search


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
    records = np.vstack([box_records(8, rng, 100), adversarial_records(op)])
    change = one_record_sums(op, records)  # S(D + x) - S(D) under the same masks for D
    assert l1(change).max() <= l1_sensitivity(signature, r) + 1e-9
    assert l2(change).max() <= l2_sensitivity(signature, r) + 1e-9
    assert l1(change[-2:]).max() == pytest.approx(l1_sensitivity(signature, r), rel=1e-9)
    assert l2(change).max() == pytest.approx(l2_sensitivity(signature, r), rel=1e-9)


@pytest.mark.parametrize("signature", SIGNATURES)
def test_adding_a_record_to_a_dataset_changes_the_sum_by_its_masked_contribution(signature):
    op = operator(8, 8, signature, 3)
    rng = np.random.default_rng(8)
    data = rng.normal(size=(50, 8))
    x = adversarial_records(op)[:1]
    a = op.sum(data, np.random.default_rng(9), chunk_rows=1, dtype=np.float64)
    b = op.sum(np.vstack([data, x]), np.random.default_rng(9), chunk_rows=1, dtype=np.float64)
    diff = (b.re - a.re) + 1j * (b.im - a.im)
    assert l1(diff) <= l1_sensitivity(signature, 3) + 1e-9
    assert l1(diff) == pytest.approx(l1_sensitivity(signature, 3), rel=1e-9)


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


# ---------------------------------------------------------------- noise and ledger


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


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_release_charges_first_then_adds_noise_of_the_stated_scale(mechanism):
    op = operator(2, 4000, "exp", 1000)
    rng = np.random.default_rng(11)
    total = op.sum(rng.normal(size=(50, 2)), rng)
    acc = Accountant(delta=1e-6)
    noise = plan_noise(mechanism, target_epsilon=1.0, noise_multiplier=1.0, delta=acc.delta)
    out = release_sketch(total, op, noise, accountant=acc, rng=rng)
    entries = acc.ledger.entries
    assert [e.stage for e in entries] == [STAGE, STAGE]
    if mechanism == "laplace":
        assert all(isinstance(e.event, LaplaceEvent) for e in entries)
        assert sum(e.event.epsilon for e in entries) == pytest.approx(1.0)
        expected_std = math.sqrt(2) * l1_sensitivity("exp", 1000) / entries[0].event.epsilon
    else:
        assert all(isinstance(e.event, GaussianEvent) for e in entries)
        assert acc.spent().epsilon == pytest.approx(1.0, rel=1e-4)
        expected_std = entries[0].event.noise_multiplier * l2_sensitivity("exp", 1000)
    noise_re = np.concatenate([out.re - total.re, out.im - total.im])
    assert noise_re.std() == pytest.approx(expected_std, rel=0.05)
    assert out.privacy["neighbouring"] == "add_remove"


def test_release_over_budget_refuses_without_charging():
    op = operator(2, 16)
    rng = np.random.default_rng(12)
    total = op.sum(rng.normal(size=(10, 2)), rng)
    acc = Accountant(delta=1e-6, budget_epsilon=0.5)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        release_sketch(total, op, SketchNoise("laplace", epsilon=0.6), accountant=acc, rng=rng)
    assert acc.ledger.entries == []
    assert rng.bit_generator.state == state  # no noise was drawn


# ---------------------------------------------------------------- merging


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


def test_merged_private_sketches_are_the_count_weighted_average():
    op = operator(3, 20)
    rng = np.random.default_rng(15)
    acc = Accountant(delta=1e-6)
    shards = [
        release_sketch(
            op.sum(rng.normal(size=(n, 3)), rng),
            op,
            SketchNoise("laplace", epsilon=1.0),
            accountant=acc,
            rng=rng,
        )
        for n in (100, 300, 50)
    ]
    merged = PrivateSketch.merge(shards)
    weights = np.array([s.count for s in shards])
    expected = (weights[:, None] * np.array([s.normalised() for s in shards])).sum(
        0
    ) / weights.sum()
    np.testing.assert_allclose(merged.normalised(), expected, rtol=1e-12)
    assert merged.holders == 3
    other = operator(3, 20, seed=99)
    foreign = release_sketch(
        other.sum(rng.normal(size=(5, 3)), rng),
        other,
        SketchNoise("laplace", epsilon=1.0),
        accountant=acc,
        rng=rng,
    )
    with pytest.raises(ValueError, match="different sketch operators"):
        PrivateSketch.merge([shards[0], foreign])


# ---------------------------------------------------------------- the partitioner


def test_projection_folds_into_the_frequencies():
    rng = np.random.default_rng(16)
    public = (rng.random((200, 30)) < 0.3).astype(float)
    proj = make_projection(30, 5, public, rng)
    op = SketchOperator.draw(5, 40, sigma2=0.5, rng=rng)
    x = (rng.random((60, 30)) < 0.3).astype(np.uint8)
    raw = proj.sketch_operator(op).sum(x, rng, dtype=np.float64)
    projected = op.sum(proj.apply(x), rng, dtype=np.float64)
    np.testing.assert_allclose(raw.re, projected.re, atol=1e-8)
    y = proj.apply(public)
    assert (y >= proj.lower).all() and (y <= proj.upper).all()
    rand = make_projection(30, 5, None, rng)
    y = rand.apply(x)
    assert (y >= rand.lower - 1e-12).all() and (y <= rand.upper + 1e-12).all()


@pytest.mark.parametrize("sparse", [False, True])
def test_partitioner_recovers_block_clusters_with_one_charged_release(sparse):
    data = block_dataset(n=900, k=3, sparse=sparse, seed=1)
    public = block_dataset(n=300, k=3, seed=2)
    part = SketchPartitioner(k=3, sketch_size=200, target_epsilon=2.0, decodes=2, public=public)
    acc = Accountant(delta=1e-5)
    result = part.fit(data, acc, np.random.default_rng(17))
    assert len(acc.ledger.entries) == 2 and acc.spent().epsilon <= 2.0 + 1e-9
    assert result.centres.shape == (3, 30) and ((result.centres >= 0) & (result.centres <= 1)).all()
    assert result.noisy_sizes.sum() == pytest.approx(result.info["released_count"])
    contingency = np.zeros((3, 3))
    np.add.at(contingency, (result.assignments, data.labels), 1)
    assert contingency.max(axis=0).sum() / 900 > 0.95  # each label lands (almost) in one part
    np.testing.assert_array_equal(part.assign(data.records), result.assignments)


def test_make_partitioner_builds_the_sketch_partitioner_from_config():
    cfg = PartitionConfig(
        method="sketch",
        k=3,
        sketch_size=64,
        sketch_mechanism="laplace",
        target_epsilon=1.0,
        sketch_decodes=1,
        sketch_projection=None,
    )
    part = make_partitioner(cfg)
    assert isinstance(part, SketchPartitioner) and part.mechanism == "laplace"
    data = block_dataset(n=300, k=3, block=4, seed=3)
    acc = Accountant(delta=1e-5)
    result = part.fit(data, acc, np.random.default_rng(18))
    assert result.info["stage_epsilon"] == pytest.approx(
        1.0
    ) and acc.spent().epsilon == pytest.approx(1.0)
    assert result.info["projection"] == "none" and result.assignments.shape == (300,)


def test_partitioner_on_real_mnist(shared_data_dir):
    if not (shared_data_dir / "mnist").is_dir():
        pytest.skip("no mnist/ in DPGM_DATA_DIR")
    from dpgm.data import load_mnist
    from dpgm.evaluation.metrics import clustering_accuracy

    train = load_mnist("train", directory=shared_data_dir / "mnist", limit=20000)
    test = load_mnist("test", directory=shared_data_dir / "mnist", limit=3000)
    part = SketchPartitioner(k=10, sketch_size=500, decodes=1, public=test)  # Gaussian, sigma 40
    result = part.fit(train, Accountant(delta=1e-5), np.random.default_rng(19))
    assert clustering_accuracy(train.labels, result.assignments) > 0.3  # chance: 0.11
