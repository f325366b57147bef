"""AIM, MST and their shared machinery on attributes of several values (a coded table)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpgm.errors import ConfigError, DataError
from dpgm.evaluation import pgm
from dpgm.evaluation.pgm import CodedRecords, TrueMarginals
from dpgm.privacy.accountant import Accountant

SIZES = (3, 2, 4)
CODES = np.array([[0, 0, 0], [2, 1, 3], [2, 1, 3], [1, 0, 2], [0, 1, 1], [2, 0, 3]])


def hand_counts(codes: np.ndarray, sizes: tuple[int, ...], clique: tuple[int, ...]) -> np.ndarray:
    """Counts of ``clique``'s value combinations, the first attribute most significant, by loops."""
    out = np.zeros(int(np.prod([sizes[j] for j in clique])))
    for row in codes:
        index = 0
        for j in clique:
            index = index * sizes[j] + int(row[j])
        out[index] += 1
    return out


@pytest.mark.parametrize("histogram", [True, False])
def test_true_marginals_of_a_coded_table_match_hand_counts(histogram: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not histogram:  # every marginal by its own bincount
        monkeypatch.setattr(pgm.workload, "MAX_HISTOGRAM_CELLS", 1)
    truth = TrueMarginals(CodedRecords(CODES, SIZES))
    assert (truth._hist is not None) == histogram
    assert truth((1,)).tolist() == [3, 3]
    assert truth((0, 2)).tolist() == [1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 3]  # (0,0) (0,1); (1,2); (2,3) x 3
    for clique in pgm.powerset((0, 1, 2)):
        np.testing.assert_array_equal(truth(clique), hand_counts(CODES, SIZES, clique))
        assert truth.cells(clique) == len(truth(clique))


def test_true_marginals_over_more_attributes_than_an_array_has_dimensions() -> None:
    """MST's compression leaves attributes of one value: 70 of them and two binary ones are 4 cells, over more
    dimensions than NumPy allows an array; each marginal is then counted by itself."""
    rng = np.random.default_rng(0)
    sizes = (1,) * 70 + (2, 2)
    codes = np.zeros((50, 72), dtype=np.int64)
    codes[:, 70:] = rng.integers(0, 2, (50, 2))
    truth = TrueMarginals(CodedRecords(codes, sizes))
    assert truth._hist is None
    np.testing.assert_array_equal(truth((70, 71)), hand_counts(codes, sizes, (70, 71)))
    assert truth((3,)).tolist() == [50]


def test_coded_records_refuse_codes_outside_their_sizes() -> None:
    with pytest.raises(DataError, match="outside"):
        CodedRecords(np.array([[0, 2]]), (2, 2))
    with pytest.raises(DataError, match="code matrix"):
        CodedRecords(np.zeros((3, 2), dtype=np.int64), (2, 2, 2))


def correlated(n: int, sizes: tuple[int, ...], seed: int) -> CodedRecords:
    """Records whose attributes all follow one hidden uniform variable (strongly dependent)."""
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    codes = np.column_stack([np.minimum((z + 0.3 * rng.random(n)) / 1.3 * s, s - 1).astype(np.int64) for s in sizes])
    return CodedRecords(codes, sizes)


def test_model_size_matches_mbi_on_mixed_sizes() -> None:
    pytest.importorskip("mbi")
    mbi = pgm.import_mbi()
    rng = np.random.default_rng(0)
    for trial in range(20):
        m = int(rng.integers(3, 12))
        sizes = tuple(int(s) for s in rng.integers(2, 40, m))
        if trial % 2:  # a tree: mbi eliminates it without fill-in whatever the sizes
            cliques = [(j,) for j in range(m)] + [tuple(sorted((j, int(rng.integers(0, j))))) for j in range(1, m)]
        else:
            cliques = [(j,) for j in range(m)] + [tuple(sorted(rng.choice(m, int(rng.integers(2, 4)), replace=False)))
                                                  for _ in range(int(rng.integers(0, 2 * m)))]
        expected = mbi.junction_tree.hypothetical_model_size(pgm.mbi_domain(sizes), [pgm.clique_attrs(c) for c in cliques])
        assert pgm.model_size_mb(sizes, cliques) == pytest.approx(expected, rel=1e-12)


def test_junction_tree_marginals_and_samples_match_mbi_on_categories() -> None:
    pytest.importorskip("mbi")
    mbi = pgm.import_mbi()
    sizes = (3, 2, 4, 5, 2)
    truth = TrueMarginals(correlated(3000, sizes, 1))
    cliques = [(j,) for j in range(5)] + [(0, 1), (1, 2), (2, 3, 4), (0, 4)]
    model = pgm.fit_model([pgm.measurement(c, truth(c), 1.0) for c in cliques], sizes, 50)
    tree = pgm.JunctionTree.from_mbi(model, 5)
    assert tree.sizes == sizes
    for c in [(0, 2), (1, 2, 4), (3,)]:  # out of the model, spanning cliques, in one (mbi compiles each: 0.4 s)
        expected = mbi.marginal_oracles.variable_elimination(model.potentials, pgm.clique_attrs(c), float(model.total))
        np.testing.assert_allclose(tree.marginal(c), np.asarray(expected.datavector()), rtol=1e-9)
    draws = tree.sample(20_000, np.random.default_rng(0))
    assert draws.dtype == np.uint8 and (draws.max(axis=0) < np.array(sizes)).all()
    sample = TrueMarginals(CodedRecords(draws, sizes))
    for c in [(0, 1), (2, 3, 4), (0, 3)]:
        np.testing.assert_allclose(sample(c) / 20_000, tree.marginal(c) / tree.total, atol=0.015)


def test_compression_merges_exactly_the_values_below_three_sigma() -> None:
    noisy = [np.array([10.0, 2.9, -1.0, 3.0, 0.5]), np.array([2.0, 40.0]), np.array([0.0, 1.0, 9.0])]
    squeeze = pgm.compression(noisy, sigma=1.0)
    assert [k.tolist() for k in squeeze.kept] == [[0, 3], [0, 1], [2]]  # one value below: left as it is
    assert [m.tolist() for m in squeeze.merged] == [[1, 2, 4], [], [0, 1]]
    assert squeeze.sizes == (3, 2, 2) and squeeze.original_sizes == (5, 2, 3)
    assert squeeze.mapping(0).tolist() == [0, 2, 2, 1, 2]
    restored = squeeze.restore(np.array([[0, 1, 0], [2, 0, 0], [1, 0, 1]]), np.random.default_rng(0))
    assert restored[0].tolist() == [0, 1, 2] and restored[1, 2] == 2 and restored[2, :2].tolist() == [3, 0]
    assert restored[1, 0] in (1, 2, 4) and restored[2, 2] in (0, 1)  # a merged value: one of those it holds


def test_mst_merges_the_empty_values_at_a_huge_epsilon_and_spends_at_most_epsilon() -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.mst import fit_mst

    data = correlated(600, (6, 3, 5), 2)
    codes = data.codes.copy()
    codes[:, 0] = np.where(codes[:, 0] >= 3, 5, codes[:, 0])  # values 3 and 4 of attribute 0 never occur
    codes[:, 2] = np.where(codes[:, 2] == 1, 0, codes[:, 2])  # value 1 of attribute 2 alone is empty
    records = CodedRecords(codes, (6, 3, 5))
    acc = Accountant(delta=1e-6, budget_epsilon=1e4)
    res = fit_mst(records, epsilon=1e4, delta=1e-6, rng=np.random.default_rng(1), accountant=acc, iters=100)
    assert acc.spent().epsilon <= 1e4
    assert [m.tolist() for m in res.compression.merged] == [[3, 4], [], []]
    assert res.tree.sizes == (5, 3, 5)
    out = res.sample(400, np.random.default_rng(2))
    assert isinstance(out, CodedRecords) and out.sizes == (6, 3, 5)
    truth, synthetic = TrueMarginals(records), TrueMarginals(out)
    np.testing.assert_allclose(synthetic((0,)) / 400, truth((0,)) / 600, atol=0.08)  # nearly noiseless


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_aim_and_mst_on_a_coded_table_spend_at_most_epsilon_and_draw_codes(method: str) -> None:
    pytest.importorskip("mbi")
    from dpgm.evaluation.baselines import baseline_options, fit_baseline, model_from_state, model_state

    sizes = (4, 3, 7, 2)
    records = CodedRecords(correlated(800, sizes, 3).codes, sizes, ("a", "b", "c", "d"))
    options = baseline_options(method, {"max_iters": 20, "max_rounds": 1} if method == "aim" else {})
    fit = fit_baseline(method, records, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4), options=options)
    assert fit.accountant.spent().epsilon <= 1.0
    assert fit.report["epsilon"] <= 1.0
    out = fit.model.sample(300, np.random.default_rng(5))
    assert isinstance(out, CodedRecords) and out.sizes == sizes and out.names == ("a", "b", "c", "d")
    assert out.codes.shape == (300, 4) and (out.codes.max(axis=0) < np.array(sizes)).all()
    again = model_from_state(*model_state(fit.model))  # a saved model samples the same codes
    np.testing.assert_array_equal(again.sample(300, np.random.default_rng(5)).codes, out.codes)


def test_aim_workload_leaves_out_marginals_over_max_cells() -> None:
    from dpgm.evaluation.aim import make_workload

    workload = make_workload((100, 200, 3), 2, None, np.random.default_rng(0), max_cells=10_000)
    assert list(workload) == [(0, 2), (1, 2)]  # 100 x 200 = 20,000 cells: left out
    assert list(make_workload(4, 2, None, np.random.default_rng(0), max_cells=10_000)) == list(
        itertools.combinations(range(4), 2))
    with pytest.raises(ConfigError, match="small enough"):
        make_workload((200, 200), 2, None, np.random.default_rng(0), max_cells=10_000)


def test_items_only_baselines_refuse_a_coded_table() -> None:
    from dpgm.evaluation.baselines import fit_baseline

    with pytest.raises(ConfigError, match="binary items"):
        fit_baseline("marginals", CodedRecords(CODES, SIZES), epsilon=1.0, rng=np.random.default_rng(0))


def test_fits_clear_the_jax_caches_every_so_many_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    jax = pytest.importorskip("jax")
    from types import SimpleNamespace

    from dpgm.evaluation.pgm import fitting

    cleared: list[int] = []
    estimator = SimpleNamespace(estimate=lambda *args, **kwargs: "model")
    fake = SimpleNamespace(estimation=SimpleNamespace(MirrorDescent=lambda: estimator), Domain=lambda *a: a)
    monkeypatch.setattr(fitting, "import_mbi", lambda: fake)
    monkeypatch.setattr(fitting, "_fits", itertools.count(1))
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(1))
    for _ in range(2 * fitting.CLEAR_EVERY + 1):
        assert fitting.fit_model([], 3, 1) == "model"
    assert len(cleared) == 2  # at fits CLEAR_EVERY and 2 CLEAR_EVERY: a long run lets its programs go
