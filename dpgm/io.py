"""Atomic file output: write to a temporary file beside the target, then rename.

A reader (or a user after a crash or Ctrl-C) never sees a half-written file under the
final name. Used for ledgers, reports, checkpoints and synthetic data releases.
"""

from __future__ import annotations

import contextlib
import json
import os
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
    # mkstemp makes 0600 files; give the usual permissions unless the content is private
    os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())
    try:
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


def check_output(out: Path, *, mkdir: bool) -> None:
    """Refuse an output path whose folder is missing (a typo) unless ``mkdir``, or that is a folder."""
    if out.is_dir():
        raise OutputError(f"--out {out}: is a folder; give a file name")
    if not out.parent.exists():
        if not mkdir:
            raise OutputError(f"--out {out}: folder {out.parent} does not exist (create it, or pass --mkdir)")
        out.parent.mkdir(parents=True)
