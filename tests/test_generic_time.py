"""benchmarks/generic_time.py: the timed dataset has the asked shape and is drawn reproducibly."""

from __future__ import annotations

import numpy as np
import pytest

from tests._benchmarks import load_benchmark


@pytest.mark.realdata
def test_the_dataset_has_the_asked_records_and_items(shared_data_dir) -> None:
    if not (shared_data_dir / "t10i4d100k" / "t10i4d100k.txt.gz").is_file():
        pytest.skip("t10i4d100k not in DPGM_DATA_DIR")
    bench = load_benchmark("generic_time")
    data = bench.build_dataset(shared_data_dir, 2_000, 100, seed=3)
    assert (data.n_records, data.n_items) == (2_000, 100)
    again = bench.build_dataset(shared_data_dir, 2_000, 100, seed=3)
    assert (data.records != again.records).nnz == 0
    counts = np.asarray(data.records.sum(axis=0)).ravel()
    assert counts.min() > 0  # the most frequent items: each is in some of the drawn records
