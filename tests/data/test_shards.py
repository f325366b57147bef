"""A transaction file read rank by rank: the shards are the file's records, each exactly once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.shards import byte_range, read_shard
from dpgm.data.transactions import load_transactions
from dpgm.errors import ConfigError, DataError


def transaction_file(tmp_path: Path, n: int = 200, seed: int = 0) -> Path:
    """n records of 0 to 12 items out of 40 (some empty), lines of very different lengths."""
    rng = np.random.default_rng(seed)
    lines = [" ".join(map(str, sorted(rng.choice(40, size=rng.integers(0, 13), replace=False)))) for _ in range(n)]
    path = tmp_path / "shop.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("world", [1, 2, 3, 7])
def test_the_shards_are_the_whole_file_in_order(tmp_path: Path, world: int) -> None:
    path = transaction_file(tmp_path)
    whole = load_transactions(path, n_items=40)
    shards = [load_transactions(path, n_items=40, shard=(rank, world)) for rank in range(world)]
    assert sum(s.n_records for s in shards) == whole.n_records
    assert (sp.vstack([s.records for s in shards]) != whole.records).nnz == 0
    assert max(s.n_records for s in shards) < whole.n_records / world + 30  # byte ranges: about even


def test_a_rank_may_hold_no_record_or_only_empty_ones(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"1 2 3 4 5 6 7 8\n\n\n")  # 5 ranks: three of them start no line
    shards = [load_transactions(path, n_items=10, shard=(rank, 5)) for rank in range(5)]
    assert [s.n_records for s in shards] == [1, 0, 0, 0, 2]  # 18 bytes: lines start at 0, 16 and 17
    assert (sp.vstack([s.records for s in shards]) != load_transactions(path, n_items=10).records).nnz == 0


def test_a_rank_reads_only_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"1 2 3\n4\n5 6 7 8 9 10\n11\n")  # 26 bytes: ranges [0, 13) and [13, 26)
    assert byte_range(26, 0, 2) == (0, 13) and byte_range(26, 1, 2) == (13, 26)
    assert read_shard(path, 0, 2) == b"1 2 3\n4\n5 6 7 8 9 10\n"  # the third line starts at byte 8
    assert read_shard(path, 1, 2) == b"11\n"


def test_bad_shards_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rank 2 of 2"):
        byte_range(10, 2, 2)
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(b"")
    with pytest.raises(DataError, match="byte ranges"):
        read_shard(gz, 0, 2)


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_files_go_whole_to_one_rank_each_and_balance_bytes(tmp_path: Path, world: int) -> None:
    from dpgm.data.shards import files_for_rank

    sizes = [900, 100, 400, 400, 300, 50, 50]
    files = []
    for i, size in enumerate(sizes):
        files.append(tmp_path / f"part-{i}.txt")
        files[-1].write_bytes(b"x" * size)
    shares = [files_for_rank(files, rank, world) for rank in range(world)]
    assert sorted(f for share in shares for f in share) == files  # each file on exactly one rank
    assert all(share == sorted(share) for share in shares)  # in name order
    loads = [sum(f.stat().st_size for f in share) for share in shares]
    assert max(loads) - min(loads) <= max(sizes)  # greedy by size: within one file of even
    assert files_for_rank(files[:1], 1, 2) == []  # fewer files than ranks: a rank may get none
