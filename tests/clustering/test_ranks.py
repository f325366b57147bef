"""On more than one rank only a partitioner whose releases are sums over records runs: the Gibbs and
sample-aggregate subspace solvers see every record at once, and each rank would fit its own shard."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests._forked import queue, spawn

WORLD = 2
ACCEPTED = [("subspace", {"solver": "sulq"}), ("label", {}), ("none", {}), ("lloyd", {}), ("lsh_tree", {})]
REFUSED = [("subspace", {"solver": "gibbs", "gibbs_asymptotic_ok": True, "epsilon": 1.0}),
           ("subspace", {"solver": "sample_aggregate", "epsilon": 1.0})]


def built(method: str, options: dict[str, Any]) -> str:
    """What ``make_partitioner`` does with the config: "ok" or its one-line error."""
    from dpgm.clustering import make_partitioner
    from dpgm.config import PartitionConfig
    from dpgm.errors import ConfigError

    try:
        make_partitioner(PartitionConfig(method=method, k=2, options=options))
    except ConfigError as exc:
        return str(exc)
    return "ok"


def rank_main(rank: int, init: str, out: Any) -> None:
    import torch.distributed as dist

    os.environ["OMP_NUM_THREADS"] = "1"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    try:
        out.put((rank, [built(m, o) for m, o in ACCEPTED + REFUSED]))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    os._exit(0)  # gloo's threads can abort a process at interpreter shutdown (tests/test_distributed.py)


def test_a_partitioner_that_needs_every_record_is_refused_on_two_ranks(tmp_path: Path) -> None:
    out = queue()
    spawn(rank_main, (f"file://{tmp_path / 'init'}", out), WORLD)
    for _ in range(WORLD):
        _, results = out.get()
        assert results[:len(ACCEPTED)] == ["ok"] * len(ACCEPTED)
        for message in results[len(ACCEPTED):]:
            assert "one process" in message and "\n" not in message
    assert [built(m, o) for m, o in REFUSED] == ["ok"] * len(REFUSED)  # one process: they run
