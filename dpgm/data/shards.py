"""One rank's shard: whole files of a dataset held in several, or the lines of one file in a byte range.

A dataset of several files is shared out as whole files, each to the rank with the fewest bytes so
far (``files_for_rank``; gzip files are fine). A file of S bytes is cut into ``world`` ranges [S r /
world, S (r + 1) / world); rank r reads the lines whose first byte lies in its range, and only those
bytes (plus the scan to the next line break at each end). The shards of all ranks are the file's
lines, each exactly once, in order (docs/guide/distributed.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from dpgm.errors import ConfigError, DataError

#: Bytes read at a time while looking for the next line break.
SCAN_CHUNK = 1 << 16


def byte_range(size: int, rank: int, world: int) -> tuple[int, int]:
    """Rank ``rank``'s share [start, end) of ``size`` bytes cut into ``world`` equal ranges."""
    if world < 1 or not 0 <= rank < world:
        raise ConfigError(f"a shard needs 0 <= rank < world size, got rank {rank} of {world}")
    return size * rank // world, size * (rank + 1) // world


def files_for_rank(files: Sequence[Path], rank: int, world: int) -> list[Path]:
    """Rank ``rank``'s files of ``files``: largest first, each to the rank holding the fewest bytes so far
    (ties to the lower rank), kept in name order. Every file goes to exactly one rank; a rank may get
    none when there are fewer files than ranks."""
    byte_range(0, rank, world)  # checks rank and world
    load = [0] * world
    owner: dict[Path, int] = {}
    for path in sorted(files, key=lambda p: (-_size(p), str(p))):
        owner[path] = min(range(world), key=lambda r: (load[r], r))
        load[owner[path]] += _size(path)
    return [p for p in files if owner[p] == rank]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        raise DataError(f"{path}: file not found") from None


def line_start(f: BinaryIO, pos: int, size: int) -> int:
    """The offset of the first line that starts at or after ``pos`` (``size`` when none does)."""
    if pos <= 0:
        return 0
    f.seek(pos - 1)
    offset = pos - 1
    while offset < size:
        chunk = f.read(SCAN_CHUNK)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            return offset + newline + 1
        offset += len(chunk)
    return size


def read_shard(path: Path, rank: int, world: int) -> bytes:
    """The bytes of the lines of ``path`` that start in rank ``rank``'s byte range."""
    if path.suffix == ".gz":
        raise DataError(f"{path}: a gzip file cannot be read by byte ranges; give each rank its own file "
                        "or an uncompressed one")
    try:
        with path.open("rb") as f:
            size = path.stat().st_size
            start, end = byte_range(size, rank, world)
            begin, stop = line_start(f, start, size), line_start(f, end, size)
            f.seek(begin)
            return f.read(max(0, stop - begin))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
