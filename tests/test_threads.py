"""threads: default = the cores available to the process, applied to torch and BLAS."""

from __future__ import annotations

import os

import torch
from threadpoolctl import threadpool_info

from dpgm.threads import available_cores, set_threads


def test_available_cores_respects_the_affinity_mask() -> None:
    assert 1 <= available_cores() <= len(os.sched_getaffinity(0))


def test_set_threads_applies_to_torch_and_blas(monkeypatch) -> None:
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        assert set_threads(None) == available_cores() == torch.get_num_threads()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the user's own setting wins over the default
        assert set_threads(None) == 1
    finally:
        set_threads(before)
