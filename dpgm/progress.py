"""Progress bars for long stages: one helper, so every stage shows the same thing the same way.

A stage bar (``stage_bar``) counts a PUBLIC total known before the stage starts (iterations,
steps, records asked for), so tqdm's ETA is truthful; work whose size grows with n (reading a
data file, a pass over the records) gets a ``share_bar`` in percent. Each shows the epsilon
spent so far, read from the accountant in scope (``progress_scope(epsilon=...)``): the ledger
is public, its epsilon is a DP output. Nothing else derived from private data goes on a bar
unless it was released through the accountant; extra fields (``StageBar.show``) are the
caller's released values.

Bars are off when progress is off (``progress_scope(enabled=False)``, ``--no-progress``) or
when the stream is not a terminal, and appear only once a stage has run for ``delay``
seconds (short stages print nothing). Tests force them on with ``progress_scope(stream=...,
tty_only=False, delay=0)``.

Steps run inside a ``timing_scope`` record their wall seconds (``timed``): a run's grow with n, so
they leave a training run only with ``nonprivate_diagnostics``, which makes it NOT private.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Protocol, Self, TextIO

from tqdm import tqdm

#: Seconds a stage runs before its bar appears ("more than a few seconds").
DEFAULT_DELAY = 2.0
#: Seconds between two reads of the accountant's epsilon (the RDP conversion is not free).
EPSILON_REFRESH = 1.0

#: The epsilon spent so far, or None where it is not known yet (the bar then shows none).
EpsilonSource = Callable[[], float | None]


class SpendsPrivacy(Protocol):
    """Anything with the accountant's ``spent()`` (whose result has ``.epsilon``)."""

    def spent(self) -> Any: ...


@dataclass(frozen=True)
class ProgressSettings:
    """What the bars in scope do: on or off, where they write, and whose epsilon they show."""

    enabled: bool = True
    stream: TextIO | None = None  # None: sys.stderr when the bar is made
    tty_only: bool = True
    delay: float = DEFAULT_DELAY
    epsilon: EpsilonSource | None = None  # None: the bar shows no epsilon (nothing private in scope)


_SETTINGS: ContextVar[ProgressSettings] = ContextVar("dpgm_progress", default=ProgressSettings())  # noqa: B039 (frozen)


def epsilon_of(accountant: SpendsPrivacy) -> EpsilonSource:
    """The epsilon an accountant has spent so far, as a source for ``progress_scope``."""
    return lambda: float(accountant.spent().epsilon)


def nothing_spent() -> float:
    """Epsilon source of a private run before its accountant exists: nothing spent yet."""
    return 0.0


@contextmanager
def progress_scope(
    *,
    enabled: bool = True,
    epsilon: EpsilonSource | None = None,
    stream: TextIO | None = None,
    tty_only: bool | None = None,
    delay: float | None = None,
) -> Iterator[ProgressSettings]:
    """Settings for the bars made inside the block; nested scopes refine the outer one.

    ``enabled`` is ANDed with the outer scope (a caller's ``progress=False`` wins); the other
    arguments replace the outer values when given.
    """
    outer = _SETTINGS.get()
    changes: dict[str, Any] = {"enabled": outer.enabled and enabled}
    given = {"epsilon": epsilon, "stream": stream, "tty_only": tty_only, "delay": delay}
    changes.update({k: v for k, v in given.items() if v is not None})
    token = _SETTINGS.set(replace(outer, **changes))
    try:
        yield _SETTINGS.get()
    finally:
        _SETTINGS.reset(token)


def _disabled(settings: ProgressSettings, stream: TextIO) -> bool:
    """Off when progress is off, or when the stream is no terminal (unless ``tty_only`` is off)."""
    if not settings.enabled:
        return True
    return settings.tty_only and not (hasattr(stream, "isatty") and stream.isatty())


class StageBar:
    """A tqdm bar over a public total that keeps the epsilon spent so far in its postfix."""

    def __init__(self, desc: str, total: float, *, unit: str = "it", initial: float = 0,
                 unit_scale: bool = False) -> None:
        settings = _SETTINGS.get()
        stream = settings.stream or sys.stderr
        self._stream = stream
        self._epsilon = settings.epsilon
        self._fields: dict[str, str] = {}
        self._last_read = -float("inf")
        disable = _disabled(settings, stream)
        if not disable:
            self._read_epsilon(force=True)
        self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, unit_scale=unit_scale,
                         file=stream, delay=settings.delay, disable=disable, dynamic_ncols=True,
                         postfix=dict(self._fields) or None)

    def _read_epsilon(self, *, force: bool) -> None:
        """Re-read the epsilon (at most every EPSILON_REFRESH seconds unless ``force``)."""
        now = time.monotonic()
        if self._epsilon is not None and (force or now - self._last_read >= EPSILON_REFRESH):
            epsilon = self._epsilon()
            if epsilon is not None:
                self._fields["eps"] = f"{epsilon:.3f}"
            self._last_read = now

    def _refresh(self, *, force: bool = False) -> None:
        """Put the current fields in the postfix (the epsilon re-read when due, or now if ``force``);
        the next frame shows them (no redraw here: a stage shorter than ``delay`` draws nothing)."""
        if self._bar.disable:
            return
        self._read_epsilon(force=force)
        if self._fields:
            self._bar.set_postfix(self._fields, refresh=False)

    def advance(self, n: float = 1) -> None:
        """``n`` more units of the total are done."""
        self._refresh()
        self._bar.update(n)

    def advance_to(self, done: float) -> None:
        """``done`` units of the total are done (e.g. bytes read so far)."""
        self.advance(done - self._bar.n)

    def advance_share(self, done: float, total: float) -> None:
        """A ``share_bar``: ``done`` of ``total`` (both possibly private) is done; shows whole percents."""
        self.advance_to(int(100 * done / total) if total > 0 else 100)

    def show(self, **fields: str) -> None:
        """Extra postfix fields: released (DP) or public values only, never raw private ones."""
        self._fields.update(fields)
        self._refresh()

    def write(self, message: str) -> None:
        """A message on its own line that does not break the bar (written even when the bar is off)."""
        self._bar.write(message, file=self._stream)

    def close(self) -> None:
        self._refresh(force=True)
        self._bar.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stage_bar(desc: str, total: float, *, unit: str = "it", initial: float = 0, unit_scale: bool = False) -> StageBar:
    """A bar for one stage (see the module docstring); use it as a context manager."""
    return StageBar(desc, total, unit=unit, initial=initial, unit_scale=unit_scale)


def share_bar(desc: str) -> StageBar:
    """A bar in percent, for work whose size is private (a pass over the records: n is private).

    Advance it with ``StageBar.advance_share(done, total)``: only the share done is shown.
    """
    return StageBar(desc, 100, unit="%")


#: The wall seconds of the steps timed in scope (``timing_scope``), by name; None: nothing is timed.
_TIMES: ContextVar[dict[str, float] | None] = ContextVar("dpgm_times", default=None)


@contextmanager
def timing_scope() -> Iterator[dict[str, float]]:
    """Collect the wall seconds of every ``timed`` step inside the block, by name (repeats add up).

    A step's time grows with the records it reads, so a run's timings reveal n: they leave a training
    run only with ``nonprivate_diagnostics`` (``dpgm.pipeline.run``); a release's depend on the released
    models and the records asked for only.
    """
    seconds: dict[str, float] = {}
    token = _TIMES.set(seconds)
    try:
        yield seconds
    finally:
        _TIMES.reset(token)


@contextmanager
def timed(name: str) -> Iterator[None]:
    """Add the block's wall seconds to ``name`` in the timing scope (nothing outside one); as a decorator,
    ``timed(name)(f)(...)`` times one call of f."""
    seconds, start = _TIMES.get(), time.perf_counter()
    try:
        yield
    finally:
        if seconds is not None:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start


def elapsed() -> dict[str, float]:
    """The timing scope's wall seconds so far, by name, to the millisecond (empty outside one)."""
    return {name: round(value, 3) for name, value in (_TIMES.get() or {}).items()}
