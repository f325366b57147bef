"""One persistent worker thread for draws that overlap a step's computation (torch kernels release the GIL).

DP-SGD's gradient noise does not depend on the batch: drawn on this thread while the main thread
runs the forward and backward passes, it costs a step almost nothing on a machine with a core to
spare. The worker draws exactly what the main thread would, from the same generator in the same
order; the caller hands it the generator and touches it again only after ``Future.result()``.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run_now(fn: Callable[[], T]) -> Future[T]:
    """``fn()`` run now, on this thread, as a finished future (a raised error comes back from ``result()``)."""
    future: Future[T] = Future()
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - handed back to the caller by result(), like a worker's
        future.set_exception(exc)
    return future


class Background:
    """A lazily started single worker thread; a forked child starts its own (the parent's thread is not there)."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn()`` started on the worker thread, in a copy of the caller's context (its context variables: the
        audit's noise scale, dpgm.privacy.noise_scale); its result (or error) from ``Future.result()``."""
        if self._pool is None or self._pid != os.getpid():
            self._pool, self._pid = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpgm-draws"), os.getpid()
        return self._pool.submit(contextvars.copy_context().run, fn)
