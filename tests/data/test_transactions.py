"""Transaction-file loader: parsing, item files, top items, errors, and the real datasets."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from dpgm.data.transactions import (
    item_counts,
    load_transactions,
    restrict_items,
    top_item_ids,
)
from dpgm.errors import ConfigError, PrivacyBudgetError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpgm.privacy.mechanisms import SNAP_SHARE, grid_sensitivity, snap_grid
from dpgm.stages.items import noisy_top_item_ids
from tests.data._helpers import data_error


def write(path: Path, text: str) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def rows_of(ds) -> list[list[int]]:
    r = ds.records
    return [r.indices[r.indptr[i] : r.indptr[i + 1]].tolist() for i in range(ds.n_records)]


def test_parses_lines_blank_records_tabs_crlf_and_duplicates(tmp_path: Path) -> None:
    path = write(tmp_path / "shop.txt", "3 1\r\n\n0\t2  2 10\n7\n")
    ds = load_transactions(path)
    assert ds.is_sparse and ds.records.dtype == np.uint8
    assert rows_of(ds) == [[1, 3], [], [0, 2, 10], [7]]
    assert ds.n_items == 11 and ds.item_names[10] == "10" and ds.name == "shop"


def test_last_line_without_newline_and_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "t.txt.gz", "1\n2 3\n4")
    assert rows_of(load_transactions(path)) == [[1], [2, 3], [4]]
    assert rows_of(load_transactions(path, limit=2)) == [[1], [2, 3]]
    assert load_transactions(path, limit=99).n_records == 3


def test_random_file_matches_naive_parse(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    records = [
        sorted(set(rng.integers(0, 1500, size=rng.integers(0, 12)).tolist())) for _ in range(300)
    ]
    path = write(tmp_path / "r.txt", "".join(" ".join(map(str, r)) + "\n" for r in records))
    assert rows_of(load_transactions(path)) == records


def test_items_file_names_and_universe(tmp_path: Path) -> None:
    path = write(tmp_path / "web.txt.gz", "0 2\n1\n")
    write(
        tmp_path / "web.items.tsv.gz",
        "new_id\toriginal_id\tname\n1\t20\tnews\n0\t10\tfront\n2\t30\tsport\n3\t40\tweather\n",
    )
    ds = load_transactions(path)
    assert ds.item_names == ["front", "news", "sport", "weather"] and ds.n_items == 4
    write(tmp_path / "web.items.tsv.gz", "new_id\toriginal_id\n0\t10\n1\t20\n2\t30\n")
    assert load_transactions(path).item_names == ["10", "20", "30"]


def test_id_outside_items_file(tmp_path: Path) -> None:
    path = write(tmp_path / "web.txt", "0\n0 5\n")
    write(tmp_path / "web.items.tsv", "new_id\toriginal_id\n0\t10\n1\t20\n")
    data_error(
        lambda: load_transactions(path), "web.txt", "outside the 2 items", "run from 0 to 1"
    )


def test_bad_items_file(tmp_path: Path) -> None:
    path = write(tmp_path / "web.txt", "0\n")
    write(tmp_path / "web.items.tsv", "new_id\toriginal_id\n0\t10\n2\t20\n")
    data_error(lambda: load_transactions(path), "web.items.tsv", "new_id values")


def test_top_items_keeps_most_frequent_and_empty_records(tmp_path: Path) -> None:
    path = write(tmp_path / "t.txt", "0 1 2\n1 2\n2\n3\n0\n")  # counts: 0:2 1:2 2:3 3:1
    ds = load_transactions(path, top_items=2)
    assert ds.item_names == ["0", "2"] and ds.meta["item_ids"] == [0, 2]  # tie 0/1 -> lower id
    assert ds.n_records == 5 and ds.record_lengths().tolist() == [2, 1, 1, 0, 1]
    assert "not private" in ds.meta["top_items"]["counts"]
    assert load_transactions(path, top_items=10).n_items == 4


def test_restrict_items_composes_item_ids(tmp_path: Path) -> None:
    ds = load_transactions(write(tmp_path / "t.txt", "0 1 2 3\n3\n"))
    twice = restrict_items(restrict_items(ds, np.array([1, 3])), np.array([1]))
    assert twice.meta["item_ids"] == [3] and twice.record_lengths().tolist() == [1, 1]
    assert item_counts(ds).tolist() == [1, 1, 1, 2]
    assert top_item_ids(np.array([5, 9, 9, 1]), 2).tolist() == [1, 2]


def test_noisy_top_items_charges_one_gaussian_before_release(tmp_path: Path) -> None:
    ds = load_transactions(write(tmp_path / "t.txt", "0 1\n0\n" * 200 + "2 3\n"))
    accountant = Accountant(delta=1e-5)
    ids = noisy_top_item_ids(
        ds, 2, noise_multiplier=2.0, accountant=accountant, rng=np.random.default_rng(0)
    )
    assert ids.tolist() == [0, 1]
    [entry] = accountant.ledger.entries
    event = entry.event
    assert isinstance(event, DiscreteGaussianEvent) and entry.stage == "items" and entry.count == 1
    # the 4 normalised counts (L2 sensitivity 1), snapped to a power-of-two grid
    assert event.noise_multiplier == 2.0 and event.dim == 4 and event.grid == snap_grid(1.0, 4)
    assert event.sensitivity == pytest.approx(grid_sensitivity(1.0, 4, event.grid), rel=1e-12)
    assert 1.0 <= event.sensitivity * event.grid <= (1.0 + SNAP_SHARE) * (1 + 1e-12)
    # the exact release costs what the continuous Gaussian at the same multiplier would
    assert accountant.spent().epsilon == Accountant(delta=1e-5).epsilon_if(
        GaussianEvent(noise_multiplier=2.0)
    )
    capped = Accountant(delta=1e-5, budget_epsilon=0.01)
    with pytest.raises(PrivacyBudgetError):
        noisy_top_item_ids(
            ds, 2, noise_multiplier=2.0, accountant=capped, rng=np.random.default_rng(0)
        )
    assert capped.ledger.entries == []


def test_missing_file(tmp_path: Path) -> None:
    data_error(lambda: load_transactions(tmp_path / "none.txt.gz"), "none.txt.gz", "not found")


def test_empty_file(tmp_path: Path) -> None:
    data_error(lambda: load_transactions(write(tmp_path / "e.txt", "")), "e.txt", "empty file")


def test_no_item_ids(tmp_path: Path) -> None:
    data_error(
        lambda: load_transactions(write(tmp_path / "e.txt", "\n \n\n")), "e.txt", "empty dataset"
    )


def test_non_integer_token(tmp_path: Path) -> None:
    path = write(tmp_path / "b.txt.gz", "1 2\n3 4\n5 x7 6\n")
    data_error(lambda: load_transactions(path), "b.txt.gz", "a token that is not an item id")
    path = write(tmp_path / "f.txt", "1.5\n")
    data_error(lambda: load_transactions(path), "f.txt", "not an item id", "integers >= 0")


def test_negative_id(tmp_path: Path) -> None:
    data_error(
        lambda: load_transactions(write(tmp_path / "n.txt", "1\n2 -3\n")),
        "n.txt",
        "a token that is not an item id",
    )


def test_huge_id(tmp_path: Path) -> None:
    data_error(
        lambda: load_transactions(write(tmp_path / "h.txt", "1\n12345678901\n")),
        "h.txt",
        "too large (more than 9 digits)",
    )
    data_error(
        lambda: load_transactions(write(tmp_path / "h.txt", "1\n123456789\n")),
        "h.txt",
        "too large without an items file",
    )


def test_bad_arguments(tmp_path: Path) -> None:
    path = write(tmp_path / "t.txt", "1\n")
    with pytest.raises(ConfigError, match="top_items"):
        load_transactions(path, top_items=0)
    with pytest.raises(ConfigError, match="limit"):
        load_transactions(path, limit=0)


# Records, items and item occurrences stated in each dataset's README.
REAL = {
    "msnbc": (989_818, 17, 1_699_303),
    "retail": (88_162, 16_470, 908_576),
    "gowalla": (29_858, 40_981, 1_027_370),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_transaction_counts(shared_data_dir: Path, name: str) -> None:
    path = shared_data_dir / name / f"{name}.txt.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    ds = load_transactions(path)
    assert (ds.n_records, ds.n_items, int(ds.records.nnz)) == REAL[name]
    assert ds.record_lengths().min() >= 1
    with gzip.open(path, "rt") as fh:
        first = [list(map(int, next(fh).split())) for _ in range(50)]
    assert rows_of(ds.subset(np.arange(50))) == first
