"""Where data lives: the data directory (``$DPGM_DATA_DIR``, else ``./data``) and paths relative to it.

The data directory is ``$DPGM_DATA_DIR`` when set, else ``data/`` relative to the current
working directory (run dpgm from the checkout's root, as the README does; an installed
package has no "repository folder" to fall back on, so the working directory is used).
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "DPGM_DATA_DIR"


def data_dir() -> Path:
    """The data directory: ``$DPGM_DATA_DIR`` if set and non-empty, else ``./data``."""
    raw = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(raw).expanduser() if raw else Path("data")


def resolve_data_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as given when absolute or present; else ``data_dir() / path`` when that exists.

    Lets configs name files relative to the data directory (e.g. ``msnbc/msnbc.txt.gz``).
    A path found nowhere is returned unchanged, so the loader's "not found" error names it.
    """
    given = Path(path).expanduser()
    if given.is_absolute() or given.exists():
        return given
    candidate = data_dir() / given
    return candidate if candidate.exists() else given
