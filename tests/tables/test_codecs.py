"""Codecs by column kind: round trips through the attribute=value items, and values outside the domain."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.errors import DataError
from dpgm.tables import MISSING, table_schema
from dpgm.tables.records import decode, encode

SCHEMA = table_schema({"columns": [
    {"name": "flag", "kind": "binary", "categories": ["FALSE", "TRUE"]},
    {"name": "code", "kind": "categorical", "categories": [1, 2, 7], "missing": True},
    {"name": "age", "kind": "integer", "lower": 0, "upper": 99, "bins": 10},
    {"name": "rate", "kind": "float", "lower": 0.0, "upper": 1.0, "bins": [0.1, 0.5], "missing": True},
    {"name": "at", "kind": "datetime", "lower": "2024-01-01", "upper": "2024-12-31", "bins": 12},
]})


def cells(*columns):
    return [(np.asarray(values, dtype=object), np.array([v is None for v in values])) for values in columns]


def round_trip(columns, seed=0):
    records = encode(SCHEMA, cells(*columns))
    assert records.shape[1] == sum(SCHEMA.attribute_sizes)
    assert (np.asarray(records.sum(axis=1)).ravel() == len(SCHEMA.columns)).all()  # one item per column
    return records, decode(SCHEMA, records, np.random.default_rng(seed))


def test_categories_come_back_exactly_and_missing_stays_missing() -> None:
    flags, codes = [True, "FALSE", "true", False], [1, None, 7.0, "2"]
    _, (flag, code, *_) = round_trip([flags, codes, [1] * 4, [None] * 4, ["2024-05-01"] * 4])
    assert flag.tolist() == ["TRUE", "FALSE", "TRUE", "FALSE"]
    assert code.tolist() == [1, None, 7, 2]


def test_numbers_come_back_inside_their_bin_and_bounds() -> None:
    ages = [0, 9, 10, 55, 99, 150, -3, 42.6]
    rates = [0.0, 0.05, 0.1, 0.3, 0.99, 1.0, 7.0, None]
    stamps = ["2024-01-01", "2024-03-15T12:00:00", "2023-01-01", "2030-01-01", "2024-12-31", "2024-07-01",
              "2024-02-29", "2024-10-10"]
    _, (_, _, age, rate, at) = round_trip([[True] * 8, [1] * 8, ages, rates, stamps], seed=3)
    assert [type(a) for a in age] == [np.int64] * 8 or all(float(a).is_integer() for a in age)
    want_age = [(0, 9), (0, 9), (10, 19), (50, 59), (90, 99), (90, 99), (0, 9), (40, 49)]  # clipped, rounded
    assert all(lo <= a <= hi for a, (lo, hi) in zip(age, want_age))
    want_rate = [(0, 0.1), (0, 0.1), (0.1, 0.5), (0.1, 0.5), (0.5, 1), (0.5, 1), (0.5, 1)]
    assert all(lo <= r < hi or r == 1.0 for r, (lo, hi) in zip(rate[:7], want_rate)) and rate[7] is None
    seconds = np.array(at.tolist(), dtype="datetime64[s]")
    assert (seconds >= np.datetime64("2024-01-01")).all() and (seconds <= np.datetime64("2024-12-31")).all()
    assert seconds[0] < np.datetime64("2024-02-01") and seconds[3] >= np.datetime64("2024-11-30")


def test_a_record_holding_no_value_or_several_still_decodes_to_one() -> None:
    records, _ = round_trip([[True] * 3, [1, 2, 7], [5] * 3, [0.2] * 3, ["2024-05-01"] * 3])
    dense = records.toarray()
    dense[0, :2] = 0  # no flag
    dense[1, :2] = 1  # both flags
    flag = decode(SCHEMA, dense, np.random.default_rng(0))[0]
    assert flag[0] == "TRUE" and flag[1] in ("FALSE", "TRUE")  # the others' value; one of its two


CANARY = ["ZZCANARY", 987654321]


@pytest.mark.parametrize("column", [0, 1])
def test_a_value_outside_the_categories_is_refused_without_showing_it(column) -> None:
    columns = [[True, False], [1, 2], [5, 5], [0.2, 0.2], ["2024-05-01"] * 2]
    columns[column] = [columns[column][0], CANARY[column]]
    with pytest.raises(DataError) as caught:
        encode(SCHEMA, cells(*columns))
    message = str(caught.value)
    assert "outside its declared categories" in message and "\n" not in message
    assert "ZZCANARY" not in message and "987654321" not in message


def test_a_number_outside_the_bounds_is_clipped_and_never_comes_back() -> None:
    _, (_, _, age, _, _) = round_trip([[True] * 50, [1] * 50, [987654321] * 50, [0.2] * 50, ["2024-05-01"] * 50])
    assert max(age) <= 99 and 987654321 not in age.tolist()


@pytest.mark.parametrize(("column", "value", "words"), [
    (0, None, "a missing value, but the schema declares missing: false"),
    (2, "ZZCANARY", "not a number"),
    (2, float("nan"), "not a number (NaN)"),
    (4, "ZZCANARY", "not a date or time"),
])
def test_a_bad_cell_is_refused_by_its_column_alone(column, value, words) -> None:
    columns = [[True], [1], [5], [0.2], ["2024-05-01"]]
    columns[column] = [value]
    with pytest.raises(DataError) as caught:
        encode(SCHEMA, cells(*columns))
    assert words in str(caught.value) and "ZZCANARY" not in str(caught.value)
    assert f"column {SCHEMA.names[column]!r}" in str(caught.value)


OTHER_SCHEMA = table_schema({"columns": [
    {"name": "city", "kind": "categorical", "categories": ["a", "b"], "other": True, "missing": True},
    {"name": "code", "kind": "categorical", "categories": [1, 2], "other": True, "other_label": "rare"},
]})


def test_an_undeclared_value_trains_as_the_other_value_and_decodes_as_its_label() -> None:
    city = np.array(["a", "ZZCANARY", "b", "", "ZZCANARY2"], dtype=object)
    code = np.array([1, 987654321, 2, "2", "x"], dtype=object)
    assert OTHER_SCHEMA.values == [["a", "b", "other", MISSING], ["1", "2", "rare"]]
    records = encode(OTHER_SCHEMA, [(city, city == ""), (code, np.zeros(5, dtype=bool))])
    assert records.toarray().tolist() == [[1, 0, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 0, 1], [0, 1, 0, 0, 0, 1, 0],
                                          [0, 0, 0, 1, 0, 1, 0], [0, 0, 1, 0, 0, 0, 1]]
    back = decode(OTHER_SCHEMA, records, np.random.default_rng(0))
    assert back[0].tolist() == ["a", "other", "b", None, "other"] and back[1].tolist() == [1, "rare", 2, 2, "rare"]
    assert table_schema(OTHER_SCHEMA.to_dict()).values == OTHER_SCHEMA.values  # the declaration keeps it
    assert OTHER_SCHEMA.to_dict()["columns"][0]["other_label"] == "other"
    only = table_schema({"columns": [{"name": "c", "kind": "categorical", "categories": [], "other": True}]})
    assert only.values == [["other"]]  # no category passed a threshold: every value is other


def test_the_other_value_is_listed_among_the_public_inputs() -> None:
    from dpgm.tables import public_input

    assert public_input(OTHER_SCHEMA)["value"] == [("city: categorical, 2 categories and other ('other'), may be "
                                                    "missing"), "code: categorical, 2 categories and other ('rare')"]


def test_an_other_label_among_numbers_comes_back_in_a_column_of_objects() -> None:
    pd = pytest.importorskip("pandas")
    from dpgm.tables.frame import as_frame

    values = decode(OTHER_SCHEMA, encode(OTHER_SCHEMA, cells(["a", "a", "a"], [1, "ZZCANARY", 2])),
                    np.random.default_rng(0))
    frame = as_frame(OTHER_SCHEMA, values, ["code", "city"], ["int64", "object"])
    assert frame.code.tolist() == [1, "rare", 2] and frame.code.dtype == object
    plain = as_frame(OTHER_SCHEMA, [values[0], np.array([1, None, 2], dtype=object)], ["code"], ["int64"])
    assert plain.code.dtype == pd.Int64Dtype()  # missing values in integers: still the nullable dtype
