"""Records read a chunk at a time: every pass is the file's records, each once, in order."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.config_sections import DataConfig
from dpgm.data import drop_short_records, load_dataset, restrict_items
from dpgm.data.chunks import ChunkedRecords, chunks_of, narrowed, summed
from dpgm.data.transactions import load_transactions
from dpgm.errors import ConfigError, DataError
from tests.data.test_shards import transaction_file


def stacked(data: ChunkedRecords) -> sp.csr_matrix:
    return sp.vstack([c.records for c in data.chunks()], format="csr")


@pytest.mark.parametrize("chunk_bytes", [1, 7, 100, 1 << 20])
def test_chunks_are_the_whole_file_in_order(tmp_path: Path, chunk_bytes: int) -> None:
    path = transaction_file(tmp_path)
    whole = load_transactions(path, n_items=40)
    chunked = ChunkedRecords.open(path, chunk_bytes=chunk_bytes, n_items=40)
    chunks = list(chunked.chunks())
    assert len(chunks) >= min(10, path.stat().st_size // chunk_bytes)  # small chunks are many
    assert (stacked(chunked) != whole.records).nnz == 0
    assert chunked.n_records == whole.n_records and chunked.n_items == 40
    assert stacked(chunked).shape == whole.records.shape  # every second pass reads the same


@pytest.mark.parametrize("world", [2, 3])
def test_chunked_shards_are_the_shards(tmp_path: Path, world: int) -> None:
    path = transaction_file(tmp_path)
    for rank in range(world):
        shard = load_transactions(path, n_items=40, shard=(rank, world))
        chunked = ChunkedRecords.open(path, chunk_bytes=50, n_items=40, shard=(rank, world))
        assert (stacked(chunked) != shard.records).nnz == 0


def test_gzip_and_a_last_line_without_newline(tmp_path: Path) -> None:
    text = b"1 2\n\n3 3 4\n0"
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(text))
    chunked = ChunkedRecords.open(gz, chunk_bytes=3, n_items=5)
    expected = load_transactions(gz, n_items=5).records
    assert (stacked(chunked) != expected).nnz == 0 and chunked.n_records == 4


def test_rules_apply_to_every_chunk_and_to_the_universe(tmp_path: Path) -> None:
    path = transaction_file(tmp_path)
    keep = np.array([1, 5, 9, 30])
    chunked = narrowed(narrowed(ChunkedRecords.open(path, chunk_bytes=64, n_items=40),
                                lambda d: restrict_items(d, keep)), lambda d: drop_short_records(d, 1))
    whole = drop_short_records(restrict_items(load_transactions(path, n_items=40), keep), 1)
    assert (stacked(chunked) != whole.records).nnz == 0
    assert chunked.n_items == 4 and chunked.item_names == whole.item_names
    assert chunked.meta["item_ids"] == [1, 5, 9, 30]


def test_summed_is_the_statistic_of_the_whole(tmp_path: Path) -> None:
    path = transaction_file(tmp_path)
    whole = load_transactions(path, n_items=40)
    chunked = ChunkedRecords.open(path, chunk_bytes=33, n_items=40)
    counts = summed(chunked, lambda c: np.asarray(c.records.sum(axis=0)).ravel())
    assert np.array_equal(counts, np.asarray(whole.records.sum(axis=0)).ravel())
    assert list(chunks_of(whole)) == [whole]  # in memory: one chunk, one call


def test_an_empty_shard_gives_the_statistic_of_no_record(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"1 2 3 4 5 6 7 8\n\n\n")
    chunked = ChunkedRecords.open(path, chunk_bytes=4, n_items=10, shard=(1, 5))  # this rank starts no line
    assert chunked.n_records == 0
    assert np.array_equal(summed(chunked, lambda c: np.bincount(c.record_lengths(), minlength=3)), np.zeros(3))


def test_the_universe_must_be_declared_and_errors_are_one_line(tmp_path: Path) -> None:
    path = transaction_file(tmp_path)
    with pytest.raises(ConfigError, match="universe must be declared"):
        ChunkedRecords.open(path, chunk_bytes=100)
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 99\n")
    with pytest.raises(DataError, match="outside the 10 items") as err:
        list(ChunkedRecords.open(bad, chunk_bytes=100, n_items=10).chunks())
    assert "99" not in str(err.value).replace(str(bad), "") and "\n" not in str(err.value)
    corrupt = tmp_path / "c.txt.gz"
    corrupt.write_bytes(gzip.compress(b"1 2\n" * 100)[:-12])
    with pytest.raises(DataError, match="not a valid gzip"):
        list(ChunkedRecords.open(corrupt, chunk_bytes=16, n_items=10).chunks())


def test_the_config_reads_chunks_and_refuses_what_cannot(tmp_path: Path) -> None:
    path = transaction_file(tmp_path)
    data = load_dataset(DataConfig(source="transactions", path=str(path), n_items=40, chunk_mb=0.0001, min_items=1))
    assert isinstance(data, ChunkedRecords)
    whole = drop_short_records(load_transactions(path, n_items=40), 1)
    assert (stacked(data) != whole.records).nnz == 0
    for bad in ({"source": "digits", "chunk_mb": 1.0}, {"source": "transactions", "path": "x", "chunk_mb": 1.0,
                                                        "limit": 5}, {"source": "transactions", "path": "x",
                                                                      "chunk_mb": 0.0}):
        with pytest.raises(ConfigError, match="data.chunk_mb"):
            DataConfig(**bad).validate()


def csv_file(tmp_path: Path, n: int = 150, label: bool = True, gz: bool = False) -> Path:
    """n records of 6 items (and a label column), CRLF endings on some lines, two blank lines at the end."""
    rng = np.random.default_rng(4)
    x = (rng.random((n, 6)) < 0.4).astype(int)
    head = ",".join([f"i{j}" for j in range(6)] + (["digit"] if label else []))
    rows = [",".join(map(str, r)) + (f",{rng.integers(3)}" if label else "") for r in x]
    text = head + "\n" + "".join(r + ("\r\n" if i % 7 == 0 else "\n") for i, r in enumerate(rows)) + "\n\n"
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("chunk_bytes", [5, 64, 1 << 20])
def test_csv_chunks_are_the_whole_file(tmp_path: Path, chunk_bytes: int, gz: bool) -> None:
    from dpgm.data.csv import load_csv

    path = csv_file(tmp_path, gz=gz)
    whole = load_csv(path, label_column="digit")
    chunked = ChunkedRecords.open(path, chunk_bytes=chunk_bytes, source="csv", label_column="digit")
    chunks = list(chunked.chunks())
    assert (sp.vstack([sp.csr_matrix(c.records) for c in chunks]) != sp.csr_matrix(whole.records)).nnz == 0
    assert np.array_equal(np.concatenate([c.labels for c in chunks]), whole.labels)
    assert chunked.item_names == whole.item_names == [f"i{j}" for j in range(6)]


@pytest.mark.parametrize("world", [2, 3])
def test_csv_shards_are_the_file_each_record_once(tmp_path: Path, world: int) -> None:
    from dpgm.data.csv import load_csv

    path = csv_file(tmp_path, label=False)
    shards = [ChunkedRecords.open(path, chunk_bytes=40, source="csv", shard=(r, world)) for r in range(world)]
    parts = [sp.csr_matrix(c.records) for s in shards for c in s.chunks()]
    assert (sp.vstack(parts) != sp.csr_matrix(load_csv(path).records)).nnz == 0


def parquet_file(tmp_path: Path, n: int = 300, groups: int = 4) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    table = pa.table({**{f"i{j}": (rng.random(n) < 0.3) for j in range(5)}, "digit": rng.integers(3, size=n)})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=n // groups)
    return path


def test_parquet_chunks_and_row_group_shards_are_the_whole_table(tmp_path: Path) -> None:
    from dpgm.data.chunks import load_parquet

    path = parquet_file(tmp_path)
    whole = load_parquet(path, label_column="digit")
    assert whole.n_records == 300 and whole.item_names == [f"i{j}" for j in range(5)]
    chunked = ChunkedRecords.open(path, chunk_bytes=60, source="parquet", label_column="digit")  # 10 rows a chunk
    chunks = list(chunked.chunks())
    assert len(chunks) >= 30
    assert np.array_equal(np.concatenate([c.dense(np.uint8) for c in chunks]), whole.dense(np.uint8))
    assert np.array_equal(np.concatenate([c.labels for c in chunks]), whole.labels)
    shards = [ChunkedRecords.open(path, chunk_bytes=60, source="parquet", shard=(r, 3), label_column="digit")
              for r in range(3)]
    assert sum(c.n_records for s in shards for c in s.chunks()) == 300  # every row group once over the ranks
    counts = sum(summed(s, lambda c: np.asarray(c.records.sum(axis=0)).ravel()) for s in shards)
    assert np.array_equal(counts, whole.records.sum(axis=0))


def test_parquet_errors_are_one_line_without_values(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpgm.data.chunks import load_parquet

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"a": [0, 1, 7], "b": [1, None, 0]}), bad)
    with pytest.raises(DataError, match="column 'a' is not 0 or 1") as err:
        load_parquet(bad)
    assert "7" not in str(err.value).replace(str(bad), "")  # the path may hold digits
    pq.write_table(pa.table({"a": [0, 1, 1], "b": [1, None, 0]}), bad)
    with pytest.raises(DataError, match="column 'b' is missing"):
        load_parquet(bad)
    text = tmp_path / "not.parquet"
    text.write_text("secret,1,2\n")
    with pytest.raises(DataError, match="not a readable Parquet file") as err:
        load_parquet(text)
    assert "secret" not in str(err.value)


def parts_folder(tmp_path: Path, files: int = 4) -> tuple[Path, list[Path]]:
    """A folder of transaction files of different sizes (one gzip), the parts of one dataset."""
    folder = tmp_path / "parts"
    folder.mkdir()
    paths = []
    for i in range(files):
        made = transaction_file(tmp_path, n=60 * (i + 1), seed=i)
        paths.append(folder / (f"part-{i}.txt" + (".gz" if i == 1 else "")))
        paths[-1].write_bytes(gzip.compress(made.read_bytes()) if i == 1 else made.read_bytes())
    return folder, paths


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_a_folder_of_files_is_one_dataset_shared_out_whole(tmp_path: Path, world: int) -> None:
    folder, paths = parts_folder(tmp_path)
    whole = sp.vstack([load_transactions(p, n_items=40).records for p in paths], format="csr")
    shards = [ChunkedRecords.open(paths, chunk_bytes=50, n_items=40, shard=(r, world) if world > 1 else None)
              for r in range(world)]
    counts = sum(summed(s, lambda c: np.asarray(c.records.sum(axis=0)).ravel()) for s in shards)
    assert np.array_equal(counts, np.asarray(whole.sum(axis=0)).ravel())
    assert sum(summed(s, lambda c: c.n_records) for s in shards) == whole.shape[0]  # each record once
    if world == 1:
        assert (stacked(shards[0]) != whole).nnz == 0  # in name order
    data = load_dataset(DataConfig(source="transactions", path=str(folder), n_items=40, limit=250))
    assert not isinstance(data, ChunkedRecords) and (data.records != whole[:250]).nnz == 0  # in memory
    chunked = load_dataset(DataConfig(source="transactions", path=f"{folder}/part-*", n_items=40, chunk_mb=0.001))
    assert isinstance(chunked, ChunkedRecords) and (stacked(chunked) != whole).nnz == 0
    assert chunked.where == f"{folder} (4 files)"


def test_the_files_of_one_dataset_declare_the_same_items(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    csv_file(tmp_path, label=False).rename(folder / "a.csv")
    (folder / "b.csv").write_text("i0,i1\n1,0\n")
    with pytest.raises(DataError, match=r"b\.csv: its items differ from those of .*a\.csv") as caught:
        load_dataset(DataConfig(source="csv", path=str(folder)))
    assert "\n" not in str(caught.value)


def test_csv_and_parquet_folders_load_as_the_concatenation(tmp_path: Path) -> None:
    from dpgm.data.chunks import load_parquet
    from dpgm.data.csv import load_csv

    (tmp_path / "c0").mkdir()
    (tmp_path / "c1").mkdir()
    for i in range(2):
        csv_file(tmp_path, label=True).rename(tmp_path / "c0" / f"{i}.csv")
        parquet_file(tmp_path).rename(tmp_path / "c1" / f"{i}.parquet")
    csv = load_dataset(DataConfig(source="csv", path=str(tmp_path / "c0"), label_column="digit"))
    one = load_csv(tmp_path / "c0" / "0.csv", label_column="digit")
    assert csv.n_records == 2 * one.n_records and np.array_equal(csv.labels, np.tile(one.labels, 2))
    table = load_dataset(DataConfig(source="parquet", path=str(tmp_path / "c1"), label_column="digit"))
    first = load_parquet(tmp_path / "c1" / "0.parquet", label_column="digit")
    assert table.n_records == 2 * first.n_records
    shards = [ChunkedRecords.open(sorted((tmp_path / "c1").iterdir()), chunk_bytes=60, source="parquet", label_column="digit",
                                  shard=(r, 2)) for r in range(2)]
    assert [summed(s, lambda c: c.n_records) for s in shards] == [first.n_records, first.n_records]
