"""What the quality report shows, as numbers: real against synthetic, statistic by statistic.

Every statistic is a fraction of records, so releases of any size compare with the real
data. Pair statistics (co-occurrence: the fraction of records holding both items; phi
correlation) are computed for the ``max_shown`` items most frequent in the real data only: a
matrix of thousands of items is neither readable nor cheap (m x m). Counting queries are the
paper's workload (``evaluation.counting``). Not private: it reads the real data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.data.dataset import BinaryDataset
from dpgm.evaluation.counting import start_evaluation
from dpgm.evaluation.marginal_tvd import as_binary_csr, pair_frequencies, tvd

DEFAULT_MAX_SHOWN = 50  # items in the co-occurrence and correlation matrices
N_SAMPLES = 32  # images per side of the sample grid


@dataclass(frozen=True)
class PairStats:
    """Pair statistics of the shown items, each (k, k): co-occurrence fractions and phi correlations.

    The co-occurrence diagonal holds the item frequencies; the correlation diagonal is NaN.
    """

    cooc: np.ndarray
    corr: np.ndarray


@dataclass(frozen=True)
class Comparison:
    """The report's numbers for one release against the real data (same items, same order)."""

    real_name: str
    synthetic_name: str
    n_real: int
    n_synthetic: int
    item_names: list[str]
    freq_real: np.ndarray
    freq_synthetic: np.ndarray
    lengths_real: np.ndarray  # fraction of records of each length 0..L (both the same L)
    lengths_synthetic: np.ndarray
    shown: np.ndarray  # item ids in the pair matrices, most frequent (real) first
    pairs_real: PairStats
    pairs_synthetic: PairStats
    query_errors: dict[int, float]  # mean relative error per length group
    group_max_lengths: dict[int, int]
    n_queries: int
    image_shape: tuple[int, int] | None = None
    samples_real: np.ndarray | None = None  # (N_SAMPLES, h, w) when images
    samples_synthetic: np.ndarray | None = None
    labelled: tuple[bool, bool] = (False, False)  # whether the real data, the release have labels
    label_values: np.ndarray | None = None  # when both sides have labels
    label_share_real: np.ndarray | None = None
    label_share_synthetic: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return len(self.item_names)

    def freq_error(self) -> np.ndarray:
        """Synthetic minus real frequency of every item."""
        return self.freq_synthetic - self.freq_real

    def length_tvd(self) -> float:
        """Total variation distance of the record-length distributions, in [0, 1]."""
        return float(tvd(self.lengths_real, self.lengths_synthetic))

    def pair_errors(self) -> tuple[float, float]:
        """Mean absolute difference over the shown pairs (i < j): (co-occurrence, correlation)."""
        i, j = np.triu_indices(len(self.shown), k=1)
        if i.size == 0:
            return float("nan"), float("nan")
        cooc = np.abs(self.pairs_synthetic.cooc - self.pairs_real.cooc)[i, j]
        corr = np.abs(self.pairs_synthetic.corr - self.pairs_real.corr)[i, j]
        return float(cooc.mean()), float(corr.mean())

    @property
    def has_labels(self) -> bool:
        return self.label_values is not None


def length_histogram(data: BinaryDataset, longest: int) -> np.ndarray:
    """Fraction of records holding 0, 1, ..., ``longest`` items."""
    return np.bincount(data.record_lengths(), minlength=longest + 1)[: longest + 1] / data.n_records


def pair_stats(data: BinaryDataset, items: np.ndarray) -> PairStats:
    """Co-occurrence fractions and phi correlations among ``items`` (a 0/1 variable per item)."""
    cooc = pair_frequencies(as_binary_csr(data.records)[:, items])
    p = np.diag(cooc).copy()
    sd = np.sqrt(p * (1.0 - p))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (cooc - np.outer(p, p)) / np.outer(sd, sd)
    corr[~np.isfinite(corr)] = 0.0  # an item always or never present correlates with nothing
    np.fill_diagonal(corr, np.nan)
    return PairStats(cooc=cooc, corr=np.clip(corr, -1.0, 1.0))


def item_frequencies(data: BinaryDataset) -> np.ndarray:
    """Fraction of records holding each item."""
    return np.asarray(data.records.sum(axis=0), dtype=np.float64).ravel() / data.n_records


def image_samples(data: BinaryDataset, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Up to N_SAMPLES records drawn without replacement, as (n, h, w) images."""
    rows = np.sort(rng.choice(data.n_records, size=min(N_SAMPLES, data.n_records), replace=False))
    sub = data.records[rows]
    dense = sub.toarray() if hasattr(sub, "toarray") else np.asarray(sub)
    return dense.astype(np.float32).reshape(len(rows), *shape)


def label_shares(real: BinaryDataset, synthetic: BinaryDataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label values, share of real records, share of synthetic records) over both sides' labels."""
    values = np.union1d(real.labels, synthetic.labels)

    def share(labels: np.ndarray) -> np.ndarray:
        return (labels[:, None] == values[None, :]).sum(axis=0) / len(labels)

    return values, share(real.labels), share(synthetic.labels)


def compare(
    real: BinaryDataset,
    synthetic: BinaryDataset,
    *,
    max_shown: int = DEFAULT_MAX_SHOWN,
    n_queries: int = 1000,
    seed: int = 0,
) -> Comparison:
    """Every statistic of the report; ``seed`` fixes the queries and the image samples."""
    seeds = np.random.SeedSequence(seed).spawn(2)
    freq_real = item_frequencies(real)
    shown = np.argsort(-freq_real, kind="stable")[:max_shown]
    longest = int(max(real.record_lengths().max(), synthetic.record_lengths().max()))
    evaluation = start_evaluation(real, n_queries, np.random.default_rng(seeds[0]))
    evaluation.add("synthetic", synthetic)
    queries = evaluation.queries
    labels = label_shares(real, synthetic) if real.labels is not None and synthetic.labels is not None else None
    shape = real.image_shape
    sample_rng = np.random.default_rng(seeds[1])
    return Comparison(
        real_name=real.source or real.name,
        synthetic_name=synthetic.source or synthetic.name,
        n_real=real.n_records,
        n_synthetic=synthetic.n_records,
        item_names=list(real.item_names),
        freq_real=freq_real,
        freq_synthetic=item_frequencies(synthetic),
        lengths_real=length_histogram(real, longest),
        lengths_synthetic=length_histogram(synthetic, longest),
        shown=shown,
        pairs_real=pair_stats(real, shown),
        pairs_synthetic=pair_stats(synthetic, shown),
        query_errors=evaluation.group_means()["synthetic"],
        group_max_lengths={g: queries.group_max_length(g) for g in range(1, queries.groups + 1)},
        n_queries=len(queries),
        image_shape=real.image_shape,
        labelled=(real.labels is not None, synthetic.labels is not None),
        samples_real=None if shape is None else image_samples(real, shape, sample_rng),
        samples_synthetic=None if shape is None else image_samples(synthetic, shape, sample_rng),
        label_values=None if labels is None else labels[0],
        label_share_real=None if labels is None else labels[1],
        label_share_synthetic=None if labels is None else labels[2],
    )
