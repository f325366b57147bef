"""The private partition: the partitioner ``partition.method`` names splits the records into parts.

Its noisy releases (centres' sums and counts, or a sketch, or label counts) are charged by the
partitioner itself (``dpgm.clustering``); the output kept is the partition: the noisy part sizes
(released) and each record's part (post-processing, private: it stays in the checkpoint).
"""

from __future__ import annotations

from typing import Any

import torch

from dpgm.clustering import STAGE, Partition, make_partitioner
from dpgm.config import Config
from dpgm.data import load_public_sample
from dpgm.stages.base import Stage, StageContext


class PartitionStage(Stage):
    """Split the records into ``partition.k`` parts by the registered partitioner; output: the Partition."""

    name = STAGE
    line = "split the records into {groups} ({method})"

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return True

    def run(self, ctx: StageContext) -> Partition:
        public = load_public_sample(self.cfg.data) if self.cfg.partition.init == "public" else None
        with ctx.shown():
            return make_partitioner(self.cfg.partition, public=public).fit(ctx.data, ctx.accountant, ctx.rng)

    def state_dict(self) -> dict[str, Any]:
        return {"assignments": torch.as_tensor(self.output.assignments),
                "noisy_sizes": torch.as_tensor(self.output.noisy_sizes)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.output = Partition(assignments=state["assignments"].numpy(), noisy_sizes=state["noisy_sizes"].numpy())
