"""The package stays readable: ruff (line length included) passes, and no module grows past its size."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The most lines a module of dpgm/ may hold, and the run orchestration in particular.
MAX_MODULE_LINES, MAX_RUN_LINES = 400, 250


def test_ruff_passes_on_the_package_its_tests_and_benchmarks() -> None:
    if shutil.which("ruff") is None and subprocess.run([sys.executable, "-m", "ruff", "--version"],
                                                       capture_output=True, check=False).returncode != 0:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "dpgm", "tests", "benchmarks"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:]


def test_no_module_is_longer_than_the_limit() -> None:
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in (ROOT / "dpgm").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}
    assert sizes["dpgm/pipeline/run.py"] < MAX_RUN_LINES
