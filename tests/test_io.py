"""Atomic writes: all or nothing under the final name, usual permissions."""

import os
import stat

import pytest

from dpgm.io import atomic_write, atomic_write_json


def test_success_renames_with_usual_permissions(tmp_path):
    path = tmp_path / "out.json"
    atomic_write_json(path, {"a": 1})
    assert path.read_text().strip().startswith("{")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask  # as open() would create it
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_failure_leaves_nothing(tmp_path):
    path = tmp_path / "out.csv"
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("partial")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_private_files_are_owner_only_whatever_the_umask(tmp_path):
    path = tmp_path / "sum.json"
    old = os.umask(0)
    try:
        atomic_write_json(path, {"secret": 1}, private=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
