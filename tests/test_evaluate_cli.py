"""evaluate.py counting: end to end on tiny files; bad input exits 2 with one line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpgm.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("evaluate_cli", ROOT / "evaluate.py")
evaluate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(evaluate)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A real transactions file (80 records, 6 items) and exact copies as CSV and transactions."""
    rng = np.random.default_rng(0)
    dense = (rng.random((80, 6)) < np.linspace(0.1, 0.6, 6)).astype(int)
    dense[0, 5] = 1  # item 5 present, so the universe is 0..5
    lines = [" ".join(str(j) for j in np.flatnonzero(row)) for row in dense]
    real = tmp_path / "real.txt"
    real.write_text("\n".join(lines) + "\n")
    copy = tmp_path / "copy.txt"
    copy.write_text("\n".join(lines) + "\n")
    order = [2, 5, 0, 1, 4, 3]
    csv = tmp_path / "copy.csv"
    csv.write_text("\n".join([",".join(map(str, order))] + [",".join(map(str, r[order])) for r in dense]) + "\n")
    other = tmp_path / "other.csv"
    other.write_text("\n".join(["0,1,2,3,4,5"] + ["1,1,1,1,1,1"] * 40) + "\n")
    return {"real": real, "copy": copy, "csv": csv, "other": other, "dir": tmp_path}


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = run_cli(evaluate.main, argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_counting_end_to_end(files, capsys) -> None:
    out_json = files["dir"] / "eval.json"
    code, out, err = run(["counting", "--real", str(files["real"]), "--synthetic", str(files["csv"]),
                          "--synthetic", str(files["copy"]), "--synthetic", str(files["other"]),
                          "--baseline", "marginals", "--epsilon", "1", "--queries", "50", "--seed", "3",
                          "--json", str(out_json)], capsys)
    assert code == 0, err
    table = out[out.index("group") :].splitlines()
    assert len([line for line in table if line.split()[0] in "12345"]) == 5
    result = json.loads(out_json.read_text())
    assert result["n_real"] == 80 and result["n_queries"] == 50 and result["seed"] == 3
    means = result["group_means"]
    assert all(v == 0 for v in means[str(files["csv"])].values())  # exact copies: zero error
    assert all(v == 0 for v in means[str(files["copy"])].values())
    assert min(means[str(files["other"])].values()) > 0.1  # all-ones records: every query hits
    assert result["privacy"]["marginals"]["epsilon"] <= 1.0
    assert {r["method"] for r in result["results"]} == {str(files["csv"]), str(files["copy"]),
                                                         str(files["other"]), "marginals"}


def test_same_seed_same_numbers(files, capsys) -> None:
    argv = ["counting", "--real", str(files["real"]), "--baseline", "mwem", "--epsilon", "2",
            "--rounds", "5", "--queries", "25", "--seed", "11"]
    first = run(argv, capsys)[1]
    second = run(argv, capsys)[1]
    assert first == second and "mwem" in first


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ([], "nothing to evaluate"),
        (["--baseline", "mwem"], "--baseline needs --epsilon"),
        (["--baseline", "marginals", "--epsilon", "-1"], "epsilon"),
        (["--synthetic", "COPY", "--queries", "3"], "at least one query per group"),
        (["--synthetic", "MISSING.csv"], "file not found"),
        (["--synthetic", "BAD.csv"], "columns do not match"),
        (["--baseline", "pgm", "--epsilon", "1"], "invalid choice"),
        (["--synthetic", "COPY", "--top-items", "0"], "top_items"),
        (["--baseline", "mwem", "--epsilon", "1", "--baseline-option", "mwem.round=3"], "unknown option 'round'"),
        (["--baseline", "mwem", "--epsilon", "1", "--baseline-option", "aim.rounds=3"], "METHOD.NAME=VALUE"),
        (["--baseline", "aim", "--epsilon", "1", "--accounting", "pure"], "accounting: 'pure' is not one of"),
    ],
)
def test_bad_input_exits_2_with_one_line(files, capsys, extra, fragment) -> None:
    bad = files["dir"] / "BAD.csv"
    bad.write_text("a,b\n0,1\n")
    names = {"COPY": str(files["copy"]), "MISSING.csv": str(files["dir"] / "missing.csv"), "BAD.csv": str(bad)}
    extra = [names.get(x, x) for x in extra]
    code, _, err = run(["counting", "--real", str(files["real"]), *extra], capsys)
    assert code == 2
    assert err.startswith("error:") and err.count("\n") == 1 and fragment in err, err


def test_script_entry_point(files) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "counting", "--real", str(files["real"]),
                           "--synthetic", str(files["copy"]), "--queries", "10", "--seed", "0"],
                          check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "mean relative error" in proc.stdout
    proc = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "counting", "--real", "nowhere.txt",
                           "--synthetic", "x.csv"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_marginals_tvd(files, capsys) -> None:
    out_json = files["dir"] / "tvd.json"
    code, _, err = run(["marginals", "--real", str(files["real"]), "--synthetic", str(files["csv"]),
                          "--synthetic", str(files["other"]), "--json", str(out_json)], capsys)
    assert code == 0, err
    rows = json.loads(out_json.read_text())["marginal_tvd"]
    copy, other = rows[str(files["csv"])], rows[str(files["other"])]
    assert copy["oneway"] == copy["twoway"] == copy["threeway"] == copy["length"] == 0.0
    assert copy["n_triples"] == 20 and copy["all_triples"]
    assert other["length"] == pytest.approx(1.0)  # all-ones records: length 6, absent from the real data
    assert 0 < other["oneway"] < 1 and 0 < other["threeway"] <= 1


def test_a_baseline_option_reaches_its_baseline(files, capsys) -> None:
    code, _, err = run(["counting", "--real", str(files["real"]), "--baseline", "mwem", "--epsilon", "1",
                        "--queries", "20", "--seed", "1", "--baseline-option", "mwem.rounds=3",
                        "--json", str(files["dir"] / "out.json")], capsys)
    assert code == 0, err
    assert json.loads((files["dir"] / "out.json").read_text())["privacy"]["mwem"]["rounds"] == 3


def test_counting_zcdp_baseline_runs(files, capsys) -> None:
    pytest.importorskip("mbi")
    code, out, err = run(["counting", "--real", str(files["real"]), "--baseline", "mwem_pgm", "--epsilon", "1",
                          "--queries", "20", "--seed", "1"], capsys)
    assert code == 0, err
    assert "mwem_pgm: epsilon = 1.0000 (RDP accountant; pure epsilon n/a)" in out


def test_report_end_to_end_written_atomically(files, capsys) -> None:
    out = files["dir"] / "report.html"
    out.write_text("old report")
    bad = files["dir"] / "bad.csv"
    bad.write_text("a,b\n0,1\n")
    code, _, err = run(["report", "--real", str(files["real"]), "--synthetic", str(bad), "--out", str(out)], capsys)
    assert code == 2 and "columns do not match" in err
    assert out.read_text() == "old report"  # a failed run leaves the previous file whole
    out = files["dir"] / "new" / "report.html"  # --mkdir: the folder is created
    code, stdout, err = run(["report", "--real", str(files["real"]), "--synthetic", str(files["csv"]),
                             "--out", str(out), "--queries", "20", "--no-progress", "--mkdir"], capsys)
    assert code == 0, err
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count('src="data:image/png;base64,') == 5 and "not differentially private" in page
    assert "not private" in stdout
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # no temporary file left beside it


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--real", "nowhere.txt"], "--real nowhere.txt: file not found"),
        (["--synthetic", "nowhere.csv"], "--synthetic nowhere.csv: file not found"),
        (["--out", "no/such/folder/report.html"], "does not exist (create it, or pass --mkdir)"),
        (["--out", "."], "is a folder"),
        (["--image-shape", "3x3"], "the data has 6 items"),
        (["--max-shown", "0"], "--max-shown"),
    ],
)
def test_report_bad_input_exits_2_with_one_line(files, capsys, extra, fragment) -> None:
    argv = {"--real": str(files["real"]), "--synthetic": str(files["copy"]), "--out": str(files["dir"] / "r.html")}
    argv.update(dict(zip(extra[::2], extra[1::2])))
    code, _, err = run(["report", *[x for kv in argv.items() for x in kv], "--no-progress"], capsys)
    assert code == 2
    assert err.startswith("error:") and err.count("\n") == 1 and fragment in err, err


def test_report_bad_path_fails_fast(files) -> None:
    """A typo fails before the data, torch or matplotlib load: the child's import log (``-X importtime``) holds
    none of the heavy libraries (a CPU-time bound failed on a loaded machine)."""
    argv = [sys.executable, "-X", "importtime", str(ROOT / "evaluate.py"), "report", "--real", "nowhere.txt",
            "--synthetic", str(files["copy"]), "--out", str(files["dir"] / "r.html")]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=ROOT)
    imports = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    message = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2 and len(message) == 1 and "nowhere.txt" in message[0]
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in imports}
    assert "numpy" in loaded and not loaded & {"torch", "matplotlib", "pandas", "sklearn"}, sorted(loaded)


def test_evaluations_with_real_data_figures_say_not_private_first(files, capsys) -> None:
    """counting and marginals print and write exact figures of the real data: each output opens with NOT PRIVATE."""
    from dpgm.privacy.verdict import NOT_PRIVATE

    for command, extra in (("counting", ["--queries", "10", "--seed", "0"]), ("marginals", [])):
        out_json = files["dir"] / f"{command}.json"
        code, out, err = run([command, "--real", str(files["real"]), "--synthetic", str(files["copy"]), *extra,
                              "--json", str(out_json)], capsys)
        assert code == 0, err
        assert out.splitlines()[0].startswith(f"{NOT_PRIVATE}: it holds exact figures computed from the real data")
        result = json.loads(out_json.read_text())
        assert next(iter(result)) == "warning" and result["warning"].startswith(NOT_PRIVATE)
        assert "real_data" in result["not_private"]


@pytest.fixture
def table_files(tmp_path: Path) -> dict[str, Path]:
    """A declared table (x in [0, 10], a category, y = x > 5 as yes/no): real 200 records, a hold-out of 100, a
    release of 150 drawn alike, and its schema."""
    schema = {"columns": [{"name": "x", "kind": "float", "lower": 0, "upper": 10, "bins": 4},
                          {"name": "c", "kind": "categorical", "categories": ["a", "b", "c"], "missing": True},
                          {"name": "y", "kind": "binary", "categories": ["no", "yes"]}]}
    (tmp_path / "t.schema.json").write_text(json.dumps(schema))

    def write(name: str, n: int, seed: int) -> Path:
        rng = np.random.default_rng(seed)
        x = rng.uniform(0, 10, n)
        lines = [f"{v:.3f},{['a', 'b', 'c', ''][k]},{'yes' if v > 5 else 'no'}" for v, k in zip(x, rng.integers(0, 4, n))]
        (tmp_path / name).write_text("\n".join(["x,c,y", *lines]) + "\n")
        return tmp_path / name

    return {"real": write("real.csv", 200, 0), "holdout": write("holdout.csv", 100, 1),
            "synthetic": write("syn.csv", 150, 2), "schema": tmp_path / "t.schema.json", "dir": tmp_path}


def test_tables_end_to_end(table_files, capsys) -> None:
    from dpgm.privacy.verdict import NOT_PRIVATE

    out_json = table_files["dir"] / "metrics.json"
    argv = ["tables", "--real", str(table_files["real"]), "--synthetic", str(table_files["synthetic"]),
            "--schema", str(table_files["schema"]), "--target", "y", "--holdout", str(table_files["holdout"]),
            "--out", str(out_json)]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"{NOT_PRIVATE}: it holds exact figures computed from the real data")
    assert "all 1 triples of columns" in out and "trained on synthetic: AUC" in out
    result = json.loads(out_json.read_text())
    assert next(iter(result)) == "warning" and result["not_private"] == ["real_data"]
    assert result["n_real"] == 200 and result["n_synthetic"] == 150
    assert 0 < result["workload"]["oneway"] < 0.2 and result["workload"]["n_pairs"] == 3
    assert set(result["wasserstein"]) == {"x"} and 0 < result["wasserstein"]["x"] < 0.1
    tos = result["train_on_synthetic"]
    assert tos["n_test"] == 100 and tos["synthetic"]["auc"] > 0.95 and tos["real"]["accuracy"] > 0.9
    code, _, err = run(argv[:9] + ["--split", "0.25"], capsys)  # no --holdout: a split of --real
    assert code == 0, err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--target", "z"], "--target 'z': not a column of the schema (x, c, y)"),
        (["--real", "nowhere.csv"], "nowhere.csv: file not found"),
        (["--holdout", "HOLDOUT"], "--holdout is for train-on-synthetic: give --target COLUMN too"),
        (["--target", "y", "--split", "1.5"], "--split must be in (0, 1)"),
        (["--target", "y", "--split", "0.2", "--holdout", "HOLDOUT"], "not allowed with argument"),
        (["--max-triples", "0"], "--max-triples must be >= 1"),
        (["--synthetic", "BAD"], "column 'c': a value outside its declared categories"),
        (["--schema", "BADSCHEMA"], "column 'x': a float column needs lower and upper"),
        (["--out", "no/such/folder/m.json"], "does not exist"),
    ],
)
def test_tables_bad_input_exits_2_with_one_line(table_files, capsys, extra, fragment) -> None:
    bad = table_files["dir"] / "bad.csv"
    bad.write_text("x,c,y\n1.0,purple,no\n")
    bad_schema = table_files["dir"] / "bad.schema.json"
    bad_schema.write_text(json.dumps({"columns": [{"name": "x", "kind": "float"}]}))
    named = {"HOLDOUT": str(table_files["holdout"]), "BAD": str(bad), "BADSCHEMA": str(bad_schema)}
    argv = {"--real": str(table_files["real"]), "--synthetic": str(table_files["synthetic"]),
            "--schema": str(table_files["schema"])}
    argv.update((k, named.get(v, v)) for k, v in zip(extra[::2], extra[1::2]))
    code, out, err = run(["tables", *[x for kv in argv.items() for x in kv], "--no-progress"], capsys)
    assert code == 2, out
    assert err.startswith("error:") and err.count("\n") == 1 and fragment in err, err
    assert "purple" not in err


def test_report_of_a_declared_table_takes_the_table_view(table_files, capsys) -> None:
    out = table_files["dir"] / "table.html"
    report = {"not_private": [], "epsilon": 0.5, "delta": 1e-6}
    (table_files["dir"] / "run_report.json").write_text(json.dumps(report))
    argv = ["report", "--real", str(table_files["real"]), "--synthetic", str(table_files["synthetic"]),
            "--schema", str(table_files["schema"]), "--target", "y", "--out", str(out), "--no-progress"]
    code, stdout, err = run([*argv, "--privacy", str(table_files["dir"] / "run_report.json")], capsys)
    assert code == 0, err
    page = out.read_text()
    assert page.index('<section id="verdict"') < page.index('<section id="summary"')
    assert "epsilon = 0.5" in page and 'id="train-on-synthetic"' in page and 'id="cooccurrence"' not in page
    assert page.count('src="data:image/png;base64,') == 4 and "not private" in stdout  # heat map, 3 columns
    code, _, err = run([*argv, "--privacy", "nowhere.json"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--privacy nowhere.json: file not found" in err
    code, _, err = run([*argv, "--holdout", "nowhere.csv"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--holdout nowhere.csv: file not found" in err


def _with_target(table_files: dict[str, Path], target: str) -> Path:
    """The fixture's schema declaring ``target`` as its prediction target."""
    path = table_files["dir"] / "targeted.schema.json"
    path.write_text(json.dumps({**json.loads(table_files["schema"].read_text()), "target": target}))
    return path


def test_the_schemas_target_is_the_default_target(table_files, capsys) -> None:
    argv = ["tables", "--real", str(table_files["real"]), "--synthetic", str(table_files["synthetic"]),
            "--schema", str(_with_target(table_files, "y")), "--holdout", str(table_files["holdout"])]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "trained on synthetic: AUC" in out and "('y', tested on 100 real records)" in out
    code, out, err = run([*argv[:-2], "--target", "c"], capsys)  # --target wins over the schema's
    assert code == 0 and "('c', tested on" in out and "'y'" not in out, err
    code, out, err = run([*argv[:-2], "--no-target"], capsys)
    assert code == 0 and "trained on" not in out, err
    code, _, err = run([*argv, "--no-target"], capsys)  # a hold-out needs a target
    assert code == 2 and "--holdout is for train-on-synthetic" in err and err.count("\n") == 1
    page = table_files["dir"] / "t.html"
    code, _, err = run(["report", "--real", str(table_files["real"]), "--synthetic", str(table_files["synthetic"]),
                        "--schema", argv[6], "--out", str(page), "--no-progress"], capsys)
    assert code == 0, err
    assert 'id="train-on-synthetic"' in page.read_text() and "No classifier" not in page.read_text()


@pytest.mark.parametrize(("schema", "extra", "fragment"), [
    (True, ["--top-items", "5"], "--top-items is for transactions, 0/1 CSV or images, not for a declared table"),
    (True, ["--image-shape", "2x2"], "--image-shape is for transactions"),
    (True, ["--max-shown", "50"], "--max-shown is for transactions"),  # even at its default value
    (True, ["--queries", "10"], "--queries is for transactions"),
    (True, ["--label-column", "y"], "--label-column is for transactions"),
    (False, ["--target", "y"], "--target is for a declared table: give --schema too"),
    (False, ["--split", "0.3"], "--split is for a declared table"),
    (False, ["--max-triples", "10"], "--max-triples is for a declared table"),
    (False, ["--no-target"], "--no-target is for a declared table"),
])
def test_report_refuses_an_option_its_view_does_not_read(table_files, capsys, schema, extra, fragment) -> None:
    out = table_files["dir"] / "r.html"
    argv = ["report", "--real", str(table_files["real"]), "--synthetic", str(table_files["synthetic"]),
            "--out", str(out), "--no-progress", *extra]
    code, _, err = run(argv + (["--schema", str(table_files["schema"])] if schema else []), capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1 and fragment in err, err
    assert not out.exists()
