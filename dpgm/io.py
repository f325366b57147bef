"""Atomic file output: write to a temporary file beside the target, then rename.

A reader (or a user after a crash or Ctrl-C) never sees a half-written file under the
final name. Used for ledgers, reports, checkpoints and synthetic data releases.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from dpgm.errors import DpgmError


class OutputError(DpgmError):
    """An output path that cannot be written as asked (one-line error, exit code 2)."""


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, private: bool = False
) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; on success rename it to ``path``, else delete it.

    ``private``: the file stays owner-only (0600) from creation on, whatever the umask.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes 0600 files; give the usual permissions unless the content is private
        os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str, *, private: bool = False) -> None:
    with atomic_write(path, "w", private=private) as fh:
        fh.write(text)


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, private: bool = False) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", private=private)


def check_output(out: Path, *, mkdir: bool, what: str = "--out") -> None:
    """Refuse, before any work, an output file that cannot be written: a folder or device under
    its name, a missing folder (a typo) unless ``mkdir``, a folder that is a file or read-only."""
    if out.is_dir():
        raise OutputError(f"{what} {out}: is a folder; give a file name")
    if out.exists() and not out.is_file():
        raise OutputError(f"{what} {out}: exists and is not a regular file")
    if not out.parent.exists() and not mkdir and _nearest_existing(out.parent).is_dir():
        raise OutputError(
            f"{what} {out}: folder {out.parent} does not exist (create it, or pass --mkdir)")
    check_folder(out.parent, f"{what} {out}", create=True)


def check_folder(folder: Path, what: str, *, create: bool = False) -> None:
    """One-line OutputError unless files can be written in ``folder`` (made when ``create``,
    else only its nearest existing parent is tried): a file on its way, a read-only folder."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise OutputError(f"{what}: {existing} is not a folder")
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True)
            existing = folder
        with tempfile.NamedTemporaryFile(prefix=".dpgm-probe.", suffix=".tmp", dir=existing):
            pass
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {existing} ({exc.strerror or exc})") from None


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest parent that exists (as anything: file, folder, device)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """One-line OutputError when ``folder``'s file system has fewer than ``needed`` bytes free."""
    free = shutil.disk_usage(_nearest_existing(folder)).free
    if needed > free:
        raise OutputError(
            f"{what}: needs at least {_size(needed)} but {folder} has {_size(free)} free")


def _size(n_bytes: float) -> str:
    """A byte count for people: 1.5 GB, 200 MB, 3 kB, 12 B."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{int(n_bytes)} B"
