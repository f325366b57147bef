"""Binary CSV loader: good files and one test per bad-input case."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from dpgm.data.csv import csv_header, load_csv
from tests.data._helpers import data_error


def write(path: Path, text: str) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def test_reads_header_values_and_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "people.csv", "a,label, b ,c\n1,3,0,1\n0,0, 1 ,1.0\n0,7,0,0.0\n\n")
    ds = load_csv(path, label_column="label")
    assert ds.item_names == ["a", "b", "c"] and ds.name == "people"
    np.testing.assert_array_equal(ds.records, [[1, 0, 1], [0, 1, 1], [0, 0, 0]])
    assert ds.labels.tolist() == [3, 0, 7] and ds.labels.dtype == np.int64


def test_gzip_limit_and_no_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "x.csv.gz", '"p,q",r\n1,0\n0,1\n1,1\n')
    ds = load_csv(path, limit=2)
    assert ds.item_names == ["p,q", "r"]
    assert ds.labels is None and ds.records.tolist() == [[1, 0], [0, 1]]


def test_missing_file(tmp_path: Path) -> None:
    data_error(lambda: load_csv(tmp_path / "no.csv"), "no.csv", "not found")


def test_empty_file(tmp_path: Path) -> None:
    data_error(lambda: load_csv(write(tmp_path / "e.csv", "\n")), "e.csv", "empty file")


def test_header_only_is_empty_dataset(tmp_path: Path) -> None:
    data_error(lambda: load_csv(write(tmp_path / "h.csv", "a,b\n")), "h.csv", "empty dataset")


def test_ragged_row(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "a,b,c\n1,0,1\n1,0\n")
    data_error(lambda: load_csv(path), "r.csv", "does not have the header's 3 fields")


def test_blank_line_inside_data_is_ragged(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "a,b\n1,0\n\n0,1\n")
    data_error(lambda: load_csv(path), "r.csv", "header's 2 fields", "blank line")


def test_non_numeric(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", "a,b\n1,0\n0,yes\n")
    data_error(lambda: load_csv(path), "n.csv", "column 'b' is not 0 or 1")


def test_non_binary(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", "a,b\n1,0\n2,1\n")
    data_error(lambda: load_csv(path), "n.csv", "column 'a' is not 0 or 1")


def test_nan(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", "a,b\n1,NaN\n")
    data_error(lambda: load_csv(path), "n.csv", "column 'b' is not 0 or 1")


def test_missing_value(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", "a,b\n1,0\n1,\n")
    data_error(lambda: load_csv(path), "n.csv", "column 'b' is not 0 or 1")


def test_first_bad_column_is_reported_whatever_the_row_order(tmp_path: Path) -> None:
    for text in ("a,b,c\n1,0,5\n1,7,0\n", "a,b,c\n1,7,0\n1,0,5\n"):
        path = write(tmp_path / "n.csv", text)
        data_error(lambda p=path: load_csv(p), "column 'b' is not 0 or 1")


def test_missing_label_column(tmp_path: Path) -> None:
    path = write(tmp_path / "l.csv", "a,b\n1,0\n")
    data_error(
        lambda: load_csv(path, label_column="y"), "l.csv", "label column 'y' not in the header"
    )


def test_non_integer_label(tmp_path: Path) -> None:
    path = write(tmp_path / "l.csv", "a,y\n1,2\n0,two\n")
    data_error(
        lambda: load_csv(path, label_column="y"), "l.csv", "label column 'y' is not an integer"
    )


def test_duplicate_and_empty_header_names(tmp_path: Path) -> None:
    data_error(
        lambda: load_csv(write(tmp_path / "d.csv", "a,a\n1,0\n")),
        "d.csv",
        "duplicate column name 'a' in the header",
    )
    data_error(
        lambda: load_csv(write(tmp_path / "d.csv", "a,,b\n1,0,1\n")), "d.csv", "empty column name"
    )


def test_only_label_column(tmp_path: Path) -> None:
    path = write(tmp_path / "o.csv", "y\n1\n")
    data_error(lambda: load_csv(path, label_column="y"), "o.csv", "empty dataset")
    bad_labels = write(tmp_path / "o.csv", "y\nnot-a-label\n")  # the header is checked first
    data_error(lambda: load_csv(bad_labels, label_column="y"), "no item columns")


def test_label_beyond_int64_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "l.csv", "a,y\n1,99999999999999999999\n")
    data_error(lambda: load_csv(path, label_column="y"), "label column 'y' is not an integer")


def test_csv_header_reads_only_the_first_line(tmp_path: Path) -> None:
    plain = tmp_path / "a.csv"
    plain.write_text("\ufeffx, y ,label\n1,0,3\n")
    packed = tmp_path / "a.csv.gz"
    packed.write_bytes(gzip.compress(b"x,y\n1,0\n"))
    assert csv_header(plain) == ["x", "y", "label"]
    assert csv_header(packed) == ["x", "y"]
    assert csv_header(tmp_path / "missing.csv") == []  # the loader reports it
