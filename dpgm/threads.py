"""How many threads torch and BLAS use: the cores this process may run on, never more.

torch and the BLAS behind numpy/scipy each start as many threads as the machine has CPUs, and
on a container limited to 2 cores they oversubscribe it badly (4-19x slower measured). The
default is OMP_NUM_THREADS when the user set it, else the number of cores available to the
process: its CPU affinity, capped by a cgroup CPU quota when one is set.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

_LIMITS: list[object] = []  # keeps the threadpoolctl limit alive for the process


def available_cores() -> int:
    """CPUs this process may use: affinity mask, capped by the cgroup v2 quota (cpu.max)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def default_threads() -> int:
    """OMP_NUM_THREADS when set to a positive integer (the user's choice), else ``available_cores()``."""
    raw = os.environ.get("OMP_NUM_THREADS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else available_cores()


def set_threads(threads: int | None = None) -> int:
    """Use ``threads`` (default: ``default_threads()``) in torch and in the BLAS libraries; returns it."""
    import torch
    from threadpoolctl import threadpool_limits

    n = threads or default_threads()
    torch.set_num_threads(n)
    _LIMITS[:] = [threadpool_limits(limits=n)]
    return n
