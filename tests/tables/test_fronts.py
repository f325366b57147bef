"""A declared table through the fronts: a DataFrame in, the same columns and dtypes out; a CSV table through
train.py and generate.py with the same header; the schema listed as public; no value outside the domain
anywhere in a message or an output."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import dpgm
from dpgm.cli import run_cli
from dpgm.errors import DataError
from tests.test_train_cli import load_script

pd = pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "table.csv"
EXAMPLE_SCHEMA = ROOT / "examples" / "table.schema.json"
SCHEMA = {"columns": [
    {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "bins": 8},
    {"name": "weight", "kind": "float", "lower": 40.0, "upper": 160.0, "bins": 6, "missing": True},
    {"name": "region", "kind": "categorical", "categories": ["north", "south", "east"]},
    {"name": "smoker", "kind": "binary", "categories": ["no", "yes"]},
    {"name": "code", "kind": "categorical", "categories": [1, 2, 3]},
    {"name": "member", "kind": "binary", "categories": ["FALSE", "TRUE"]},
    {"name": "visit", "kind": "datetime", "lower": "2024-01-01", "upper": "2024-12-31", "bins": 4},
]}


def frame(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    weight = rng.uniform(40, 160, n)
    weight[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "region": rng.choice(["north", "south", "east"], n), "age": rng.integers(18, 91, n), "weight": weight,
        "smoker": rng.choice(["no", "yes"], n), "code": rng.integers(1, 4, n), "member": rng.random(n) < 0.3,
        "visit": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 360, n), unit="D"),
    })


@pytest.fixture(scope="module")
def fitted():
    df = frame()
    return df, dpgm.Synthesizer(epsilon=1.0, schema=SCHEMA, seed=0).fit(df)  # seeded: the draws below are fixed


def test_a_dataframe_of_mixed_dtypes_comes_back_with_its_columns_order_and_dtypes(fitted) -> None:
    df, synth = fitted
    out = synth.sample(400, seed=1)
    assert list(out.columns) == list(df.columns) and list(out.dtypes) == list(df.dtypes) and len(out) == 400
    assert set(out.region) <= {"north", "south", "east"} and set(out.smoker) <= {"no", "yes"}
    assert out.age.between(18, 90).all() and out.weight.dropna().between(40, 160).all()
    assert set(out.code) <= {1, 2, 3} and out.visit.between("2024-01-01", "2024-12-31").all()
    assert out.weight.isna().any()  # the model draws the missing value too


def test_the_privacy_report_lists_the_schema_as_public(fitted) -> None:
    _, synth = fitted
    public = {p["quantity"]: p for p in synth.privacy_report["public_inputs"]}
    assert public["table schema"]["value"][0] == "age: integer, [18, 90] in 8 bins"
    assert "declared as data.schema" in public["table schema"]["why"]
    assert public["values of each attribute"]["value"] == [8, 7, 3, 2, 3, 2, 4]


def test_a_saved_table_synthesizer_loads_and_samples_the_same_columns(fitted, tmp_path) -> None:
    df, synth = fitted
    loaded = dpgm.load(synth.save(tmp_path / "saved"))
    assert list(loaded.sample(5, seed=0).dtypes) == list(df.dtypes)


def test_without_a_schema_a_table_is_refused_with_how_to_declare_one() -> None:
    with pytest.raises(DataError) as caught:
        dpgm.Synthesizer(epsilon=1.0).fit(frame(20))
    assert "declare a schema: Synthesizer(schema=...)" in str(caught.value) and "\n" not in str(caught.value)


def test_the_columns_must_be_the_schemas() -> None:
    with pytest.raises(dpgm.errors.ConfigError, match="columns not in the schema: extra"):
        dpgm.Synthesizer(epsilon=1.0, schema=SCHEMA).fit(frame(20).assign(extra=1))


def test_a_csv_table_through_train_and_generate_keeps_its_header(tmp_path, capsys) -> None:
    data = tmp_path / "t.csv.gz"
    with open(EXAMPLE, "rb") as src, __import__("gzip").open(data, "wb") as dst:
        shutil.copyfileobj(src, dst)
    schema = tmp_path / "t.schema.json"
    shutil.copy(EXAMPLE_SCHEMA, schema)
    train, generate = load_script("train"), load_script("generate")
    assert run_cli(train.main, ["--config", "table", "--no-progress", "--set", f"runs_dir={tmp_path}",
                                "--set", f"data.path={data}", "--set", f"data.schema={schema}"]) == 0
    run = tmp_path / "table"
    assert json.loads((run / "release" / "schema.json").read_text()) == dpgm.tables.table_schema(schema).to_dict()
    out = tmp_path / "synthetic.csv.gz"
    assert run_cli(generate.main, ["--run", str(run), "--n", "300", "--out", str(out), "--no-progress"]) == 0
    with __import__("gzip").open(out, "rt") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == EXAMPLE.read_text().splitlines()[0].split(",") and len(rows) == 301
    assert {r[2] for r in rows[1:]} <= {"north", "south", "east", "west"} and any(r[1] == "" for r in rows[1:])
    assert all(18 <= int(r[0]) <= 90 for r in rows[1:])


def test_a_value_outside_the_domain_never_appears_in_a_message_or_an_output(tmp_path, capsys) -> None:
    df = frame(200)
    df.loc[3, "age"] = 987654321  # clipped into the last bin: trains, never comes back
    synth = dpgm.Synthesizer(epsilon=1.0, schema=SCHEMA).fit(df, run_dir=tmp_path / "run")
    out = synth.sample(300, seed=0)
    assert out.age.max() <= 90
    files = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert b"987654321" not in files and b"987654321" not in out.to_csv().encode()
    df.loc[5, "region"] = "ZZCANARY"  # outside the categories: refused, and not shown
    with pytest.raises(DataError) as caught:
        dpgm.Synthesizer(epsilon=1.0, schema=SCHEMA).fit(df)
    assert "ZZCANARY" not in str(caught.value) and "987654321" not in str(caught.value)
    data = tmp_path / "bad.csv"
    frame(50).assign(region="ZZCANARY")[[c["name"] for c in SCHEMA["columns"]]].to_csv(data, index=False)
    train = load_script("train")
    code = run_cli(train.main, ["--config", "table", "--no-progress", "--set", f"runs_dir={tmp_path}",
                                "--set", f"data.path={data}", "--set", "data.schema=" + json.dumps(SCHEMA)])
    err = capsys.readouterr()
    assert code == 2 and "ZZCANARY" not in err.out + err.err and len(err.err.strip().splitlines()) == 1
    assert "column 'region': a value outside its declared categories" in err.err and "other: true" in err.err
    assert not (tmp_path / "table").exists()  # refused while the data load: before any release, nothing written


def test_with_other_true_an_undeclared_value_trains_and_comes_back_as_other(tmp_path) -> None:
    declared = {"columns": [{**c, "other": True} if c["name"] == "region" else c for c in SCHEMA["columns"]]}
    df = frame(300)
    df.loc[:60, "region"] = "ZZCANARY"
    synth = dpgm.Synthesizer(epsilon=1.0, schema=declared).fit(df, run_dir=tmp_path / "run")
    out = synth.sample(400, seed=0)
    assert set(out.region) <= {"north", "south", "east", "other"} and (out.region == "other").any()
    files = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert b"ZZCANARY" not in files and "ZZCANARY" not in out.to_csv()


def test_a_run_on_a_released_schema_lists_its_release_and_what_becomes_of_values_outside(tmp_path) -> None:
    released = {"epsilon": 0.5, "delta": 1e-7, "parts": ["age: bounds"], "report": "x.schema.privacy.json"}
    synth = dpgm.Synthesizer(epsilon=1.0, schema={**SCHEMA, "released": released}).fit(frame(),
                                                                                       run_dir=tmp_path / "run")
    listed = {p["quantity"]: p for p in synth.privacy_report["public_inputs"]}["table schema"]
    assert listed["released"] == released
    assert "a DP release of their own at epsilon = 0.5, delta = 1e-07, not on this run's ledger" in listed["why"]
    assert "not counted: the number of such values is not released" in listed["why"]
    release = tmp_path / "run" / "release"
    assert json.loads((release / "schema.json").read_text())["released"] == released
    words = (release / "privacy_report.md").read_text()
    assert "(epsilon + 0.5, delta + 1e-07)-DP" in words and "clipped into them" in words


def test_a_parquet_table_loads_as_its_csv_does(tmp_path) -> None:
    """The same table as Parquet (typed columns, nulls, timestamps) and as CSV text: the same records, item by item."""
    pytest.importorskip("pyarrow")
    from dpgm.data.table import load_table
    from dpgm.tables import table_schema

    df = frame(120)[[column["name"] for column in SCHEMA["columns"]]]  # a file's columns in the schema's order
    df.to_parquet(tmp_path / "t.parquet")
    df.to_csv(tmp_path / "t.csv", index=False, date_format="%Y-%m-%dT%H:%M:%S")
    schema = table_schema(SCHEMA)
    parquet, text = load_table(tmp_path / "t.parquet", schema), load_table(tmp_path / "t.csv", schema)
    assert parquet.n_records == 120 and (parquet.records != text.records).nnz == 0
    assert load_table(tmp_path / "t.parquet", schema, limit=7).n_records == 7
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        load_table(tmp_path / "bad.parquet", schema)


def test_a_columns_values_as_the_groups_each_draw_their_own_value_and_are_listed_as_public() -> None:
    """partition.method column over a declared column (by name: its first item and number of values from the schema)
    forms one group per value, each a noisy count listed as public, and each group's model draws its own value only
    (fixed by the group's definition)."""
    schema = {**SCHEMA, "target": "smoker"}
    df = frame(600)
    synth = dpgm.Synthesizer(epsilon=1.0, schema=schema, seed=0, options={
        "partition": {"method": "column", "options": {"column": "smoker"}}}).fit(df)
    report = synth.privacy_report
    assert len(report["noisy_part_sizes"]) == 2
    public = {p["quantity"]: p for p in report["public_inputs"]}
    assert public["the groups"]["value"] == "one per value of items 18 to 19"
    out = synth.sample(2_000, seed=1)
    assert abs((out.smoker == "yes").mean() - (df.smoker == "yes").mean()) < 0.08
    import torch

    from dpgm.release import draw_plan, plan_chunks

    mixture = synth.release_.mixture
    chunks = list(plan_chunks(mixture, draw_plan(mixture, 2_000), torch.Generator().manual_seed(0)))
    records, parts = np.concatenate([r for r, _ in chunks]), np.concatenate([p for _, p in chunks])
    np.testing.assert_array_equal(records[:, 18:20].argmax(axis=1), parts)  # each group draws its value only
    assert (records[:, 18:20].sum(axis=1) == 1).all() and set(parts) == {0, 1}


def test_a_column_named_for_the_groups_must_be_a_declared_one() -> None:
    from dpgm.config import config_from_dict
    from dpgm.errors import ConfigError

    table = {"source": "csv", "path": "x.csv", "schema": SCHEMA}
    with pytest.raises(ConfigError, match="column 'height' is not a column of data.schema"):
        config_from_dict({"data": table, "partition": {"method": "column", "options": {"column": "height"}}})
    with pytest.raises(ConfigError, match="column needs data.schema"):
        config_from_dict({"data": {"source": "csv", "path": "x.csv"},
                          "partition": {"method": "column", "options": {"column": "smoker"}}})
    cfg = config_from_dict({"data": table, "partition": {"method": "column", "options": {"column": "region"}}})
    assert (cfg.partition.k, cfg.partition.options) == (3, {"column": "region", "first": 15})
