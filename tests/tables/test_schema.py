"""A declared schema: every kind loads (file, dict, code), and every bad declaration is a one-line ConfigError
naming the column and the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpgm.config import config_from_dict
from dpgm.errors import ConfigError
from dpgm.locations import resolve_data_path
from dpgm.tables import DEFAULT_BINS, MISSING, Column, TableSchema, table_schema

EVERY_KIND = {"dataset": "ignored", "columns": [
    {"name": "smoker", "kind": "binary", "categories": ["no", "yes"], "missing": False, "note": "ignored"},
    {"name": "region", "kind": "categorical", "categories": ["n", "s", 3], "missing": True},
    {"name": "age", "kind": "integer", "lower": 18, "upper": 90},
    {"name": "day", "kind": "integer", "lower": 1, "upper": 31},
    {"name": "weight", "kind": "float", "lower": 40.0, "upper": 160.0, "bins": [60, 80.5, 100]},
    {"name": "visit", "kind": "datetime", "lower": "2024-01-01", "upper": "2024-12-31", "bins": 4, "missing": True},
]}


def test_every_kind_loads_from_a_dict_a_file_and_code(tmp_path: Path) -> None:
    schema = table_schema(EVERY_KIND)
    assert schema.names == ["smoker", "region", "age", "day", "weight", "visit"]
    # binary 2, categorical 3 + missing, integers: DEFAULT_BINS above 32 integers, one per integer at most,
    # float: three cuts give four bins, datetime: 4 bins + missing
    assert schema.attribute_sizes == [2, 4, DEFAULT_BINS, 31, 4, 5]
    assert schema.item_names[:6] == ["smoker=no", "smoker=yes", "region=n", "region=s", "region=3",
                                     f"region={MISSING}"]
    assert "weight=[60, 80.5)" in schema.item_names and "day=31" in schema.item_names
    path = tmp_path / "s.schema.json"
    path.write_text(json.dumps(EVERY_KIND))
    assert table_schema(path) == schema == table_schema(str(path))
    assert table_schema(schema.to_dict()).to_dict() == schema.to_dict()  # defaults spelled out: the same schema
    assert schema.to_dict()["columns"][2]["bins"] == DEFAULT_BINS
    built = TableSchema((Column("smoker", "binary", categories=("no", "yes")),))
    assert built.attribute_sizes == [2] and TableSchema((Column("b", "binary"),)).values == [["0", "1"]]


def test_a_config_declaring_a_schema_sets_the_attribute_sizes() -> None:
    cfg = config_from_dict({"data": {"source": "csv", "path": "x.csv", "schema": EVERY_KIND}})
    assert cfg.data.attribute_sizes == table_schema(EVERY_KIND).attribute_sizes
    assert cfg.data.attributes == 6


def one(**column):
    return {"columns": [{"name": "c", **column}]}


BAD = [
    ({"columns": []}, "non-empty list"),
    ({"rows": 3}, "no top-level 'columns'"),
    ({"columns": [{"kind": "binary"}]}, "column 1: name"),
    ({"columns": [{"name": "c", "kind": "binary"}, {"name": "c", "kind": "binary"}]}, "column 'c': declared twice"),
    (one(kind="text"), "column 'c': unknown kind 'text' (known: binary, categorical, datetime, float, integer)"),
    (one(kind="categorical"), "column 'c': categories must be a non-empty list"),
    (one(kind="categorical", categories="abc"), "column 'c': categories must be a list"),
    (one(kind="categorical", categories=["a", None]), "column 'c': categories must be a non-empty list"),
    (one(kind="categorical", categories=[1, "1"]), "column 'c': category '1' is listed twice"),
    (one(kind="categorical", categories=["a"], lower=0), "takes categories, not lower"),
    (one(kind="binary", categories=["a", "b", "c"]), "exactly two categories, got 3"),
    (one(kind="binary", missing="yes"), "column 'c': missing must be true or false"),
    (one(kind="integer", lower=0), "column 'c': a integer column needs lower and upper"),
    (one(kind="integer", lower=0.5, upper=3), "column 'c': lower must be a whole number, got 0.5"),
    (one(kind="integer", lower=5, upper=3), "column 'c': lower 5 must be below upper 3"),
    (one(kind="integer", lower=0, upper=9, bins=11), "bins 11 is more than the 10 integers"),
    (one(kind="integer", lower=0, upper=9, categories=[1]), "takes lower and upper, not categories"),
    (one(kind="float", lower=0, upper=1, bins=0), "bins must be a whole number >= 1"),
    (one(kind="float", lower=0, upper=1, bins=[0.5, 0.2]), "cuts must increase strictly inside"),
    (one(kind="float", lower=0, upper=1, bins=[1.5]), "cuts must increase strictly inside"),
    (one(kind="float", lower="a", upper=1), "lower must be a number, got 'a'"),
    (one(kind="float", lower=1, upper=1), "lower 1 must be below upper 1"),
    (one(kind="datetime", lower="yesterday", upper="2024-01-01"), "lower must be a date or time"),
    (one(kind="datetime", lower="2024-01-01", upper="2025-01-01", bins=["2024-06-01"]), "not a list of cuts"),
    ([{"name": "c", "kind": "binary"}, 3], "column 2: expected a mapping"),
    (3, "expected a path, a mapping"),
    (one(kind="categorical", categories=["a"], other="yes"), "column 'c': other must be true or false"),
    (one(kind="categorical", categories=["a"], other=True, other_label=""), "other_label must be a non-empty"),
    (one(kind="categorical", categories=["a"], other_label="rest"), "column 'c': other_label needs other: true"),
    (one(kind="categorical", categories=["other", "b"], other=True), "other_label 'other' is also a category"),
    (one(kind="binary", other=True), "a binary column has no other value; declare it categorical"),
    (one(kind="integer", lower=0, upper=9, other=True), "other is for categorical columns"),
    ({"columns": [{"name": "c", "kind": "binary"}], "target": "y"}, "schema: target 'y' is not a declared column (c)"),
    ({"columns": [{"name": "c", "kind": "binary"}], "target": ["c"]}, "schema: target must be a column's name"),
    ({**one(kind="binary"), "released": "yes"}, "schema: released must be a mapping with epsilon, delta and parts"),
    ({**one(kind="binary"), "released": {"delta": 1e-6, "parts": ["c: missing"]}}, "released.epsilon must be a number"),
    ({**one(kind="binary"), "released": {"epsilon": True, "delta": 0, "parts": ["c"]}}, "released.epsilon must be a"),
    ({**one(kind="binary"), "released": {"epsilon": 1, "delta": "1e-6", "parts": ["c"]}}, "released.delta must be a"),
    ({**one(kind="binary"), "released": {"epsilon": -1, "delta": 0, "parts": ["c"]}}, "released.epsilon must be > 0"),
    ({**one(kind="binary"), "released": {"epsilon": 1, "delta": 1, "parts": ["c"]}}, "released.delta in [0, 1)"),
    ({**one(kind="binary"), "released": {"epsilon": 1, "delta": 0, "parts": []}}, "released.parts must be a non-empty"),
    ({**one(kind="binary"), "released": {"epsilon": 1, "delta": 0, "parts": ["c"], "report": 3}}, "released.report"),
]


@pytest.mark.parametrize(("spec", "words"), BAD)
def test_every_bad_declaration_is_a_one_line_config_error(spec, words) -> None:
    with pytest.raises(ConfigError) as caught:
        table_schema(spec)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_schema_in_a_config_names_data_schema() -> None:
    with pytest.raises(ConfigError, match=r"^data\.schema: column 'c': lower 5 must be below upper 3$"):
        config_from_dict({"data": {"source": "csv", "path": "x.csv", "schema": one(kind="integer", lower=5, upper=3)}})


@pytest.mark.parametrize(("content", "words"), [('{"columns": [', "not a valid JSON or YAML schema"),
                                                (None, "cannot read the schema")])
def test_an_unreadable_schema_file_is_one_line(tmp_path: Path, content: str | None, words: str) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=words):
        table_schema(path)


def test_a_declared_target_is_kept_and_written_back(tmp_path: Path) -> None:
    schema = table_schema({**EVERY_KIND, "target": "region"})
    assert schema.target == "region" and table_schema(EVERY_KIND).target is None
    assert schema.to_dict()["target"] == "region" and "target" not in table_schema(EVERY_KIND).to_dict()
    assert table_schema(schema.to_dict()).target == "region" and schema != table_schema(EVERY_KIND)


def test_every_shared_tables_target_is_one_of_its_columns() -> None:
    found = sorted(resolve_data_path("tables").glob("*/*.schema.json"))
    if not found:
        pytest.skip("the shared tables are not under $DPGM_DATA_DIR/tables")
    for path in found:
        schema = table_schema(path)
        assert schema.target in schema.names, path.name


RELEASED = {"epsilon": 0.5, "delta": 1e-7, "parts": ["age: bounds", "region: categories, missing"],
            "report": "data.schema.privacy.json"}


def test_a_released_schema_is_kept_written_back_and_listed_as_public(tmp_path: Path) -> None:
    from dpgm.tables import public_input, schema_text

    path = tmp_path / "s.json"
    path.write_text(json.dumps({**EVERY_KIND, "released": RELEASED}))  # JSON writes the delta as 1e-07
    schema = table_schema(path)
    assert schema.released is not None and schema.released.delta == 1e-7 and schema.released.epsilon == 0.5
    assert json.loads(schema_text(schema))["released"] == RELEASED
    assert table_schema(schema.to_dict()).released == schema.released
    assert table_schema(EVERY_KIND).released is None and "released" not in table_schema(EVERY_KIND).to_dict()
    listed = public_input(schema)
    assert listed["released"] == RELEASED
    assert listed["why"].endswith(
        "its measured parts (age: bounds; region: categories, missing) came from a DP release of their own at "
        "epsilon = 0.5, delta = 1e-07, not on this run's ledger: the two together are (epsilon + 0.5, delta + 1e-07)-DP; "
        "its privacy report: data.schema.privacy.json")
    assert "released" not in public_input(table_schema(EVERY_KIND))


def test_the_public_input_says_what_becomes_of_a_value_outside_the_domain() -> None:
    from dpgm.tables import public_input

    not_counted = "such values are neither counted nor reported (not counted: the number of such values is not released)"
    why = public_input(table_schema(EVERY_KIND))["why"]
    assert "a number or time outside its column's bounds is clipped into them" in why and not_counted in why
    assert "a value outside a column's categories is refused before anything is written" in why
    numbers = public_input(table_schema(one(kind="integer", lower=0, upper=9)))["why"]
    assert "clipped into them: such values" in numbers and "categories" not in numbers.split("decode its records")[1]
    other = {"columns": [{"name": "c", "kind": "categorical", "categories": ["a"], "other": True}]}
    why = public_input(table_schema(other))["why"]
    assert "trains as its other value where the column declares other: true" in why and "clipped" not in why
    assert why.endswith(not_counted)
