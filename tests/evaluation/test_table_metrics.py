"""Table metrics: the workload error and Wasserstein distances by hand on a four-record table, the codecs'
discretization (bins, missing values, clipping), the sample of triples, and train-on-synthetic's scores."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.errors import ConfigError, DataError
from dpgm.evaluation import table_metrics as tm
from dpgm.evaluation.table_data import read_table, table_of
from dpgm.evaluation.train_on_synthetic import macro_auc, split_rows, train_on_synthetic
from dpgm.tables import table_schema

SCHEMA = table_schema([
    {"name": "color", "kind": "categorical", "categories": ["r", "g", "b"]},
    {"name": "size", "kind": "binary", "categories": ["s", "l"]},
    {"name": "x", "kind": "float", "lower": 0, "upper": 10, "bins": 2, "missing": True},
])


def table(rows: list[tuple[str, str, str]], schema=SCHEMA):
    cells = np.array(rows, dtype=object)
    return table_of(schema, [(cells[:, j], cells[:, j] == "") for j in range(cells.shape[1])])


# x in bins [0, 5), [5, 10] and <missing>: real codes 0, 0, 1, missing; synthetic 0, 1, 1, 1
REAL = table([("r", "s", "1"), ("r", "s", "2"), ("g", "l", "7"), ("b", "l", "")])
SYNTHETIC = table([("r", "s", "1"), ("g", "l", "6"), ("g", "l", "6"), ("g", "l", "9")])


def test_codes_are_the_codecs_value_indices_missing_last() -> None:
    assert REAL.codes.tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 1], [2, 1, 2]]
    assert SYNTHETIC.codes[:, 2].tolist() == [0, 1, 1, 1]


def test_workload_error_by_hand() -> None:
    out = tm.workload_error(REAL, SYNTHETIC)
    # color: (.5, .25, .25) vs (.25, .75, 0); size: (.5, .5) vs (.25, .75); x: (.5, .25, .25) vs (.25, .75, 0)
    assert out.columns == pytest.approx({"color": 0.5, "size": 0.25, "x": 0.5})
    assert out.oneway == pytest.approx(1.25 / 3)
    # every pair and the triple: real .5 / .25 / .25 on three cells, synthetic .25 / .75 on the first two
    assert out.twoway == pytest.approx(0.5) and out.n_pairs == 3
    assert out.threeway == pytest.approx(0.5) and out.n_triples == 1 and out.all_triples
    assert out.average == pytest.approx((1.25 + 3 * 0.5 + 0.5) / 7)


def test_identical_tables_score_zero_and_order_does_not_matter() -> None:
    out = tm.workload_error(REAL, REAL.rows(np.array([3, 1, 2, 0])))
    assert out.oneway == out.twoway == out.threeway == out.average == 0.0
    assert tm.wasserstein(REAL, REAL) == {"x": 0.0}


def test_a_large_marginal_is_counted_over_its_occupied_cells(monkeypatch) -> None:
    dense = tm.workload_error(REAL, SYNTHETIC)
    monkeypatch.setattr(tm, "DENSE_CELLS", 1)
    assert tm.workload_error(REAL, SYNTHETIC) == dense


def test_wasserstein_by_hand_within_the_bounds() -> None:
    # real present values 1, 2, 7; synthetic 1, 6, 6, 9: the area between the two CDFs is
    # 1 * 1/12 + 4 * 5/12 + 1 * 1/12 + 2 * 1/4 = 7/3, over the width 10
    assert tm.wasserstein(REAL, SYNTHETIC) == {"x": pytest.approx(7 / 30)}
    clipped = table([("r", "s", "-40"), ("r", "s", "25")])  # clipped to 0 and 10
    assert tm.wasserstein(clipped, table([("r", "s", "0"), ("r", "s", "10")])) == {"x": 0.0}
    assert tm.wasserstein(table([("r", "s", "")]), SYNTHETIC) == {"x": None}  # no value on one side


def test_wide_tables_sample_their_triples_and_say_so() -> None:
    schema = table_schema([{"name": f"c{j}", "kind": "binary"} for j in range(6)])  # C(6, 3) = 20 triples
    rng = np.random.default_rng(1)
    real, synthetic = (table([tuple(str(v) for v in row) for row in rng.integers(0, 2, (30, 6))], schema)
                       for _ in range(2))
    every = tm.evaluate_table(real, synthetic, max_triples=20)
    assert every.workload.n_triples == 20 and every.workload.all_triples and every.triples.startswith("all 20")
    sample = tm.evaluate_table(real, synthetic, max_triples=7, seed=3)
    assert sample.workload.n_triples == 7 and not sample.workload.all_triples
    assert "random sample of 7" in sample.to_dict()["workload"]["triples"]
    assert tm.evaluate_table(real, synthetic, max_triples=7, seed=3) == sample  # seeded: the same triples
    with pytest.raises(ConfigError, match="--max-triples"):
        tm.evaluate_table(real, synthetic, max_triples=0)


def test_read_table_checks_the_header_and_values(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("color,size,x\nr,s,1\nb,l,\n")
    assert read_table(path, SCHEMA).codes.tolist() == [[0, 0, 0], [2, 1, 2]]
    path.write_text("size,color,x\ns,r,1\n")
    with pytest.raises(DataError, match="header"):
        read_table(path, SCHEMA)
    path.write_text("color,size,x\npurple,s,1\n")
    with pytest.raises(DataError, match="outside its declared categories") as caught:
        read_table(path, SCHEMA)
    assert "purple" not in str(caught.value)


XY = table_schema([{"name": "x", "kind": "float", "lower": 0, "upper": 10},
                   {"name": "noise", "kind": "categorical", "categories": ["a", "b", "c"]},
                   {"name": "y", "kind": "binary", "categories": ["no", "yes"]}])


def xy_table(n: int, seed: int, flip: bool = False):
    """y is yes exactly when x > 5 (the other way round with ``flip``); noise is unrelated."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    y = (x > 5) ^ flip
    rows = [(f"{v:.3f}", "abc"[k], "yes" if t else "no") for v, k, t in zip(x, rng.integers(0, 3, n), y)]
    return table(rows, XY)


def test_train_on_synthetic_learns_the_signal_a_release_keeps() -> None:
    real, holdout = xy_table(300, 0), xy_table(200, 1)
    faithful = train_on_synthetic(real, xy_table(300, 2), "y", holdout=holdout)
    assert faithful.synthetic.auc > 0.98 and faithful.synthetic.accuracy > 0.95
    assert faithful.real.auc > 0.98 and faithful.n_test == 200 and faithful.n_train_real == 300
    inverted = train_on_synthetic(real, xy_table(300, 2, flip=True), "y", holdout=holdout)
    assert inverted.synthetic.auc < 0.02 and inverted.synthetic.accuracy < 0.05
    assert inverted.real == faithful.real  # the same classifier on the same real records


def test_a_release_of_one_class_predicts_it() -> None:
    real, holdout = xy_table(300, 0), xy_table(200, 1)
    only_no = table([("1.0", "a", "no")] * 50, XY)
    out = train_on_synthetic(real, only_no, "y", holdout=holdout)
    share_no = float(np.mean(holdout.codes[:, 2] == 0))
    assert out.synthetic.accuracy == pytest.approx(share_no) and out.synthetic.auc == 0.5


def test_the_split_holds_out_a_share_of_the_real_records() -> None:
    train, test = split_rows(10, 0.3, np.random.default_rng(0))
    assert len(test) == 3 and len(train) == 7 and sorted([*train, *test]) == list(range(10))
    out = train_on_synthetic(xy_table(300, 0), xy_table(100, 2), "y", split=0.25)
    assert out.n_test == 75 and out.n_train_real == 225 and "0.25" in out.holdout
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ConfigError, match="--split"):
            split_rows(10, bad, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="'z': not a column"):
        train_on_synthetic(xy_table(30, 0), xy_table(30, 1), "z")


def test_macro_auc_agrees_with_scikit_learn() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 60)
    proba = rng.dirichlet(np.ones(3), 60)
    assert macro_auc(labels, proba) == pytest.approx(roc_auc_score(labels, proba, multi_class="ovr"))
    assert macro_auc(np.zeros(5, dtype=int), proba[:5]) is None


ABC = table_schema([{"name": "x", "kind": "float", "lower": 0, "upper": 10, "bins": 2},
                    {"name": "y", "kind": "categorical", "categories": ["a", "b", "c"]}])


def abc_table(n: int, seed: int):
    """y is b exactly when x > 5, else a; the first record alone is c."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    y = np.where(x > 5, "b", "a").astype(object)
    y[0] = "c"
    return table_of(ABC, [(np.array([f"{v:.3f}" for v in x], dtype=object), np.zeros(n, dtype=bool)),
                          (y, np.zeros(n, dtype=bool))])


def test_a_class_of_one_record_in_a_large_release_is_learnt_without_early_stopping() -> None:
    """Above 10,000 records the classifier stops early on a stratified split, which refuses a class of one record."""
    out = train_on_synthetic(abc_table(10_001, 0), abc_table(10_001, 2), "y", holdout=abc_table(300, 1))
    assert out.synthetic.accuracy > 0.9 and out.real.accuracy > 0.9
