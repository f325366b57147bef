"""dpgm.Synthesizer: scikit-learn style parameters, the input's kind back from sample, the privacy
report, save/load, nothing left in temporary folders, and the baselines behind the same interface."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

import dpgm
from dpgm.api import SYNTHESIZER_FILE, NotFittedError, Synthesizer
from dpgm.config import load_config
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DpgmError
from dpgm.evaluation.baselines import (
    BASELINES,
    MarginalsOptions,
    marginals_parameters,
    model_from_state,
    model_state,
)
from dpgm.evaluation.marginals import fit_marginals

N, M = 400, 8
#: Fast settings: a tiny VAE trained one epoch (about ten DP-SGD steps).
TINY = {"options": {"model": {"kind": "vae", "options": {"hidden": [16], "latent": 2}}, "training": {"epochs": 1}}}
MBI_REASON = "AIM, MST and MWEM+PGM need the optional package mbi (pip install -e '.[peers]')"


def records(n: int = N, m: int = M, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((n, m)) < np.linspace(0.1, 0.5, m)).astype(np.uint8)


def synthesizer(**params) -> Synthesizer:
    return Synthesizer(**{"epsilon": 2.0, "delta": 1e-4, "seed": 0, **params})


@pytest.fixture
def empty_tempdir(tmp_path, monkeypatch):
    """tempfile's folder, empty at first: whatever fit or sample leaves there shows."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def left_in(folder) -> list[str]:
    """What ``folder`` holds, less torch's compile cache (torchinductor_<user>: made there once,
    for every later torch program, when torch._dynamo is first imported)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("torchinductor_"))


def test_dataframe_in_dataframe_out():
    pd = pytest.importorskip("pandas")
    x = records()
    frame = pd.DataFrame(x.astype(bool), columns=[f"item {j}" for j in range(M)])
    synth = synthesizer(**TINY)
    assert synth.fit(frame) is synth  # fit returns self
    out = synth.sample(50, seed=1)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(frame.columns)
    assert out.shape == (50, M) and all(dtype == bool for dtype in out.dtypes)
    pd.testing.assert_frame_equal(out, synth.sample(50, seed=1))  # seeded sampling repeats
    assert synth.item_names == list(frame.columns) and synth.n_features_in_ == M


def test_dataframe_keeps_each_columns_dtype_and_labels():
    pd = pytest.importorskip("pandas")
    x = records()
    frame = pd.DataFrame({10: x[:, 0].astype(bool), 11: x[:, 1].astype(np.int64), 12: x[:, 2]})
    out = synthesizer().fit(frame).sample(20, seed=0)
    assert list(out.columns) == [10, 11, 12]
    assert [str(d) for d in out.dtypes] == ["bool", "int64", "uint8"]


def test_sparse_in_sparse_out():
    x = records()
    out = synthesizer().fit(sp.csr_matrix(x)).sample(30, seed=0)
    assert sp.issparse(out) and out.format == "csr" and out.shape == (30, M)
    assert set(np.unique(out.toarray())) <= {0, 1}
    out = synthesizer().fit(sp.csc_array(x.astype(bool))).sample(30, seed=0)
    assert isinstance(out, sp.csr_array) and out.dtype == bool


def test_array_in_array_out():
    x = records()
    out = synthesizer().fit(x).sample(30, seed=0)
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (30, M)
    out = synthesizer().fit(x.astype(bool)).sample(30, seed=0)
    assert out.dtype == bool
    assert synthesizer().fit_sample(x, 12).shape == (12, M)


def test_dataset_in_dataset_out():
    x = records()
    data = BinaryDataset(records=sp.csr_matrix(x), item_names=list("abcdefgh"), name="shop")
    out = synthesizer().fit(data).sample(30, seed=0)
    assert isinstance(out, BinaryDataset) and out.item_names == list("abcdefgh")
    assert sp.issparse(out.records) and out.n_records == 30


def test_parameters_are_stored_as_given():
    config = {"rules": "public", "privacy": {"target_epsilon": 1.0}}
    options = {"training": {"epochs": 1}, "model.kind": "independent"}
    synth = Synthesizer(0.5, delta=1e-5, config=config, options=options, seed=3)
    assert synth.config is config and synth.options is options
    assert synth.get_params() == synth.get_params(deep=False) == {
        "epsilon": 0.5, "delta": 1e-5, "config": config, "method": "dpgm", "options": options, "seed": 3,
        "progress": False, "schema": None}
    assert synth.set_params(epsilon=2.0, method="mwem") is synth and (synth.epsilon, synth.method) == (2.0, "mwem")
    assert "epsilon=2.0" in repr(synth) and "progress" not in repr(synth)  # the changed parameters
    from sklearn.base import clone

    copy = clone(Synthesizer(epsilon=0.5, method="marginals", options={"mechanism": "laplace"}))
    assert copy.get_params()["options"] == {"mechanism": "laplace"} and copy.method == "marginals"


def test_unknown_parameters_are_refused_naming_options():
    synth = Synthesizer()
    with pytest.raises(ValueError, match="Invalid parameter 'rounds'"):
        synth.set_params(rounds=5)
    assert synth.get_params() == Synthesizer().get_params()  # nothing was set
    with pytest.raises(TypeError, match=r"'training'.* go in options="):
        Synthesizer(epsilon=1.0, training={"epochs": 1})
    with pytest.raises(TypeError, match=r"'training.epochs'.* go in options="):
        dpgm.fit(records(), **{"training.epochs": 1})
    with pytest.raises(TypeError, match="positional"):
        Synthesizer(1.0, 1e-5)


def test_options_are_checked_in_fit():
    synth = Synthesizer(options=["training.epochs"])  # stored as given
    with pytest.raises(ConfigError, match="options must be a dict, not list"):
        synth.fit(records())
    with pytest.raises(ConfigError, match=r"seed is a parameter of its own \(seed=...\)"):
        Synthesizer(options={"seed": 3}).fit(records())
    assert not hasattr(synth, "release_")


def test_options_saved_at_the_top_level_load_as_options(tmp_path):
    synth = Synthesizer(method="marginals", options={"mechanism": "laplace"}).fit(records())
    saved = synth.save(tmp_path / "s")
    meta = json.loads((saved / SYNTHESIZER_FILE).read_text())
    meta["params"] = {**{k: v for k, v in meta["params"].items() if k != "options"}, "mechanism": "laplace"}
    (saved / SYNTHESIZER_FILE).write_text(json.dumps(meta))
    assert dpgm.load(saved).get_params() == {**synth.get_params(), "seed": None}


def test_one_default_config_for_the_synthesizer_fit_and_plan():
    import inspect

    from dpgm.commands.plan import parse_args

    default = inspect.signature(dpgm.fit).parameters["config"].default
    assert default == Synthesizer().config == dpgm.api.DEFAULT_CONFIG == "transactions"
    assert parse_args(["--records", "100", "--items", "5", "--epsilon", "1"]).config == default


def test_privacy_report_has_the_budget_and_the_stages():
    synth = synthesizer(epsilon=1.5, **TINY).fit(records())
    report = synth.privacy_report
    assert report["epsilon"] <= 1.5 and report["budget_epsilon"] == 1.5 and report["delta"] == 1e-4
    assert {"partition", "part_means", "training"} <= set(report["stage_epsilons"])
    assert set(report["stage_lines"]) == set(report["stage_epsilons"]) and report["fixed_seed"] is True
    assert report["warning"].startswith("NOT DIFFERENTIALLY PRIVATE")
    assert report["plan"]["model"] == "vae" and report["plan"]["steps_taken"] >= 1


def test_config_as_name_path_dict_or_object():
    x = records()
    cfg = load_config("transactions")
    for config in ("transactions", cfg, {"rules": "public", "privacy": {"target_epsilon": 3.0}}):
        synth = synthesizer(config=config, epsilon=None).fit(x)
        assert synth.privacy_report["budget_epsilon"] == (3.0 if isinstance(config, dict) else 1.0)
    assert cfg.data.path == "msnbc/msnbc.txt.gz"  # the caller's Config is left as it was
    with pytest.raises(ConfigError, match="unknown key"):
        synthesizer(options={"training": {"no_such_option": 1}}).fit(x)


def test_save_load_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(records(), columns=list("abcdefgh"))
    synth = synthesizer(**TINY).fit(frame)
    saved = synth.save(tmp_path / "shared")
    meta = json.loads((saved / SYNTHESIZER_FILE).read_text())
    assert meta["input"]["kind"] == "dataframe" and meta["input"]["columns"] == list("abcdefgh")
    assert {"models.pt", "ledger.json", "privacy_report.json"} <= {p.name for p in saved.iterdir()}
    again = dpgm.load(saved)
    assert isinstance(again, Synthesizer) and again.privacy_report == synth.privacy_report
    assert meta["params"]["seed"] is None  # a release never holds the seed that replays its noise
    assert again.get_params() == {**synth.get_params(), "seed": None}
    pd.testing.assert_frame_equal(again.sample(40, seed=5), synth.sample(40, seed=5))
    with pytest.raises(ConfigError, match="already exists"):
        synth.save(saved)


def test_nothing_left_in_temporary_folders(empty_tempdir, tmp_path):
    x = records()
    synth = synthesizer(**TINY).fit(x)
    assert left_in(empty_tempdir) == []
    synth.sample(20)
    synth.save(tmp_path / "shared")
    dpgm.load(tmp_path / "shared").sample(20, seed=1)
    synthesizer(method="marginals").fit(x).sample(20)
    dpgm.fit(x, epsilon=2.0, delta=1e-4, seed=0).sample(20)
    assert left_in(empty_tempdir) == []


def test_run_dir_keeps_the_run(tmp_path):
    run_dir = tmp_path / "runs" / "kept"
    synth = synthesizer().fit(records(), run_dir=run_dir)
    assert (run_dir / "release" / "models.pt").is_file() and (run_dir / "release" / SYNTHESIZER_FILE).is_file()
    np.testing.assert_array_equal(dpgm.load(run_dir).sample(20, seed=2), synth.sample(20, seed=2))
    with pytest.raises(ConfigError, match="already holds a run"):
        synthesizer().fit(records(), run_dir=run_dir)


def test_unfitted_synthesizer_says_so(tmp_path):
    synth = Synthesizer()
    for call in (lambda: synth.sample(10), lambda: synth.privacy_report, lambda: synth.save(tmp_path / "x")):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()
    assert issubclass(NotFittedError, DpgmError) and not hasattr(synth, "privacy_report")


# ---------------------------------------------------------------- baselines


@pytest.mark.parametrize(("method", "options"), [("marginals", {"mechanism": "laplace"}),
                                                 ("mwem", {"rounds": 5, "queries": 50})])
def test_baseline_round_trip(method, options, tmp_path):
    x = records()
    synth = Synthesizer(method=method, epsilon=1.0, delta=1e-4, seed=0, options=options)
    out = synth.fit(sp.csr_matrix(x)).sample(60, seed=3)
    assert sp.issparse(out) and out.shape == (60, M)
    report = synth.privacy_report
    assert report["method"] == method and report["epsilon"] <= 1.0 and report["delta"] == 1e-4
    assert list(report["stage_epsilons"]) == [method] and report["fixed_seed"] is True
    again = dpgm.load(synth.save(tmp_path / method))
    assert again.method == method and again.privacy_report == report
    assert (again.sample(60, seed=3) != out).nnz == 0
    with pytest.raises(ConfigError, match="labels"):
        synth.sample(per_label=3)


def test_baseline_default_delta_and_options():
    synth = Synthesizer(method="marginals", epsilon=1.0, options={"mechanism": "laplace"}).fit(records())
    report = synth.privacy_report
    assert report["delta"] == 1e-4 and report["mechanism"] == "laplace"  # 1/(100 N), N = 100
    assert report["public_inputs"][0]["value"] == 100 and "warning" not in report
    with pytest.raises(ConfigError, match="unknown option"):
        Synthesizer(method="marginals", options={"no_such_option": 1}).fit(records())
    with pytest.raises(ConfigError, match="registered: aim, marginals, mst, mwem, mwem_pgm"):
        Synthesizer(method="pgm").fit(records())


def test_mwem_on_a_support_domain_round_trip(tmp_path):
    x = records(m=24)  # more items than the full domain takes: a random support
    synth = Synthesizer(method="mwem", epsilon=1.0, delta=1e-4,
                        options={"rounds": 3, "queries": 20, "support_size": 100})
    synth.fit(x)
    assert synth.privacy_report["domain"] == "SupportDomain"
    np.testing.assert_array_equal(dpgm.load(synth.save(tmp_path / "s")).sample(30, seed=1), synth.sample(30, seed=1))


def test_baselines_registry():
    assert list(BASELINES) == ["mwem", "marginals", "aim", "mst", "mwem_pgm"]
    assert "aim" in BASELINES and "pgm" not in BASELINES


def test_a_registered_baseline_runs_through_the_synthesizer(tmp_path):
    @BASELINES.register("laplace_items", options=MarginalsOptions, doc="a toy: laplace marginals, pure epsilon")
    def _toy(real, queries, *, epsilon, delta, rng, accountant, options):
        params = marginals_parameters(epsilon, delta, mechanism="laplace", accounting="pure")
        return fit_marginals(real, accountant=accountant, rng=rng, mechanism="laplace", **params), {}

    try:
        synth = Synthesizer(method="laplace_items", epsilon=1.0, delta=1e-4).fit(records())
        assert synth.privacy_report["epsilon"] <= 1.0 and synth.sample(10).shape == (10, M)
        np.testing.assert_array_equal(dpgm.load(synth.save(tmp_path / "toy")).sample(10, seed=0),
                                      synth.sample(10, seed=0))
    finally:
        BASELINES.unregister("laplace_items")


def test_graphical_model_state_round_trip():
    """An AIM/MST model (a junction tree) saves and loads without mbi, sampling the same."""
    from dpgm.evaluation.pgm import JunctionTree, PgmResult

    rng = np.random.default_rng(0)
    cliques = [(0, 1), (1, 2), (3,)]  # a forest: item 3 on its own
    tables = [rng.random((2, 2)) * 100, rng.random((2, 2)) * 100, rng.random(2) * 100]
    tables[1] *= tables[0].sum(axis=0)[:, None] / tables[1].sum(axis=1)[:, None]  # consistent on item 1
    tables[2] *= tables[0].sum() / tables[2].sum()
    tree = JunctionTree(cliques, tables, [(0, 1)], 4, float(tables[0].sum()))
    model = PgmResult(tree=tree, item_names=list("wxyz"), method="mst", rho=0.1, measured=[(0, 1)])
    again = model_from_state(*model_state(model))
    assert again.n_noisy == model.n_noisy and again.item_names == list("wxyz")
    first = model.sample(200, np.random.default_rng(7)).records
    assert (again.sample(200, np.random.default_rng(7)).records != first).nnz == 0


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_mbi_baselines(method, tmp_path):
    pytest.importorskip("mbi", reason=MBI_REASON)
    x = records(n=300, m=5)
    synth = Synthesizer(method=method, epsilon=1.0, delta=1e-5, seed=0,
                        options={"aim": {"max_iters": 50}} if method == "aim" else None).fit(x)
    assert synth.privacy_report["epsilon"] <= 1.0
    out = synth.sample(40, seed=1)
    assert out.shape == (40, 5)
    np.testing.assert_array_equal(dpgm.load(synth.save(tmp_path / method)).sample(40, seed=1), out)
