"""Every benchmark script runs end to end on tiny inputs and writes its JSON: a script that no longer
starts, or that breaks on a change to dpgm, fails here, not on the day its figure is remade.

Each script runs as it is run by hand (``python benchmarks/NAME.py``, in a process of its own, on
this checkout's dpgm; forked from a server that imported the heavy libraries once, tests/_forked.py), with sizes that keep it to a few seconds; a script that reads the shared
data sets skips when they are absent, and one that needs the optional ``peers`` extra skips
without mbi.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tests._benchmarks import BENCHMARKS
from tests._forked import run_script

RESULTS = BENCHMARKS / "results"
#: Seconds one smoke run may take (they take a few; a hang fails instead of blocking the suite).
TIMEOUT = 120
#: Scripts whose run writes no JSON of its own (a check, a self-test): their exit status is the result.
NO_JSON = {"results_page", "sweep_report"}
#: Scripts that are libraries of the others, not runs.
LIBRARIES = {"provenance"}
#: Scripts whose end-to-end run on tiny data is a test of its own (the file named): not run twice.
COVERED = {"train_on_synthetic": "tests/test_train_on_synthetic.py"}


def data_dir() -> Path:
    return Path(os.environ.get("DPGM_DATA_DIR", "data"))


def tiny_transactions(path: Path) -> Path:
    """A small uncompressed transaction file (one record of item ids a line)."""
    lines = [" ".join(str((i * 7 + j * 3) % 20) for j in range(1 + i % 5)) for i in range(400)]
    path.write_text("\n".join(lines) + "\n")
    return path


#: script -> (argv before --json, data sets it reads from $DPGM_DATA_DIR, needs mbi). ``{tmp}`` is
#: the test's folder; every script writes its JSON to {tmp}/out.json.
RUNS: dict[str, tuple[list[str], tuple[str, ...], bool]] = {
    "audit": (["--settings", "part_means", "--set", "data.limit=200", "--trials", "40", "--scales", "1", "0"], (), False),
    "clustering_accuracy": (["--epsilons", "1", "--dims", "20", "--seeds", "1", "--limit", "600"], ("mnist",), False),
    "compressive_kmeans": (["--n", "300", "--k", "2", "--d", "2", "--epsilons", "1", "--trials", "1",
                            "--m-factors", "10", "--signatures", "e", "--rs", "m", "--mechanisms", "gaussian",
                            "--lloyd-iterations", "2", "--speed-n", "0", "--png", "{tmp}/ckm.png"], (), False),
    "config_timings": (["--configs", "transactions", "--set", "data.path={tmp}/tiny.txt", "--set", "data.n_items=20"], (),
                       False),
    "counting_queries": (["--datasets", "msnbc", "--epsilons", "1", "--methods", "marginals",
                          "--queries", "50", "--limit", "500"], ("msnbc",), False),
    "counting_split_search": (["msnbc", "--queries", "50", "--limit", "500", "--baselines", "marginals", "--candidate",
                               '{"training": {"epochs": 0.2}, "partition": {"iterations": 1}}'], ("msnbc",), False),
    "dependence": (["--datasets", "msnbc", "--sizes", "3000"], ("msnbc",), False),
    "distributed_statistics": (["--data", "{tmp}/tiny.txt", "--n-items", "20", "--k", "2", "--ranks", "1"], (),
                               False),
    "dpsgd_throughput": (["--records", "200", "--epochs", "0.2", "--rounds", "1", "--batch-sizes", "32",
                          "--threads", "1"], ("mnist",), False),
    "generic_time": (["--records", "2000", "--items", "20", "--skip-mst"], ("msnbc",), False),
    "kill_resume": (["--config", "{root}/configs/transactions.yaml", "--set", "data.path={tmp}/tiny.txt", "--set",
                     "data.n_items=20", "--kills", "0", "--jobs", "1"], (), False),
    "large_transactions": (["--records", "3000", "--items", "20", "--runs", "3000:1:chunks",
                            "--k", "2", "--iterations", "1", "--sampling-rate", "0.01", "--epochs", "0.02",
                            "--window", "5", "--release", "100", "--dir", "{tmp}"], (), False),
    "merge_threshold": (["{results}/rules_lodo_merge.json"], (), False),
    "model_capacity": (["--datasets", "msnbc", "--sizes", "3000", "--bn", "2", "--mix", "2"], ("msnbc",), False),
    "module_graph": ([], (), False),
    "paper_epsilon": (["--epochs", "1"], (), False),
    "partitioners": (["--datasets", "google", "--methods", "lloyd", "--epsilons", "1", "--seeds", "1", "--records",
                      "2000", "--ks", "4", "--plot", "{tmp}/partitioners.png"], (), False),
    "results_page": (["--help"], (), False),  # starts (its page modules import); tests/test_docs.py runs --check
    "rules_lodo": (["--datasets", "msnbc", "--sizes", "3000", "--candidates", "default", "--epsilons", "1",
                    "--seeds", "1", "--queries", "50"], ("msnbc",), False),
    "rules_sweep": ([], (), False),
    "secure_sampling": (["--records", "200", "--rounds", "1", "--batch-sizes", "32", "--repeats", "1",
                         "--threads", "1"], ("mnist",), False),
    "subspace_clustering": (["--seeds", "1", "--sweeps", "2", "--epsilons", "1", "--png", "{tmp}/subspace.png"], (),
                            False),
    "sweep_report": (["--self-test"], (), False),
    "table_time": (["--table", "online-shoppers", "--rows", "300", "--peers"], ("tables/online-shoppers",), False),
    "tables_lodo": (["--tables", "online-shoppers", "--sizes", "300", "--epsilons", "1", "--seeds", "1", "--peers",
                     "marginals", "--max-triples", "50"], ("tables/online-shoppers",), False),
    "wide_speed": (["--records", "1000", "--items", "60", "--release", "200", "--baseline", "{root}"], (), False),
}


def test_every_benchmark_script_has_a_smoke_run() -> None:
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - LIBRARIES
    assert scripts == set(RUNS) | set(COVERED) and not set(RUNS) & set(COVERED)
    assert all((BENCHMARKS.parent / path).is_file() for path in COVERED.values())


def test_every_benchmark_script_runs_its_main_through_run_cli() -> None:
    """A bad input to a script is one line and exit 2, as for the commands (dpgm.cli.run_cli), not a traceback."""
    for script in sorted(set(BENCHMARKS.glob("*.py")) - {BENCHMARKS / f"{name}.py" for name in LIBRARIES}):
        tail = script.read_text().split('if __name__ == "__main__":')[-1]
        assert "run_cli(main" in tail, script.name


def test_a_bad_setting_of_a_script_is_one_line_and_exit_2_before_any_work(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(BENCHMARKS.parent)}
    done = run_script(BENCHMARKS / "audit.py", ["--trials", "10"], cwd=BENCHMARKS.parent, env=env, timeout=TIMEOUT,
                      folder=tmp_path)
    assert done.returncode == 2 and done.stderr == "error: audit: trials must be >= 20, got 10\n"
    assert "[digits" not in done.stdout  # refused before the first setting ran


@pytest.mark.parametrize("name", sorted(RUNS))
def test_benchmark_runs_end_to_end_on_tiny_data(name: str, tmp_path: Path) -> None:
    argv, datasets, peers = RUNS[name]
    missing = [d for d in datasets if not (data_dir() / d).exists()]
    if missing:
        pytest.skip(f"needs the shared data set(s) {', '.join(missing)} under $DPGM_DATA_DIR")
    if peers and importlib.util.find_spec("mbi") is None:
        pytest.skip("needs the optional peers extra (mbi)")
    tiny_transactions(tmp_path / "tiny.txt")
    root = BENCHMARKS.parent
    places = {"{tmp}": str(tmp_path), "{root}": str(root), "{results}": str(RESULTS)}
    for place, path in places.items():
        argv = [a.replace(place, path) for a in argv]
    argv += [] if name in NO_JSON else ["--json", str(tmp_path / "out.json")]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    done = run_script(BENCHMARKS / f"{name}.py", argv, cwd=root, env=env, timeout=TIMEOUT, folder=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert name in NO_JSON or json.loads((tmp_path / "out.json").read_text())


def tiny_table(folder: Path, name: str) -> None:
    """A made-up table of 400 records and 10 attribute=value items under ``folder/tables/name`` (a shared
    table's name, so that tables_lodo.py takes it), target ``smoker``."""
    import gzip

    columns = [{"name": "region", "kind": "categorical", "categories": ["n", "s", "e", "w"], "missing": False},
               {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "bins": 4, "missing": False},
               {"name": "smoker", "kind": "binary", "categories": ["no", "yes"], "missing": False}]
    lines = [f"{'nsew'[i % 4]},{18 + (i * 7) % 73},{'yes' if i % 4 < 2 and i % 3 else 'no'}" for i in range(400)]
    (folder / "tables" / name).mkdir(parents=True)
    (folder / "tables" / name / f"{name}.schema.json").write_text(json.dumps({"target": "smoker", "columns": columns}))
    (folder / "tables" / name / f"{name}.csv.gz").write_bytes(
        gzip.compress(("region,age,smoker\n" + "\n".join(lines) + "\n").encode()))


def test_tables_lodo_runs_aim_and_mst_on_a_tiny_table(tmp_path: Path) -> None:
    if importlib.util.find_spec("mbi") is None:
        pytest.skip("needs the optional peers extra (mbi)")
    tiny_table(tmp_path, "salary")
    root = BENCHMARKS.parent
    argv = ["--tables", "salary", "--sizes", "full", "--epsilons", "1", "--peers", "mst", "aim", "--peer-options",
            "aim.max_rounds=1", "aim.max_iters=50", "--data-dir", str(tmp_path), "--json", str(tmp_path / "out.json")]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    done = run_script(BENCHMARKS / "tables_lodo.py", argv, cwd=root, env=env, timeout=TIMEOUT, folder=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "out.json").read_text())["rows"]
    assert sorted(r["candidate"] for r in rows) == ["default", "peer:aim", "peer:marginals", "peer:mst"]
    assert all(0 <= r["tvd2"] <= 1 and r["n_fit"] == 200 and r["auc"] is not None for r in rows)
    assert next(r for r in rows if r.get("peer") == "aim")["rounds"] <= 1
