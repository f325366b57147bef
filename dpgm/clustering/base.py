"""The partitioner interface (docs/development.md): fit on private data, release a partition.

A partitioner spends privacy only through ``dpgm.privacy.mechanisms``, which charge the
accountant BEFORE each noisy release. What it returns is the released quantities (centres, noisy part sizes) plus
the assignment of every record to its part, which is post-processing of the release.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import project_to_total

#: Ledger stage name used by every partitioner.
STAGE = "partition"


def size_shares(sizes: np.ndarray) -> np.ndarray:
    """Released part sizes (or weights) as shares summing to 1 (docs/paper.md, note 4).

    The sizes are first projected onto the non-negative ones with the same total
    (``project_to_total``: no mass added by clamping); if the total is not positive every part
    gets an equal share. Uses only released values, so it is post-processing.
    """
    w = np.asarray(sizes, dtype=np.float64)
    total = w.sum()
    return project_to_total(w, total) / total if total > 0 else np.full(len(w), 1.0 / len(w))


#: The rules a checkpoint can hold (``Partition.rule`` of records read in chunks), by name: each has
#: ``state_dict()`` (released values and public randomness, as tensors) and ``from_state(state)``.
RULES: dict[str, Any] = {}


def saved_rule(name: str) -> Callable[[type], type]:
    """Register a rule class under ``name`` (its ``rule_name``) for checkpoints."""
    def register(cls: type) -> type:
        cls.rule_name = name  # type: ignore[attr-defined]
        RULES[name] = cls
        return cls
    return register


@dataclass
class Partition:
    """The result of a DP partitioner.

    ``assignments[i]`` in 0..k-1 is the part of record i (post-processing of the release), or None
    for records read in chunks, where ``rule`` gives the parts of a chunk's records (the same
    post-processing, applied where the chunk is read; a partitioner that streams sets it);
    ``noisy_sizes[j]`` is the RELEASED (noisy, possibly non-integer) size of part j and is
    the only size later stages may use; ``centres`` are whatever the method released (may be
    None, e.g. for by-label). ``info`` holds method-specific released values for reports.
    """

    assignments: np.ndarray | None
    noisy_sizes: np.ndarray
    centres: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)
    rule: Callable[[Any], np.ndarray] | None = None
    #: Items whose frequency in every part the parts' definition fixes (one part per value of a column: part j holds
    #: value j and no other), as (items [c], frequencies [k, c]): public, so the means take them for noisy ones.
    fixed: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def k(self) -> int:
        return len(self.noisy_sizes)

    def parts_of(self, chunk: BinaryDataset) -> np.ndarray:
        """The part of each record of ``chunk``: the assignments (records in memory: the whole data)
        or the rule applied to the chunk."""
        if self.assignments is not None:
            return self.assignments
        if self.rule is None:
            raise ConfigError("this partition has no rule for records read in chunks")
        return self.rule(chunk.records)

    def part_indices(self, j: int) -> np.ndarray:
        """Indices of the records assigned to part j (private: use inside DP mechanisms only)."""
        return np.flatnonzero(self.assignments == j)


def shards(partitioner: Any) -> bool:
    """Whether ``partitioner`` may run over records sharded over ranks: its ``shards``, else its ``streams``."""
    return bool(getattr(partitioner, "shards", getattr(partitioner, "streams", False)))


def one_part(records: Any) -> np.ndarray:
    """The rule of a single part: every record in part 0."""
    return np.zeros(records.shape[0], dtype=np.int64)


class Partitioner(Protocol):
    """Anything with this ``fit`` is a partitioner. It may declare ``streams`` (it reads records in
    chunks: its releases are sums over records and each record's part follows from the record alone)
    and ``shards`` (its releases are sums over records, so ranks that each hold a shard release what
    one process would; default: ``streams``). Without either it runs in one process only."""

    def fit(self, data: BinaryDataset, accountant: Accountant, rng: np.random.Generator) -> Partition:
        """Partition ``data``; every noisy release is charged to ``accountant`` under STAGE."""
        ...

    def assign(self, records: Any) -> np.ndarray:
        """Parts of new records from the released centres (pure post-processing)."""
        ...
