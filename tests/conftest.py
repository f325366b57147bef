"""Shared fixtures: the real data folder (from DPGM_DATA_DIR) and a tiny synthetic dataset."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dpgm.data.dataset import BinaryDataset

REAL_DATA_SUBFOLDERS = ("mnist", "msnbc", "retail", "gowalla")


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist every worker uses one thread: two workers on two cores, not four threads."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from dpgm.threads import set_threads

        set_threads(1)


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The real data folder named by $DPGM_DATA_DIR; skips the test when it is absent.

    The folder must hold at least one of mnist/, msnbc/, retail/, gowalla/; a test that needs
    a particular one should also skip when that subfolder is missing.
    """
    raw = os.environ.get("DPGM_DATA_DIR")
    if raw:
        root = Path(raw).expanduser()
        if any((root / sub).is_dir() for sub in REAL_DATA_SUBFOLDERS):
            return root
    pytest.skip(
        "real data not found: set DPGM_DATA_DIR to a folder holding mnist/, msnbc/, ... "
        "(CI points it at ../shared/data)"
    )


@pytest.fixture
def tiny_dataset() -> BinaryDataset:
    """40 dense binary records x 12 items with labels 0..2 (fixed seed): for fast unit tests."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), [14, 13, 13])
    # Each label switches on its own block of 4 items with probability 0.8, others with 0.1.
    probs = np.full((40, 12), 0.1)
    for label in range(3):
        probs[labels == label, 4 * label : 4 * label + 4] = 0.8
    records = (rng.random((40, 12)) < probs).astype(np.uint8)
    return BinaryDataset(
        records=records,
        item_names=[f"i{j}" for j in range(12)],
        labels=labels,
        name="tiny",
    )


@pytest.fixture
def progress_output() -> Iterator[io.StringIO]:
    """Every progress bar made in the test, forced on (no TTY, no delay) and written here."""
    from dpgm.progress import progress_scope

    stream = io.StringIO()
    with progress_scope(stream=stream, tty_only=False, delay=0):
        yield stream
