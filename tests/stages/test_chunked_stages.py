"""A statistics stage over records read in chunks releases what it releases over the records in memory."""

from __future__ import annotations

import pickle
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from dpgm.clustering.base import RULES
from dpgm.clustering.kernel_kmeans import DPKernelKMeans
from dpgm.clustering.lloyd import DPLloyd
from dpgm.clustering.lsh_tree import LshTreeOptions, LshTreePartitioner
from dpgm.clustering.noisy_lloyd import NearestCentre
from dpgm.clustering.sketch.partitioner import SketchPartitioner
from dpgm.data.chunks import ChunkedRecords
from dpgm.data.transactions import load_transactions
from dpgm.privacy.accountant import Accountant
from dpgm.stages.dependence import noisy_dependence
from dpgm.stages.empty_records import noisy_empty_count
from dpgm.stages.items import noisy_top_item_ids
from dpgm.stages.part_means import noisy_part_means
from dpgm.stages.record_lengths import noisy_length_shares
from tests.data.test_shards import transaction_file


def both(tmp_path: Path, chunk_bytes: int = 97) -> tuple:
    path = transaction_file(tmp_path, n=600)
    return load_transactions(path, n_items=40), ChunkedRecords.open(path, chunk_bytes=chunk_bytes, n_items=40)


def released(fn, data) -> tuple:
    """fn's release from a seeded generator, and the ledger it left."""
    acc = Accountant(delta=1e-5)
    out = fn(data, acc, np.random.default_rng(5))
    return out, acc.ledger.to_json()


@pytest.mark.parametrize("stage", ["items", "empty_records", "record_lengths", "dependence"])
def test_a_sum_stage_releases_the_same_from_chunks(tmp_path: Path, stage: str) -> None:
    fn = {
        "items": lambda d, a, r: noisy_top_item_ids(d, 7, noise_multiplier=2.0, accountant=a, rng=r),
        "empty_records": lambda d, a, r: noisy_empty_count(d, noise_multiplier=2.0, accountant=a, rng=r),
        "record_lengths": lambda d, a, r: noisy_length_shares(d, noise_multiplier=2.0, accountant=a, rng=r),
        "dependence": lambda d, a, r: noisy_dependence(d, noise_multiplier=2.0, accountant=a, rng=r),
    }[stage]
    memory, chunks = both(tmp_path)
    (a, ledger_a), (b, ledger_b) = released(fn, memory), released(fn, chunks)
    assert np.array_equal(np.asarray(a), np.asarray(b)) and ledger_a == ledger_b


@pytest.mark.parametrize(("method", "init"), [("lloyd", "random"), ("lloyd", "public"),
                                              ("kernel_kmeans", "random"), ("kernel_kmeans", "public")])
def test_lloyd_and_the_part_means_release_the_same_from_chunks(tmp_path: Path, method: str, init: str) -> None:
    memory, chunks = both(tmp_path, chunk_bytes=61)
    (tmp_path / "public").mkdir()
    public = load_transactions(transaction_file(tmp_path / "public", n=100, seed=9), n_items=40) \
        if init == "public" else None
    results = []
    for data in (memory, chunks):
        acc, rng = Accountant(delta=1e-5), np.random.default_rng(3)
        kind = {"lloyd": DPLloyd, "kernel_kmeans": partial(DPKernelKMeans, features=30, gamma=0.2)}[method]
        part = kind(k=4, iterations=3, noise_multiplier=3.0, init=init, public=public).fit(data, acc, rng)
        assign = part.assignments if part.assignments is not None else part.rule
        records = data.records if data is memory else data
        means = noisy_part_means(records, assign, part.noisy_sizes, clip=None, noise_multiplier=2.0,
                                 accountant=acc, rng=rng)
        results.append((part, means, acc.ledger.to_json()))
    (pm, mm, lm), (pc, mc, lc) = results
    assert pc.assignments is None and pm.assignments is not None  # in chunks, the rule stands for the array
    assert np.array_equal(pm.noisy_sizes, pc.noisy_sizes) and np.array_equal(pm.centres, pc.centres)
    assert np.array_equal(mm, mc) and lm == lc
    assert np.array_equal(pc.rule(memory.records), pm.assignments)  # the rule gives the array's parts
    saved = NearestCentre.from_state(pickle.loads(pickle.dumps(pc.rule.state_dict())))  # as a checkpoint holds it
    assert np.array_equal(saved(memory.records), pm.assignments)
    assert (saved.feature_map is None) == (method == "lloyd")


@pytest.mark.parametrize("centre", ["none", "public"])
def test_the_lsh_tree_releases_the_same_from_chunks(tmp_path: Path, centre: str) -> None:
    """A pass per tree level, one for the leaf sums, one for the sizes: the same releases, bit for bit."""
    memory, chunks = both(tmp_path, chunk_bytes=61)
    (tmp_path / "public").mkdir()
    public = load_transactions(transaction_file(tmp_path / "public", n=100, seed=9), n_items=40)
    results = []
    for data in (memory, chunks):
        acc = Accountant(delta=1e-5)
        options = LshTreeOptions(max_depth=6, centre=centre)
        part = LshTreePartitioner(k=3, noise_multiplier=2.0, options=options, public=public).fit(
            data, acc, np.random.default_rng(4))
        results.append((part, acc.ledger.to_json()))
    (pm, lm), (pc, lc) = results
    assert lm == lc and pc.assignments is None
    assert np.array_equal(pm.noisy_sizes, pc.noisy_sizes) and np.array_equal(pm.centres, pc.centres)
    saved = RULES["nearest_centre"].from_state(pickle.loads(pickle.dumps(pc.rule.state_dict())))
    assert np.array_equal(saved(memory.records), pm.assignments)


def test_sulq_subspaces_release_the_same_from_chunks(tmp_path: Path) -> None:
    """SuLQ k-plane: a pass per iteration and one for the sizes (to float rounding of the moments)."""
    from dpgm.clustering.subspace.partitioner import DPSubspaceClustering, SubspaceOptions

    memory, chunks = both(tmp_path, chunk_bytes=61)
    results = []
    for data in (memory, chunks):
        acc = Accountant(delta=1e-5)
        options = SubspaceOptions(solver="sulq", dim=2, radius=3.0, iterations=3)
        part = DPSubspaceClustering(k=3, options=options, noise_multiplier=2.0).fit(data, acc, np.random.default_rng(4))
        results.append((part, acc.ledger.to_json()))
    (pm, lm), (pc, lc) = results
    assert lm == lc and pc.assignments is None
    assert np.allclose(pm.noisy_sizes, pc.noisy_sizes) and np.allclose(pm.centres, pc.centres, atol=1e-6)
    saved = RULES["nearest_subspace"].from_state(pickle.loads(pickle.dumps(pc.rule.state_dict())))
    assert np.array_equal(saved(memory.records), pm.assignments)
    gibbs = DPSubspaceClustering(k=3, options=SubspaceOptions(solver="gibbs", gibbs_asymptotic_ok=True, epsilon=1.0))
    assert gibbs.streams is False  # the Gibbs chain sees every record at once


def test_the_sketch_releases_the_same_from_chunks(tmp_path: Path) -> None:
    """One pass of chunks sums the sketch (to float rounding): the same ledger, sizes and parts."""
    memory, chunks = both(tmp_path, chunk_bytes=61)
    results = []
    for data in (memory, chunks):
        acc = Accountant(delta=1e-5)
        part = SketchPartitioner(k=3, sketch_size=60, noise_multiplier=0.5, decodes=1).fit(
            data, acc, np.random.default_rng(4))
        results.append((part, acc.ledger.to_json()))
    (pm, lm), (pc, lc) = results
    assert lm == lc and pc.assignments is None
    assert np.allclose(pm.noisy_sizes, pc.noisy_sizes, rtol=1e-3)
    saved = RULES["nearest_decoded"].from_state(pickle.loads(pickle.dumps(pc.rule.state_dict())))
    assert np.mean(saved(memory.records) == pm.assignments) > 0.98


def test_the_value_counts_of_a_tree_over_attributes_are_the_same_from_chunks(tmp_path: Path) -> None:
    """The counts the tree over attributes scores and releases (``item_pairs.part_value_counts``), summed chunk by
    chunk, per part by the partition's rule: the same as over the records in memory."""
    from dpgm.clustering.base import Partition
    from dpgm.data.chunks import summed
    from dpgm.stages.attributes import Schema
    from dpgm.stages.item_pairs import part_value_counts

    memory, chunks = both(tmp_path)
    schema = Schema(of=np.repeat(np.arange(10), 4), complete=np.ones(10, dtype=bool))

    def rule(records) -> np.ndarray:
        return np.asarray(records[:, 0].todense()).ravel().astype(np.int64)  # two parts: item 0 held or not

    partition = Partition(assignments=None, noisy_sizes=np.array([300.0, 300.0]), rule=rule)
    groups = [[np.arange(5)] * 10, [np.array([0, 1, 2, 3, 3])] * 10]  # the second part's last two values: one group
    counts = [summed(data, lambda chunk: part_value_counts(chunk, partition, schema, groups))
              for data in (memory, chunks)]
    assert np.array_equal(counts[0], counts[1]) and counts[0].shape == (2, 50, 50)
    assert not counts[0][1, 40:].any()  # the second part's 40 groups, padded to the first's 50
    traces = [np.trace(counts[0][0, :5, :5]), np.trace(counts[0][1, :4, :4])]  # the first attribute's groups
    assert traces == np.bincount(rule(memory.records)).tolist()
