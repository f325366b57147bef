"""Shared command-line plumbing: one-line errors and exit code 2 for bad input."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from dpgm.errors import DpgmError

EXIT_USAGE = 2


def run_cli(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> int:
    """Run ``main(argv)``; turn a DpgmError into ``error: <message>`` on stderr and exit code 2."""
    try:
        code = main(argv)
    except DpgmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    except BrokenPipeError:  # output piped into `head` & co.: no traceback (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)
