"""How many threads torch and BLAS use: the cores this process may run on and that no other job is using.

torch and the BLAS behind numpy/scipy each start as many threads as the machine has CPUs, and
on a container limited to 2 cores they oversubscribe it badly (4-19x slower measured). The
default is OMP_NUM_THREADS when the user set it, else the cores available to the process (its
CPU affinity, capped by a cgroup CPU quota when one is set) less the threads of other processes
that are running when the run starts: beside one CPU-bound job on 2 cores, two threads made a run
several times slower than one, while alone two were faster (docs/results.md, "Threads beside
another job"). Only the processes this one can see are counted (in a container: its own).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_LIMITS: list[object] = []  # keeps the threadpoolctl limit alive for the process
_CONTROLLER: dict[int, Any] = {}  # threadpoolctl's view of the loaded libraries, by the count of imported modules


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


#: Looks at the running threads, and the seconds between them: the fewest seen counts, so a
#: short-lived process (a shell command) is not taken for a job.
LOOKS, LOOK_GAP = 5, 0.01


def running_elsewhere(proc: Path = Path("/proc")) -> int:
    """Threads of other processes running or ready to run (state R), the fewest of ``LOOKS`` looks;
    0 where ``proc`` cannot say (not Linux)."""
    me, fewest = str(os.getpid()), None
    for look in range(LOOKS):
        if look:
            time.sleep(LOOK_GAP)
        count = 0
        for stat in proc.glob("[0-9]*/task/*/stat"):
            if stat.parts[-4] == me:
                continue
            try:
                count += stat.read_text().rsplit(")", 1)[1].split()[0] == "R"
            except (OSError, IndexError):  # the thread ended meanwhile
                continue
        fewest = count if fewest is None else min(fewest, count)
    return fewest or 0


def default_threads() -> int:
    """OMP_NUM_THREADS when set to a positive integer (the user's choice), else the cores available
    less the threads other processes are running (at least one)."""
    raw = os.environ.get("OMP_NUM_THREADS", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, available_cores() - running_elsewhere())


def set_threads(threads: int | None = None) -> int:
    """Use ``threads`` (default: ``default_threads()``) in torch and in the BLAS libraries; returns it."""
    import torch
    from threadpoolctl import threadpool_limits

    n = threads or default_threads()
    torch.set_num_threads(n)
    _LIMITS[:] = [threadpool_limits(limits=n)]
    return n


@contextmanager
def torch_threads(n: int) -> Iterator[int]:
    """torch's intra-op threads set to ``n`` (at least one) inside the context and restored after; yields ``n``."""
    import torch

    before, n = torch.get_num_threads(), max(1, n)
    if n != before:
        torch.set_num_threads(n)
    try:
        yield n
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _controller() -> Any:
    """threadpoolctl's controller of the loaded BLAS and OpenMP libraries, found again only after a module was
    imported (a library loads with the module that needs it): finding them reads the process's library map,
    milliseconds, and a sketch sum limits its threads on every call."""
    from threadpoolctl import ThreadpoolController

    modules = len(sys.modules)
    if modules not in _CONTROLLER:
        _CONTROLLER.clear()
        _CONTROLLER[modules] = ThreadpoolController()
    return _CONTROLLER[modules]


def serial_blas() -> Any:
    """A context in which the BLAS libraries run on one thread (torch keeps its own): a release's tilt and the
    sketch's sums and decoder make many small BLAS calls, where idle BLAS threads cost twice the time on two cores,
    and their summation order would make a seeded release depend on the thread count."""
    return _controller().limit(limits=1, user_api="blas")
