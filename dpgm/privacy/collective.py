"""Sums over the ranks of a torch.distributed run, and values every rank takes from rank 0.

With the records sharded over ranks, every statistic dpgm releases is a sum over records, and
each rank holds its shard's part of it. ``sum_over_ranks`` all-reduces them: every rank then holds
the exact sum over all records, the value one process would release. The noise is added once:
every rank draws (a seeded experiment draws the same noise on every rank, so the generators stay in
step), and every rank keeps rank 0's released value (``from_rank0``), so the noise of a private run,
drawn from the OS CSPRNG, is the one rank 0 drew. Every rank charges the same events, so every
rank's ledger is the same. Outside a distributed run (torch.distributed not initialised, or one
rank) every function here is the identity, and torch is never imported (docs/guide/distributed.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np


def _dist() -> Any | None:
    """torch.distributed when a process group of more than one rank is running, else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist if dist.get_world_size() > 1 else None


@contextlib.contextmanager
def launched() -> Iterator[None]:
    """Inside: the process group a launcher such as torchrun describes in the environment
    (WORLD_SIZE > 1), joined over gloo and left at the end; without one, nothing happens."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        yield
        return
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo")
    try:
        yield
        dist.barrier()  # a rank leaving while another still talks can abort the other (gloo)
    finally:
        dist.destroy_process_group()


def rank() -> int:
    """This process's rank (0 outside a distributed run)."""
    dist = _dist()
    return 0 if dist is None else int(dist.get_rank())


def world_size() -> int:
    """The number of ranks (1 outside a distributed run)."""
    dist = _dist()
    return 1 if dist is None else int(dist.get_world_size())


def barrier() -> None:
    """Wait until every rank gets here (nothing outside a distributed run)."""
    dist = _dist()
    if dist is not None:
        dist.barrier()


def _exchange(value: np.ndarray, op: str) -> np.ndarray:
    """``value`` all-reduced (``sum``) or broadcast from rank 0 (``rank0``), in int64 or float64."""
    dist = _dist()
    arr = np.asarray(value)
    if dist is None:
        return arr
    import torch

    integer = np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_
    tensor = torch.from_numpy(np.array(arr, dtype=np.int64 if integer else np.float64, copy=True))
    if op == "sum":
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    else:
        dist.broadcast(tensor, src=0)
    out = tensor.numpy()
    return out.astype(arr.dtype) if integer and arr.dtype != np.bool_ else out


def sum_over_ranks(value: np.ndarray) -> np.ndarray:
    """The sum of every rank's ``value`` (exact for integers; float64 otherwise), on every rank."""
    return _exchange(value, "sum")


def from_rank0(value: np.ndarray) -> np.ndarray:
    """Rank 0's ``value`` on every rank (the released value of a noise drawn on every rank)."""
    return _exchange(value, "rank0")


def sum_tensor_over_ranks_(tensor: Any) -> Any:
    """``tensor`` (torch, on any device the backend serves) replaced in place by its sum over ranks."""
    dist = _dist()
    if dist is not None:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def sum_tensors_over_ranks_(tensors: list[Any]) -> None:
    """Every tensor of ``tensors`` (torch, one dtype and device) replaced in place by its sum over
    ranks, in ONE all-reduce of their concatenation (one message per step, not one per tensor)."""
    if _dist() is None or not tensors:
        return
    import torch

    flat = sum_tensor_over_ranks_(torch.cat([t.reshape(-1) for t in tensors]))
    start = 0
    for t in tensors:
        t.copy_(flat[start : start + t.numel()].view_as(t))
        start += t.numel()


def tensor_from_rank0_(tensor: Any) -> Any:
    """``tensor`` (torch) replaced in place by rank 0's."""
    dist = _dist()
    if dist is not None:
        dist.broadcast(tensor, src=0)
    return tensor


def shared_entropy(bits: int = 128) -> int:
    """``bits`` random bits from the OS CSPRNG, drawn on rank 0 and the same on every rank: the seed
    of a private run's public draws (random features, hyperplanes), which every rank must share."""
    value = secrets.randbits(bits)
    if _dist() is None:
        return value
    words = np.array([(value >> (32 * i)) & 0xFFFFFFFF for i in range((bits + 31) // 32)], dtype=np.int64)
    words = from_rank0(words)
    return sum(int(w) << (32 * i) for i, w in enumerate(words))
