"""Data directory, path resolution and raw reading."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dpgm.data.paths import check_limit, data_dir, file_stem, read_bytes, resolve_data_path
from dpgm.errors import ConfigError, DataError
from tests.data._helpers import data_error


def test_data_dir_env_overrides_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DPGM_DATA_DIR", raising=False)
    assert data_dir() == Path("data")
    monkeypatch.setenv("DPGM_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path


def test_resolve_prefers_given_then_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPGM_DATA_DIR", str(tmp_path / "root"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "f.txt").write_text("1\n")
    assert resolve_data_path("sub/f.txt") == tmp_path / "root" / "sub" / "f.txt"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.txt").write_text("2\n")
    assert resolve_data_path("sub/f.txt") == Path("sub/f.txt")
    assert resolve_data_path("nowhere.txt") == Path("nowhere.txt")


def test_read_bytes_gz_plain_and_missing(tmp_path: Path) -> None:
    (tmp_path / "a.gz").write_bytes(gzip.compress(b"xyz"))
    (tmp_path / "b").write_bytes(b"xyz")
    assert read_bytes(tmp_path / "a.gz") == read_bytes(tmp_path / "b") == b"xyz"
    data_error(lambda: read_bytes(tmp_path / "c.txt"), "c.txt", "not found")
    (tmp_path / "bad.gz").write_bytes(b"plain text")
    data_error(lambda: read_bytes(tmp_path / "bad.gz"), "bad.gz", "gzip")


def test_file_stem_and_limit() -> None:
    assert file_stem(Path("x/msnbc.txt.gz")) == "msnbc"
    assert file_stem(Path("basket.csv")) == "basket"
    check_limit(None)
    check_limit(3)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="limit"):
            check_limit(bad)


def test_a_folder_or_a_pattern_names_its_files_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpgm.data.paths import resolve_data_files

    parts = tmp_path / "parts"
    parts.mkdir()
    for name in ("b.txt", "a.txt", "c.txt.gz", ".hidden", "a.items.tsv"):
        (parts / name).write_text("1\n")
    (parts / "sub").mkdir()
    assert [f.name for f in resolve_data_files(parts)] == ["a.txt", "b.txt", "c.txt.gz"]
    assert [f.name for f in resolve_data_files(f"{parts}/*.txt")] == ["a.txt", "b.txt"]
    monkeypatch.setenv("DPGM_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(parts)
    assert [f.name for f in resolve_data_files("parts/[ab].txt")] == ["a.txt", "b.txt"]  # under the data dir
    assert resolve_data_files("a.txt") == [Path("a.txt")]
    with pytest.raises(DataError, match=r"^parts/\*\.csv: no file matches"):
        resolve_data_files("parts/*.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="a folder with no data file"):
        resolve_data_files(tmp_path / "empty")
