"""The private partition: the partitioner ``partition.method`` names splits the records into parts.

Its noisy releases (centres' sums and counts, or a sketch, or label counts) are charged by the
partitioner itself (``dpgm.clustering``); the output kept is the partition: the noisy part sizes
(released) and each record's part (post-processing, private: it stays in the checkpoint). Where
the items' measured dependence is below ``partition.merge_below``, the records form one group and
only their noisy count is released (``dpgm.stages.dependence``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from dpgm.artifact import LABEL_COLUMN, PartLabels
from dpgm.clustering import STAGE, Partition, make_partitioner
from dpgm.clustering.base import RULES, one_part
from dpgm.config import Config
from dpgm.data import load_public_sample
from dpgm.data.chunks import ChunkedRecords
from dpgm.errors import ConfigError
from dpgm.stages.base import Stage, StageContext
from dpgm.stages.dependence import STAGE as DEPENDENCE
from dpgm.stages.dependence import merges


def part_labels(cfg: Config) -> PartLabels | None:
    """Each part's label when the parts are labels (partition.method 'label': part j holds label
    j, the declared set 0..k-1), else None; the CSV label column keeps the data's name for it."""
    if cfg.partition.method != "label":
        return None
    column = cfg.data.label_column if cfg.data.source == "csv" and cfg.data.label_column else LABEL_COLUMN
    return PartLabels(labels=tuple(range(cfg.partition.k)), column=column)


class PartitionStage(Stage):
    """Split the records into ``partition.k`` parts by the registered partitioner; output: the Partition."""

    name = STAGE
    streams = True
    line = "split the records into {groups} ({method})"
    payload_keys = ("part_labels",)

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return True

    def run(self, ctx: StageContext) -> Partition:
        public = load_public_sample(self.cfg.data) if self.cfg.partition.init == "public" else None
        device = None if self.cfg.device == "cpu" else self.cfg.device  # the run's device: a GPU's sums
        settings = self.cfg.partition
        if merges(self.cfg, ctx.output(DEPENDENCE)):  # one group: its noisy count at the partitioner's multiplier
            settings = dataclasses.replace(settings, method="none", k=1, options={})
        partitioner = make_partitioner(settings, public=public, device=device)
        if isinstance(ctx.data, ChunkedRecords) and not getattr(partitioner, "streams", False):
            raise ConfigError(f"data.chunk_mb: partition.method {self.cfg.partition.method!r} needs the records "
                              "in memory here; use 'lloyd', 'kernel_kmeans', 'sketch', 'lsh_tree' or SuLQ "
                              "subspaces, or unset data.chunk_mb")
        with ctx.shown():
            return partitioner.fit(ctx.data, ctx.accountant, ctx.rng)

    def payload(self) -> dict[str, Any]:
        """Each part's label when the parts are labels (public: the declared label set)."""
        labels = part_labels(self.cfg)
        return {"part_labels": None if labels is None else {"labels": [int(x) for x in labels.labels],
                                                             "column": labels.column}}

    def state_dict(self) -> dict[str, Any]:
        state = {"noisy_sizes": torch.as_tensor(self.output.noisy_sizes)}
        if self.output.assignments is not None:
            state["assignments"] = torch.as_tensor(self.output.assignments)
        elif hasattr(self.output.rule, "rule_name"):  # records in chunks: the released rule (RULES)
            state["rule"] = {"kind": self.output.rule.rule_name, **self.output.rule.state_dict()}
        if self.output.fixed is not None:  # public: what the parts' definition fixes
            state["fixed"] = {"items": torch.as_tensor(self.output.fixed[0]),
                              "frequencies": torch.as_tensor(self.output.fixed[1])}
        return state

    def rank_state_dict(self) -> dict[str, Any] | None:
        """Each rank's parts of its own records (rank 0's are in the checkpoint)."""
        return None if self.output.assignments is None else {"assignments": torch.as_tensor(self.output.assignments)}

    def load_rank_state_dict(self, state: dict[str, Any]) -> None:
        self.output = dataclasses.replace(self.output, assignments=state["assignments"].numpy())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        sizes, rule, fixed = state["noisy_sizes"].numpy(), state.get("rule"), state.get("fixed")
        fixed = None if fixed is None else (fixed["items"].numpy(), fixed["frequencies"].numpy())
        if "assignments" in state:
            self.output = Partition(assignments=state["assignments"].numpy(), noisy_sizes=sizes, fixed=fixed)
        else:  # records in chunks: the released rule (centres, a column), or the single part's
            self.output = Partition(assignments=None, noisy_sizes=sizes, fixed=fixed,
                                    rule=one_part if rule is None else RULES[rule["kind"]].from_state(rule))
