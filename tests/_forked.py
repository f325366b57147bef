"""Running a Python script in a fresh process without paying for its imports again.

A test that runs ``python SCRIPT ARGS`` pays for importing torch, scikit-learn, pandas and dpgm (about
6 CPU seconds) in every process. ``run_script`` forks the process instead from a server that imported
them once (multiprocessing's forkserver with those modules preloaded; the server runs no torch op, so
no thread pool is forked), then runs the script as ``__main__`` with its own argv, working folder,
environment and output files: what ``python SCRIPT ARGS`` does, less the imports. ``start_script`` starts one
without waiting (a test that kills it). A test of the interpreter's own behaviour (its start-up, its signal
handlers as Python installs them) keeps a real subprocess.
"""

from __future__ import annotations

import multiprocessing
import os
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

#: The modules every script imports; the server imports them once (torch._dynamo: the first optimizer).
PRELOAD = ["numpy", "scipy.sparse", "scipy.stats", "sklearn.base", "pandas", "torch", "torch._dynamo",
           "dpgm.api", "dpgm.pipeline.run"]

#: The thread counts of OpenMP and the BLAS libraries, read once when each loads: one in the server and its children.
SERIAL = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

_context: multiprocessing.context.BaseContext | None = None


@dataclass(frozen=True)
class Done:
    """What ``subprocess.run(capture_output=True, text=True)`` gives: the exit status and both outputs."""

    returncode: int
    stdout: str
    stderr: str


def _forkserver() -> multiprocessing.context.BaseContext:
    """The server, started once with one thread per library: an OpenMP pool forked half-made hangs its child."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
        saved = {key: os.environ.get(key) for key in SERIAL}
        os.environ.update(dict.fromkeys(SERIAL, "1"))
        try:
            forkserver.ensure_running()
        finally:
            for key, value in saved.items():
                if value is None:
                    del os.environ[key]
                else:
                    os.environ[key] = value
    return _context


def _main(script: str, argv: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    """In the forked child: outputs to files, then the script as ``python script argv`` runs it."""
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [str(Path(script).parent), *extra]
    sys.argv = [script, *argv]
    runpy.run_path(script, run_name="__main__")


def start_script(script: Path, argv: list[str], *, cwd: Path, env: dict[str, str],
                 folder: Path) -> multiprocessing.process.BaseProcess:
    """``python script argv`` started in ``cwd`` with ``env``, forked from the preloaded server and not waited
    for: a real process of its own (``kill()`` sends it SIGKILL); its outputs go to files in ``folder``."""
    out, err = folder / "forked.stdout", folder / "forked.stderr"
    child = _forkserver().Process(target=_main, args=(str(script), list(argv), str(cwd), dict(env), str(out), str(err)))
    child.start()
    return child


def run_script(script: Path, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
               folder: Path) -> Done:
    """``python script argv`` in ``cwd`` with ``env``, forked from the preloaded server; its outputs
    are kept in ``folder``. A run past ``timeout`` seconds is killed and reported as exit status -9."""
    out, err = folder / "forked.stdout", folder / "forked.stderr"
    child = start_script(script, argv, cwd=cwd, env=env, folder=folder)
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
    return Done(child.exitcode if child.exitcode is not None else -9, out.read_text(errors="replace"),
                err.read_text(errors="replace"))


def spawn(fn: Callable[..., None], args: tuple[Any, ...], nprocs: int) -> None:
    """``torch.multiprocessing.spawn(fn, args, nprocs)`` with its processes forked from the preloaded server."""
    import torch.multiprocessing

    _forkserver()
    torch.multiprocessing.start_processes(fn, args=args, nprocs=nprocs, join=True, start_method="forkserver")


def queue() -> Any:
    """A queue the processes of ``spawn`` can put their results on."""
    return _forkserver().SimpleQueue()
