"""How loaders read files: the data files a path names, raw bytes, one-line errors about records.

The data directory and a path relative to it come from ``dpgm.locations`` (re-exported here).
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

from dpgm.errors import ConfigError, DataError
from dpgm.locations import DATA_DIR_ENV, data_dir, resolve_data_path
from dpgm.progress import share_bar

#: Bytes read per chunk (of the decompressed stream) between two updates of the loading bar.
READ_CHUNK = 1 << 24

#: Characters that make ``data.path`` a glob pattern (``parts/*.parquet``) rather than one file's name.
GLOB_CHARACTERS = frozenset("*?[")


def is_items_file(path: Path) -> bool:
    """``NAME.items.tsv[.gz]``: the item names of a transaction file, never records."""
    return path.name.removesuffix(".gz").endswith(".items.tsv")


def resolve_data_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files ``path`` names, in name order: one file; every file of a directory (hidden files and
    items files left out); or the files a glob pattern matches (as given, else under ``data_dir()``).

    One dataset can thus be a folder of parts (``parts/`` or ``parts/*.csv.gz``), which ranks share as
    whole files (``dpgm.data.shards.files_for_rank``). A name matching nothing is returned as is, so
    the loader's "not found" error names it.
    """
    text = os.fspath(path)
    if not GLOB_CHARACTERS & set(text):
        resolved = resolve_data_path(text)
        if not resolved.is_dir():
            return [resolved]
        files = [f for f in resolved.iterdir() if f.is_file() and not f.name.startswith(".") and not is_items_file(f)]
        if not files:
            raise DataError(f"{resolved}: a folder with no data file")
        return sorted(files)
    given = Path(text).expanduser()
    roots = [Path(given.anchor)] if given.is_absolute() else [Path("."), data_dir()]
    pattern = str(given.relative_to(given.anchor)) if given.is_absolute() else str(given)
    for root in roots:
        files = sorted(f for f in root.glob(pattern) if f.is_file() and not is_items_file(f))
        if files:
            return files
    raise DataError(f"{text}: no file matches (also looked in {data_dir()})")


def _read_with_bar(path: Path) -> bytes:
    """Read in chunks under a loading bar in percent of the file read: the file's size grows
    with n (about 2 m bytes a record for a 0/1 CSV), so the bar shows a share, never bytes."""
    chunks = []
    size = path.stat().st_size
    with open(path, "rb") as raw, share_bar(f"loading {path.name}") as bar:
        source = gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw
        while chunk := source.read(READ_CHUNK):
            chunks.append(chunk)
            bar.advance_share(raw.tell(), size)
    return b"".join(chunks)


def read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when the name ends in ``.gz``; one-line DataError otherwise."""
    if not path.is_file():
        hint = f" (also looked in {data_dir()}; set {DATA_DIR_ENV} to the folder holding it)"
        raise DataError(f"{path}: file not found" + ("" if path.is_absolute() else hint))
    try:
        return _read_with_bar(path)
    except (gzip.BadGzipFile, EOFError, zlib.error):
        # gzip's own message quotes the file's first bytes, which may be private content
        raise DataError(f"{path}: not a valid gzip file (corrupt or truncated)") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def record_error(path: Path, problem: str, rule: str) -> DataError:
    """A one-line error about the private records of ``path``: the problem and the rule it breaks.

    Never the offending value, its line or a count of records: whoever reads the message would
    learn them. The column names of a header and a declared item universe are public.
    """
    hint = "values and lines of private records are not shown"
    return DataError(f"{path}: {problem}; {rule} ({hint})")


def file_stem(path: Path) -> str:
    """``msnbc`` for ``msnbc.txt.gz``: the file name without ``.gz`` and one more suffix."""
    name = path.name.removesuffix(".gz")
    return Path(name).stem or name


def check_limit(limit: int | None) -> None:
    """``limit`` (use the first N records) must be None or >= 1."""
    if limit is not None and (isinstance(limit, bool) or int(limit) != limit or limit < 1):
        raise ConfigError(f"data.limit: must be an integer >= 1, got {limit!r}")


def check_threshold(threshold: float) -> None:
    """Binarisation thresholds live in (0, 1), as in DataConfig."""
    if not 0.0 < float(threshold) < 1.0:
        raise ConfigError(f"data.threshold: must be in (0, 1), got {threshold!r}")
