"""Marginal TVDs: hand-computed examples, brute force on random data, identity, symmetry."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.evaluation.marginal_tvd import TRIPLE_BITS, choose_triples, length_tvd, marginal_tvd, triple_frequencies


def test_two_items_by_hand() -> None:
    real = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    syn = np.array([[1, 1], [1, 1]])
    out = marginal_tvd(real, syn)
    # 1-way: p = 0.5 vs 1 for both items -> 0.5 each
    assert out.oneway == pytest.approx(0.5)
    # 2-way: real uniform over 00, 01, 10, 11; synthetic all 11 -> (0.25 * 3 + 0.75) / 2
    assert out.twoway == pytest.approx(0.75)
    # lengths: real {0: .25, 1: .5, 2: .25}, synthetic {2: 1} -> (.25 + .5 + .75) / 2
    assert out.length == pytest.approx(0.75)
    assert np.isnan(out.threeway) and out.n_triples == 0


def test_three_items_by_hand() -> None:
    real = np.array([[1, 1, 1], [0, 0, 0]])
    syn = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0], [0, 0, 0]])
    out = marginal_tvd(real, sp.csr_matrix(syn))
    assert out.oneway == pytest.approx((0 + 0 + 0.5) / 3)  # item 2: 0.5 vs 0
    assert out.twoway == pytest.approx((0 + 0.5 + 0.5) / 3)  # (0,1) equal; (0,2), (1,2): 11 vs 10
    assert out.threeway == pytest.approx(0.5)  # 111 and 000 vs 110 and 000
    assert out.length == pytest.approx(0.5)  # {0: .5, 3: .5} vs {0: .5, 2: .5}
    assert out.n_triples == 1 and out.all_triples


def _brute(real: np.ndarray, syn: np.ndarray, cliques: list[tuple[int, ...]]) -> float:
    def table(x: np.ndarray, cl: tuple[int, ...]) -> np.ndarray:
        codes = x[:, list(cl)] @ (1 << np.arange(len(cl))[::-1])
        return np.bincount(codes, minlength=1 << len(cl)) / len(x)

    return float(np.mean([0.5 * np.abs(table(real, c) - table(syn, c)).sum() for c in cliques]))


def test_matches_brute_force_dense_and_sparse() -> None:
    rng = np.random.default_rng(0)
    m = 6
    real = (rng.random((300, m)) < rng.random(m)).astype(np.uint8)
    syn = (rng.random((170, m)) < rng.random(m)).astype(np.uint8)
    for a, b in [
        (real, syn),
        (sp.csr_matrix(real), sp.csr_matrix(syn)),
        (BinaryDataset(records=real, item_names=list("abcdef")), syn),
    ]:
        out = marginal_tvd(a, b)
        for k, value in [(1, out.oneway), (2, out.twoway), (3, out.threeway)]:
            assert value == pytest.approx(
                _brute(real, syn, list(itertools.combinations(range(m), k))), abs=1e-12
            )
    lr, ls = real.sum(1), syn.sum(1)
    expected = (
        0.5
        * np.abs(
            np.bincount(lr, minlength=m + 1) / 300 - np.bincount(ls, minlength=m + 1) / 170
        ).sum()
    )
    assert length_tvd(real, syn) == pytest.approx(expected)


def test_sampled_triples_are_seeded_and_exact_on_the_sample() -> None:
    rng = np.random.default_rng(1)
    m = 12  # C(12, 3) = 220 triples
    real = (rng.random((400, m)) < 0.3).astype(np.uint8)
    syn = (rng.random((300, m)) < 0.4).astype(np.uint8)
    triples, exact = choose_triples(m, 50, np.random.default_rng(7))
    assert not exact and len(triples) == 50 and len({tuple(t) for t in triples}) == 50
    assert np.all((triples[:, 0] < triples[:, 1]) & (triples[:, 1] < triples[:, 2]))
    out = marginal_tvd(real, syn, max_triples=50, rng=np.random.default_rng(7))
    assert out.n_triples == 50 and not out.all_triples
    assert out.threeway == pytest.approx(_brute(real, syn, [tuple(t) for t in triples]), abs=1e-12)
    again = marginal_tvd(real, syn, max_triples=50, rng=np.random.default_rng(7))
    assert again == out
    assert marginal_tvd(real, syn, max_triples=220).all_triples


def test_identity_and_symmetry() -> None:
    rng = np.random.default_rng(2)
    a = (rng.random((200, 5)) < 0.3).astype(np.uint8)
    b = (rng.random((120, 5)) < 0.5).astype(np.uint8)
    same = marginal_tvd(a, np.concatenate([a, a]))  # same distribution, different n
    assert same.oneway == same.twoway == same.threeway == same.length == 0.0
    ab, ba = marginal_tvd(a, b), marginal_tvd(b, a)
    assert ab == ba
    assert 0 < ab.oneway <= 1 and 0 < ab.twoway <= 1 and 0 < ab.threeway <= 1


def test_triple_counts_over_many_chunks_match_brute_force() -> None:
    """30,000 records: the triples' bit sets come in several chunks (TRIPLE_BITS); every count is exact."""
    rng = np.random.default_rng(5)
    dense = rng.random((30_000, 30)) < np.linspace(0.02, 0.6, 30)
    triples, exact = choose_triples(30, 5000, rng)
    assert exact and len(triples) > 3 * TRIPLE_BITS // (3 * 30_000)
    got = triple_frequencies(sp.csr_matrix(dense.astype(np.int64)), triples)
    want = (dense[:, triples[:, 0]] & dense[:, triples[:, 1]] & dense[:, triples[:, 2]]).mean(axis=0)
    np.testing.assert_array_equal(got, want)
