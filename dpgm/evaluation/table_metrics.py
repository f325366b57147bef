"""A synthetic table against the real one, on the declared schema: AIM's workload error, the numeric
columns' Wasserstein distances and train-on-synthetic.

The workload error is the mean total variation distance (TVD) of the 1-, 2- and 3-way marginals over the
schema's discretization: each column's value index as its codec encodes it (a category, a bin of a number,
missing values the last), so the metrics see the domain the synthesizer models. Wide tables have many
triples: all up to ``max_triples``, else a seeded sample of that many (the output says which). Numbers are
compared as values too: the 1-way Wasserstein distance within the bounds, divided by their width.
``evaluate_table`` adds train-on-synthetic (``dpgm.evaluation.train_on_synthetic``). Not private: everything
here reads the real data, so every output is stamped ``not_private: ["real_data"]``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation.marginal_tvd import choose_triples
from dpgm.evaluation.table_data import Table
from dpgm.evaluation.train_on_synthetic import TrainOnSynthetic, train_on_synthetic
from dpgm.tables.codecs import Numeric

#: All triples of columns when there are at most this many (17 columns: 680), else a seeded sample.
DEFAULT_MAX_TRIPLES = 1000
#: A marginal of at most this many cells is counted in a dense array, a larger one over its occupied cells.
DENSE_CELLS = 1 << 20


def marginal_tvd(real: np.ndarray, synthetic: np.ndarray, sizes: list[int]) -> float:
    """TVD of one marginal: the joint value distributions of columns (codes [n, c]) of ``sizes`` values."""
    cells = math.prod(sizes)
    a, b = (np.ravel_multi_index(tuple(codes.T), sizes) for codes in (real, synthetic))
    if cells > DENSE_CELLS:  # count over the occupied cells only
        _, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
        a, b, cells = inverse[: len(a)], inverse[len(a):], int(inverse.max()) + 1
    p = np.bincount(a, minlength=cells) / len(a)
    q = np.bincount(b, minlength=cells) / len(b)
    return float(0.5 * np.abs(p - q).sum())


@dataclass(frozen=True)
class WorkloadError:
    """Mean TVD of the 1-, 2- and 3-way marginals (NaN where the table has too few columns), their
    counts, whether the triples are all of them, and each column's own 1-way TVD."""

    oneway: float
    twoway: float
    threeway: float
    average: float  # over every marginal of the workload, all ways together (AIM's workload error)
    n_pairs: int
    n_triples: int
    all_triples: bool
    columns: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def workload_error(real: Table, synthetic: Table, *, max_triples: int = DEFAULT_MAX_TRIPLES,
                   rng: np.random.Generator | None = None) -> WorkloadError:
    """The workload error of ``synthetic`` against ``real`` (one schema). Triples: all when there are at
    most ``max_triples``, else that many drawn by ``rng`` (default seeded with 0: the same for every release)."""
    sizes, k = real.schema.attribute_sizes, len(real.schema.names)

    def errors(marginals: list[tuple[int, ...]]) -> list[float]:
        return [marginal_tvd(real.codes[:, list(m)], synthetic.codes[:, list(m)], [sizes[j] for j in m])
                for m in marginals]

    one = errors([(j,) for j in range(k)])
    two = errors(list(combinations(range(k), 2)))
    chosen, every = choose_triples(k, max_triples, rng if rng is not None else np.random.default_rng(0))
    three = errors([tuple(int(j) for j in t) for t in chosen])
    ways = [one, two, three]
    return WorkloadError(
        *(float(np.mean(w)) if w else float("nan") for w in ways),
        average=float(np.mean(one + two + three)), n_pairs=len(two), n_triples=len(three), all_triples=every,
        columns=dict(zip(real.schema.names, one)))


def wasserstein(real: Table, synthetic: Table) -> dict[str, float | None]:
    """Each numeric column's 1-way Wasserstein distance between the present values, within the bounds,
    divided by their width (0: the same distribution, 1: all mass moved from one bound to the other).
    None where one side holds no value of the column."""
    from scipy.stats import wasserstein_distance  # a second's import: only when measured

    out: dict[str, float | None] = {}
    for j, codec in enumerate(real.schema.codecs):
        if not isinstance(codec, Numeric):
            continue
        a, b = real.numbers(j), synthetic.numbers(j)
        width = codec.upper - codec.lower
        if not (a.size and b.size):
            out[codec.column.name] = None
        else:
            out[codec.column.name] = float(wasserstein_distance(a, b)) / width if width > 0 else 0.0
    return out


@dataclass(frozen=True)
class TableMetrics:
    """Every metric of a release against the real table; ``train_on_synthetic`` None without a target."""

    n_real: int
    n_synthetic: int
    workload: WorkloadError
    wasserstein: dict[str, float | None]
    train_on_synthetic: TrainOnSynthetic | None
    max_triples: int
    seed: int

    @property
    def triples(self) -> str:
        """Which 3-way marginals the workload holds, in words: all of them or a seeded sample."""
        n = self.workload.n_triples
        return (f"all {n} triples of columns" if self.workload.all_triples else
                f"a random sample of {n} triples of columns (seed {self.seed}, at most {self.max_triples})")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["workload"]["triples"] = self.triples
        return out


def evaluate_table(real: Table, synthetic: Table, *, target: str | None = None, holdout: Table | None = None,
                  split: float = 0.2, max_triples: int = DEFAULT_MAX_TRIPLES, seed: int = 0) -> TableMetrics:
    """The workload error, the Wasserstein distances and (with a ``target``) train-on-synthetic; ``seed``
    draws the sample of triples and the split (see ``train_on_synthetic``)."""
    if max_triples < 1:
        raise ConfigError(f"--max-triples must be >= 1, got {max_triples}")
    tos = None if target is None else train_on_synthetic(real, synthetic, target, holdout=holdout, split=split,
                                                         seed=seed)
    return TableMetrics(n_real=real.n, n_synthetic=synthetic.n,
                        workload=workload_error(real, synthetic, max_triples=max_triples,
                                                rng=np.random.default_rng(seed)),
                        wasserstein=wasserstein(real, synthetic), train_on_synthetic=tos, max_triples=max_triples,
                        seed=seed)
