"""Records holding no item as a part of their own (``partition.empty_part_noise_multiplier``).

In sparse data restricted to a few items (gowalla's 100 most visited places: a third of the
records hold none), a generative model gives every item a small probability, so it draws too
few empty records and too many short ones, and queries over many items ("holds any of these")
are biased. Here the empty records are counted once (a Gaussian release of L2 sensitivity 1,
charged before the noise is drawn) and set aside by a per-record rule; the partition, the part
means and the models see the other records only, and the release draws an empty record with
the count's share and conditions every other part on holding at least one item (calibration
and redraw as for ``data.min_items``). Post-processing of released values only.

Dense records (chess: every record holds 37 of 75 items) hold no empty record, but at a small budget the count's
noise (std 340 records at epsilon 0.1) has the release draw up to a third of its records empty. The length bound's
noisy histogram (dpgm.stages.length_bound) reads the other records' lengths: where it holds no record of one item
although its cut would have let through a length holding dpgm.rules.EMPTY_SEEN_SHARE of the records, the empty part
is read as empty too (``read_as_none``; post-processing of both releases). Where that histogram is read at all (some
length passes its cut) and holds no record in its first two bins (``length_bound.reads_dense``), a count below
dpgm.rules.EMPTY_DENSE_CUT of its noise stds is read as none: on sparse baskets a third of the records can be empty
and the count stands as drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpgm import rules
from dpgm.config import Config
from dpgm.data import Records, drop_short_records, summed
from dpgm.data.dataset import BinaryDataset
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages.base import Stage, StageContext

#: Ledger stage of this release.
STAGE = "empty_records"

def none_empty(shares: np.ndarray, *, records: float, cut: float) -> bool:
    """Whether the read length ``shares`` (index: length) of ``records`` records say no record is empty: none holds
    one item, and a length of rules.EMPTY_SEEN_SHARE of the records would have passed the ``cut`` (a noisy count
    below it reads as 0)."""
    seen = rules.EMPTY_SEEN_SHARE
    return seen > 0 and shares.size > 1 and shares[1] <= 0 and cut <= seen * records


def noisy_empty_count(data: Records, *, noise_multiplier: float, accountant: Accountant,
                      rng: np.random.Generator) -> float:
    """The number of records holding no item plus N(0, noise_multiplier^2), charged to ``accountant``.

    Left unclamped: the release turns it and the part sizes into shares by one projection that adds
    no mass (``clustering.base.size_shares``).
    """
    count = np.array([float(summed(data, lambda c: np.count_nonzero(c.record_lengths() == 0)))])
    return float(gaussian_release(count, sensitivity=1.0, noise_multiplier=noise_multiplier,
                                  accountant=accountant, stage=STAGE, rng=rng)[0])


class EmptyRecordsStage(Stage):
    """Count the empty records (``partition.empty_part_noise_multiplier``) and set them aside."""

    name = STAGE
    streams = True
    line = "count the records holding no item (noisy count; they form a group of their own)"
    switch = "partition.empty_part_noise_multiplier"
    payload_keys = ("empty_size",)

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.none = False  # read as no empty record by the length bound (``read_as_none``)
        self.dense = False  # the length bound's read histogram holds no short record (``read_as_dense``)

    def run(self, ctx: StageContext) -> float:
        return noisy_empty_count(ctx.data, noise_multiplier=self.cfg.partition.empty_part_noise_multiplier,
                                 accountant=ctx.accountant, rng=ctx.rng)

    def read_as_none(self) -> None:
        """No empty part: the length histogram says none (``none_empty``); the noisy count stays in the report."""
        self.none = True

    def read_as_dense(self) -> None:
        """Dense records: the length bound's read histogram holds no short record (``length_bound.reads_dense``)."""
        self.dense = True

    def narrow(self, data: BinaryDataset) -> BinaryDataset:
        return drop_short_records(data, 1)

    def payload(self) -> dict[str, Any]:
        """The noisy count: the release draws empty records with its share."""
        return {"empty_size": self.read()}

    def kept(self) -> bool:
        """Whether the release draws empty records: not where the length bound reads none, nor where it reads dense
        records and the count is below rules.EMPTY_DENSE_CUT noise stds (post-processing of both releases)."""
        cut = rules.EMPTY_DENSE_CUT * self.cfg.partition.empty_part_noise_multiplier
        return not self.none and not (self.dense and self.output < cut)

    def read(self) -> float:
        """The count the release draws with (0 where the part is not ``kept``)."""
        return float(self.output) if self.kept() else 0.0

    def report(self) -> dict[str, Any]:
        return {"noisy_empty_records": float(self.output), "empty_part": self.kept()}

    def state_dict(self) -> dict[str, Any]:
        return {"output": self.output, "none": self.none, "dense": self.dense}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.output, self.none = state["output"], state.get("none", False)
        self.dense = state.get("dense", False)
