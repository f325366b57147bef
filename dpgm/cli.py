"""Shared command-line plumbing: one-line errors and exit code 2 for bad input."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from dpgm.errors import DpgmError

EXIT_USAGE = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM as an exception: the cleanup Ctrl-C gets (temporary files, failed runs) runs too."""


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (only the main thread can set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_cli(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> int:
    """Run ``main(argv)``; turn a DpgmError into ``error: <message>`` on stderr and exit code 2,
    Ctrl-C and SIGTERM into one line and 128 + the signal's number, after the usual cleanup."""
    try:
        with _sigterm_raises():
            code = main(argv)
    except DpgmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    except BrokenPipeError:  # output piped into `head` & co.: no traceback (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Terminated:
        print("terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)
