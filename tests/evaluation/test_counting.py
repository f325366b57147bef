"""Counting evaluation plumbing: budget calibration, baselines' privacy reports, alignment, table."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.evaluation.counting import (
    accountant_epsilon,
    baseline_options,
    load_synthetic,
    marginals_parameters,
    mwem_pure_epsilon,
    run_baseline,
    start_evaluation,
)
from dpgm.evaluation.mwem import MwemBudget
from dpgm.privacy.events import GaussianEvent, LaplaceEvent


def real_data(n: int = 600, m: int = 6) -> BinaryDataset:
    rng = np.random.default_rng(0)
    dense = (rng.random((n, m)) < np.linspace(0.1, 0.5, m)).astype(np.uint8)
    return BinaryDataset(records=sp.csr_matrix(dense), item_names=[f"x{j}" for j in range(m)])


def test_mwem_calibration_meets_the_accountant_target() -> None:
    pure = mwem_pure_epsilon(1.0, 1e-6, rounds=50, n_fraction=0.05, accounting="rdp")
    eps = accountant_epsilon(MwemBudget(epsilon=pure, rounds=50, n_fraction=0.05).events(), 1e-6)
    assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-6)
    assert pure > 1.0  # RDP composition of 101 small pure-DP releases beats pure composition
    assert mwem_pure_epsilon(1.0, 1e-6, rounds=50, n_fraction=0.05, accounting="pure") == 1.0


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_marginals_calibration_meets_the_target(mechanism: str) -> None:
    params = marginals_parameters(2.0, 1e-5, mechanism=mechanism, accounting="rdp")
    event = GaussianEvent(**params) if mechanism == "gaussian" else LaplaceEvent(**params)
    eps = accountant_epsilon([(event, 1)], 1e-5)
    assert eps <= 2.0 and eps == pytest.approx(2.0, rel=1e-5)


def test_gaussian_marginals_have_no_pure_guarantee() -> None:
    with pytest.raises(ConfigError):
        marginals_parameters(1.0, 1e-5, mechanism="gaussian", accounting="pure")


@pytest.mark.parametrize("method", ["mwem", "marginals"])
def test_run_baseline_reports_its_budget(method: str) -> None:
    data = real_data()
    evaluation = start_evaluation(data, 20, np.random.default_rng(1))
    synthetic, report = run_baseline(method, data, evaluation.queries, epsilon=1.0, delta=1e-4,
                                     rng=np.random.default_rng(2), options=baseline_options(method, {"rounds": 5} if method == "mwem" else {}))
    assert report["epsilon"] <= 1.0
    if method == "mwem":
        # MWEM's Laplace releases are exact discrete Laplaces charged at a matched epsilon' below
        # the planned one (slightly more noise): the run spends a little less than its plan
        assert report["epsilon"] >= 0.95
    else:
        assert report["epsilon"] == pytest.approx(1.0, rel=1e-4)  # the Gaussian's RDP is kept
    assert report["delta"] == 1e-4 and report["neighbouring"] == "add_remove"
    assert synthetic.item_names == data.item_names
    assert abs(synthetic.n_records - data.n_records) < 100  # noisy n
    evaluation.add(method, synthetic, report)
    assert set(evaluation.group_means()[method]) == {1, 2, 3, 4, 5}


def test_unknown_baseline() -> None:
    data = real_data()
    evaluation = start_evaluation(data, 10, np.random.default_rng(1))
    with pytest.raises(ConfigError):
        run_baseline("pgm", data, evaluation.queries, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(0))


def test_identical_synthetic_has_zero_error_and_table(tmp_path) -> None:
    data = real_data()
    order = [3, 0, 5, 1, 4, 2]
    path = tmp_path / "syn.csv"
    dense = data.dense(np.uint8)
    lines = [",".join(data.item_names[j] for j in order)]
    lines += [",".join(str(v) for v in row[order]) for row in dense]
    path.write_text("\n".join(lines) + "\n")
    evaluation = start_evaluation(data, 25, np.random.default_rng(3))
    evaluation.add("copy", load_synthetic(path, data))
    assert np.all(evaluation.errors["copy"] == 0)
    table = evaluation.table().splitlines()
    assert len(table) == 2 + 5 + 1 and "copy" in table[0]
    rows = evaluation.to_dict()["results"]
    assert [r["group"] for r in rows] == [1, 2, 3, 4, 5] and all(r["rel_error"] == 0 for r in rows)


def test_synthetic_csv_must_name_the_real_items(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("x0,x1,zz\n0,1,1\n")
    with pytest.raises(DataError, match="columns do not match"):
        load_synthetic(path, real_data())


def test_synthetic_transactions_index_real_items(tmp_path) -> None:
    data = real_data()
    ok = tmp_path / "syn.txt"
    ok.write_text("0 2\n1\n\n")
    syn = load_synthetic(ok, data)
    assert syn.records.shape == (3, 6) and syn.records.toarray()[0].tolist() == [1, 0, 1, 0, 0, 0]
    bad = tmp_path / "bad.txt"
    bad.write_text("0 9\n")
    with pytest.raises(DataError, match="outside"):
        load_synthetic(bad, data)
