"""SIGINT/SIGTERM during a run: a flag the training loop checks between steps (then it checkpoints and stops)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def stop_requests() -> Iterator[dict[str, int]]:
    """Turn SIGINT/SIGTERM into a flag the training loop checks between steps."""
    requested: dict[str, int] = {}

    def handler(signum: int, _frame: Any) -> None:
        requested["signal"] = signum

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
