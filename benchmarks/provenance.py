"""What every benchmark JSON carries: the commit, package versions, machine, threads and wall time.

    from provenance import write_json
    write_json(path, payload)   # wall time counted from this module's import (the script's start)

Benchmarks are scripts (``python benchmarks/NAME.py``), so this module is imported by its
plain name from the benchmarks folder.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dpgm.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
#: Import time of this module: benchmarks import it first thing, so wall time counts from here.
STARTED = time.perf_counter()
PACKAGES = ("dpgm", "torch", "numpy", "scipy", "scikit-learn", "opacus", "mbi")


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return out.stdout.strip()


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(started: float = STARTED) -> dict[str, Any]:
    """Commit (and whether the tree was dirty), versions, cores, threads, command, date, wall time."""
    import torch

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "commit": _git("rev-parse", "HEAD") or None,
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "versions": _versions(),
        "machine": {"cpus": os.cpu_count(), "cpus_available": affinity, "platform": platform.platform()},
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - started, 3),
    }


def write_json(path: str | Path, payload: dict[str, Any], *, started: float = STARTED) -> None:
    """``payload`` plus its ``provenance``, written atomically."""
    atomic_write_json(path, {**payload, "provenance": provenance(started)})
