"""Partitions whose parts are known in advance: one part per label value, per value of a declared column, or a
single part.

The part of a record is its label (part of the private record; the label range 0..k-1 is
public), the value it holds of a declared table's column (its k items, public: the schema's), or, for the single
part, 0. The only release is the part sizes, as one Gaussian
count histogram: under add/remove a record changes one count by 1 (parallel composition
over the disjoint parts), so the histogram is ONE ``GaussianEvent(noise_multiplier=sigma)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpgm.clustering.base import STAGE, Partition, one_part, saved_rule
from dpgm.clustering.noisy_lloyd import resolve_sigma, stage_epsilon
from dpgm.data.chunks import ChunkedRecords, Records, summed
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent
from dpgm.privacy.mechanisms import gaussian_release, project_to_total


def histogram_event(sigma: float) -> GaussianEvent:
    """The one ledger event of a Gaussian count histogram over disjoint parts (sensitivity 1)."""
    return GaussianEvent(noise_multiplier=sigma)


def noisy_histogram(
    counts: np.ndarray, *, sigma: float, accountant: Accountant, rng: np.random.Generator
) -> np.ndarray:
    """The counts of parts 0..k-1 plus N(0, sigma^2) each; charged to the accountant first."""
    return gaussian_release(counts, sensitivity=1.0, noise_multiplier=sigma, accountant=accountant, stage=STAGE,
                            rng=rng)


@dataclass
class _HistogramPartitioner:
    """Shared fit: parts from ``_parts(data)``, sizes from one noisy histogram."""

    k: int = 1
    noise_multiplier: float = 40.0
    target_epsilon: float | None = None

    method: ClassVar[str] = "abstract"
    #: Whether records in chunks can be split (``dpgm.data.chunks``): parts known from each record alone.
    streams: ClassVar[bool] = False
    #: Its one release is a histogram of counts: a sum over records, so it runs over ranks (``base.shards``).
    shards: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"partition.k: must be >= 1, got {self.k}")

    def _parts(self, data: BinaryDataset) -> np.ndarray:
        raise NotImplementedError

    def fit(
        self, data: Records, accountant: Accountant, rng: np.random.Generator
    ) -> Partition:
        """Assign records to their known parts and release the noisy part sizes (records in chunks:
        one pass for the sizes; the part of a chunk's record is ``assign``'s)."""
        chunked = isinstance(data, ChunkedRecords)
        parts = None if chunked else self._parts(data)
        counts = summed(data, lambda c: np.bincount(self._parts(c), minlength=self.k)) if chunked \
            else np.bincount(parts, minlength=self.k)
        sigma = resolve_sigma(
            self.noise_multiplier, self.target_epsilon, histogram_event, 1, accountant.delta
        )
        released = noisy_histogram(counts, sigma=sigma, accountant=accountant, rng=rng)
        info = {
            "method": self.method,
            "noise_multiplier": sigma,
            "target_epsilon": self.target_epsilon,
            "stage_epsilon": stage_epsilon(histogram_event(sigma), 1, accountant.delta),
            "delta": accountant.delta,
            "released_counts": released.tolist(),
        }
        return Partition(assignments=parts, noisy_sizes=project_to_total(released, released.sum()), centres=None,
                         info=info, rule=self._rule(), fixed=self._fixed())

    def _rule(self) -> Any:
        """The parts of a chunk's records (``Partition.rule``) where the partitioner streams."""
        return self.assign if self.streams else None

    def _fixed(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The items each part's definition fixes (``Partition.fixed``): none."""
        return None


@dataclass
class ByLabel(_HistogramPartitioner):
    """One part per label value 0..k-1 (labels required; DataError otherwise)."""

    k: int = 10
    method: ClassVar[str] = "label"

    def _check_labels(self, labels: np.ndarray | None, where: str) -> np.ndarray:
        if labels is None:
            raise DataError(
                f"{where}: partition.method 'label' needs labels, and this dataset has none"
            )
        labels = np.asarray(labels, dtype=np.int64)
        if labels.size and (labels.min() < 0 or labels.max() >= self.k):
            raise DataError(f"{where}: labels must lie in 0..{self.k - 1} (partition.k={self.k})")
        return labels

    def _parts(self, data: BinaryDataset) -> np.ndarray:
        return self._check_labels(data.labels, data.where)

    def assign(self, records: Any, labels: np.ndarray | None = None) -> np.ndarray:
        """The part of a record is its label: pass ``labels`` (records alone do not say)."""
        return self._check_labels(labels, "assign")


@dataclass(frozen=True)
class ColumnOptions:
    """partition.method 'column': the column's values are items ``first`` .. ``first + k - 1`` (a declared table's
    attribute=value items run column by column: ``data.attribute_sizes``), or the declared schema's ``column`` by
    name, which sets ``first`` and ``partition.k`` (``Config.validate``)."""

    first: int | None = None
    column: str | None = None

    def __post_init__(self) -> None:
        if self.first is None:
            raise ConfigError("partition.options: 'column' needs first (the column's first item) or column (its name "
                              "in data.schema)")
        if self.first < 0:
            raise ConfigError(f"partition.options.first: must be >= 0, got {self.first}")


def column_parts(records: Any, first: int, k: int) -> np.ndarray:
    """The rank among items ``first`` .. ``first + k - 1`` of the first one each record holds (0: none)."""
    if records.shape[1] < first + k:
        raise ConfigError(f"partition.method 'column': items {first}..{first + k - 1} are not all in the item "
                          f"universe of {records.shape[1]}")
    held = records[:, first: first + k]
    held = held.toarray() if hasattr(held, "toarray") else np.asarray(held)
    return np.asarray(held > 0).argmax(axis=1).astype(np.int64)


@saved_rule("column")
@dataclass(frozen=True)
class ColumnRule:
    """A column's groups as a rule a checkpoint can hold (public: the column's items)."""

    first: int
    k: int

    def __call__(self, records: Any) -> np.ndarray:
        return column_parts(records, self.first, self.k)

    def state_dict(self) -> dict[str, Any]:
        return {"first": self.first, "k": self.k}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ColumnRule:
        return cls(int(state["first"]), int(state["k"]))


@dataclass
class ByColumn(_HistogramPartitioner):
    """One part per value of a declared table's column: a record's part is the rank of the first of the column's k
    items it holds (0 where it holds none; a table's record holds exactly one)."""

    first: int = 0
    method: ClassVar[str] = "column"
    streams: ClassVar[bool] = True

    def _parts(self, data: BinaryDataset) -> np.ndarray:
        return self.assign(data.records)

    def _fixed(self) -> tuple[np.ndarray, np.ndarray]:
        """Part j holds the column's value j and none of its others."""
        return np.arange(self.first, self.first + self.k), np.eye(self.k)

    def _rule(self) -> ColumnRule:
        return ColumnRule(self.first, self.k)

    def assign(self, records: Any) -> np.ndarray:
        """The rank of the column's value each record holds (the part's definition)."""
        return column_parts(records, self.first, self.k)


@dataclass
class SinglePart(_HistogramPartitioner):
    """partition.method 'none': every record in part 0; releases only a noisy record count.

    The trainer needs an expected batch size q * n_hat, so n is released as a Gaussian count
    (one GaussianEvent) rather than used exactly.
    """

    k: int = 1
    method: ClassVar[str] = "none"
    streams: ClassVar[bool] = True

    def _parts(self, data: BinaryDataset) -> np.ndarray:
        return np.zeros(data.n_records, dtype=np.int64)

    def assign(self, records: Any) -> np.ndarray:
        return one_part(records)
