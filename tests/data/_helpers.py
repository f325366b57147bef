"""Test helpers for the data loaders: tiny IDX files and one-line error checks."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dpgm.errors import DataError


def write_idx(
    path: Path, array: np.ndarray, *, magic: int | None = None, extra: bytes = b""
) -> Path:
    """Write ``array`` (uint8) as an IDX file, gzipped when ``path`` ends in .gz."""
    array = np.asarray(array, dtype=np.uint8)
    magic = (0x08 << 8) | array.ndim if magic is None else magic
    payload = struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.tobytes() + extra
    path.write_bytes(gzip.compress(payload) if path.suffix == ".gz" else payload)
    return path


def data_error(fn: Callable[[], object], *fragments: str) -> str:
    """Call ``fn``, expect a one-line DataError whose message holds every fragment."""
    with pytest.raises(DataError) as info:
        fn()
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message
