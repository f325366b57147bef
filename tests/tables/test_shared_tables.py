"""Every shared table (DPGM_DATA_DIR/tables) with its own NAME.schema.json, as json.load gives it, trains on a
subsample and comes back with its columns and dtypes; every one round-trips through its codecs. The runs are
seeded experiments on the narrower tables: a run's statistics over the thousands of items of the widest tables
take minutes, and these tests check the table's way in and out, not the model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import dpgm
from dpgm.data.table import TableInput
from dpgm.tables import DEFAULT_BINS

pd = pytest.importorskip("pandas")

TABLES = ("bank-marketing", "credit-default", "diabetes-130", "online-shoppers", "salary", "nist-taxi",
          "temporal-match2")
#: The tables trained end to end here (the others' items number 700 to 2,800).
TRAINED = ("bank-marketing", "credit-default", "online-shoppers", "nist-taxi")
#: Columns a table's README says to drop before synthesis (identifiers, not attributes).
DROPPED = {"diabetes-130": ["encounter_id", "patient_nbr"]}


def tables_dir() -> Path:
    folder = Path(os.environ.get("DPGM_DATA_DIR", "")).expanduser() / "tables"
    if not os.environ.get("DPGM_DATA_DIR") or not folder.is_dir():
        pytest.skip("the shared tables are not there: set DPGM_DATA_DIR to a folder holding tables/")
    return folder


def read(name: str):
    """A subsample of the table read as its README says, and its schema as json.load gives it, less the
    columns the README says to drop."""
    folder = tables_dir() / name
    df = pd.read_csv(folder / f"{name}.csv.gz", keep_default_na=False, na_values=[""], nrows=400)
    schema = json.loads((folder / f"{name}.schema.json").read_text())
    dropped = DROPPED.get(name, [])
    schema["columns"] = [c for c in schema["columns"] if c["name"] not in dropped]
    return df.drop(columns=dropped), schema


def in_domain(out, schema) -> bool:
    for column in schema["columns"]:
        values = out[column["name"]].dropna()
        if "categories" in column:
            ok = set(values) <= set(column["categories"]) | {c == "TRUE" for c in column["categories"]}
        else:
            ok = values.between(column["lower"], column["upper"]).all()
        if not ok:
            return False
    return True


@pytest.mark.realdata
@pytest.mark.parametrize("name", TRAINED)
def test_a_shared_table_with_its_schema_as_json_load_gives_it(name: str) -> None:
    df, schema = read(name)
    out = dpgm.Synthesizer(epsilon=1.0, schema=schema, seed=0).fit(df).sample(50, seed=0)
    assert list(out.columns) == list(df.columns)
    held = [c for c in df.columns if df[c].notna().any()]  # a column all missing here is read as float
    assert list(out[held].dtypes) == list(df[held].dtypes) and in_domain(out, schema)


@pytest.mark.realdata
@pytest.mark.parametrize("name", TABLES)
def test_every_shared_table_round_trips_through_its_codecs(name: str) -> None:
    df, schema = read(name)
    table = TableInput.of(schema, df)
    back = table.restore(table.dataset(df).records, seed=0)
    assert list(back.columns) == list(df.columns) and in_domain(back, schema)
    for column in schema["columns"]:
        one_bin_each = column["kind"] == "integer" and column["upper"] - column["lower"] < DEFAULT_BINS
        if ("categories" in column or one_bin_each) and df[column["name"]].notna().any():  # exact
            assert back[column["name"]].equals(df[column["name"]]), column["name"]
