"""threads: default = the cores available to the process less other running threads, applied to torch and BLAS."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_info

import dpgm.threads
from dpgm.threads import available_cores, default_threads, running_elsewhere, serial_blas, set_threads


def test_available_cores_respects_the_affinity_mask() -> None:
    assert 1 <= available_cores() <= len(os.sched_getaffinity(0))


def test_set_threads_applies_to_torch_and_blas(monkeypatch) -> None:
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        assert 1 <= set_threads(None) == torch.get_num_threads() <= available_cores()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the user's own setting wins over the default
        assert set_threads(None) == 1
    finally:
        set_threads(before)


def fake_proc(root: Path, states: dict[int, list[str]]) -> Path:
    """A /proc with one folder per pid whose tasks are in the given states."""
    for pid, tasks in states.items():
        for t, state in enumerate(tasks):
            folder = root / str(pid) / "task" / str(pid + t)
            folder.mkdir(parents=True)
            (folder / "stat").write_text(f"{pid + t} (a (b) c) {state} 1 2 3")  # a name may hold ")"
    return root


def test_serial_blas_runs_blas_on_one_thread_and_finds_the_libraries_again_only_after_an_import(monkeypatch) -> None:
    before = torch.get_num_threads()
    try:
        set_threads(2)
        blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        assert blas and max(blas) > 1  # a library that runs several threads (capped by the cores it found)
        with serial_blas():
            assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
        assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == blas  # restored
        found = dpgm.threads._controller()
        assert dpgm.threads._controller() is found  # nothing imported since: the same view
        monkeypatch.setitem(sys.modules, "a_module_just_imported", sys)
        assert dpgm.threads._controller() is not found
    finally:
        set_threads(before)


def test_running_threads_of_other_processes_are_counted(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {os.getpid(): ["R", "R"], 10: ["R", "S", "R"], 20: ["S"], 30: ["D", "R"]})
    assert running_elsewhere(proc) == 3  # own threads left out; only R counts
    assert running_elsewhere(tmp_path / "nothing") == 0  # no /proc: nothing known, nothing taken off


def test_a_busy_process_takes_a_core_off_the_default(monkeypatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert running_elsewhere() >= 1
        assert default_threads() <= max(1, available_cores() - 1)
    finally:
        busy.kill()
        busy.wait()
