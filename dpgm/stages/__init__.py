"""The stages of a run, in pipeline order: each a ``Stage`` registered by name (dpgm.stages.base).

items (noisy top-item choice) -> empty_records (noisy count, set aside) -> dependence (how much
the items depend on each other: below a threshold the records form one group) -> length_bound (a
noisy quantile of record lengths, the clip of the means) -> item_totals (noisy global item
totals the part means agree with) -> partition (the registered partitioner) -> part_means (noisy
mean record per part) -> item_pairs (a tree per part) -> release_pairs (one tree of pairs over
all records, which the release follows) -> record_lengths (noisy length histogram) -> training
(DP-SGD per part). A stage from outside the package registers with ``register_stage(cls)``
(before training; ``before=`` another stage) and declares what the release carries of it
(``Stage.payload``) and what the privacy report says (``Stage.line``, ``Stage.report``).
"""

from __future__ import annotations

from dpgm.stages.base import (
    STAGES,
    Stage,
    StageContext,
    planned_stages,
    register_stage,
    released_payload,
    unregister_stage,
)
from dpgm.stages.dependence import DependenceStage
from dpgm.stages.empty_records import EmptyRecordsStage
from dpgm.stages.item_pairs import ItemPairsStage
from dpgm.stages.item_totals import ItemTotalsStage
from dpgm.stages.items import ItemsStage
from dpgm.stages.length_bound import LengthBoundStage
from dpgm.stages.part_means import PartMeansStage
from dpgm.stages.partition import PartitionStage
from dpgm.stages.record_lengths import RecordLengthsStage
from dpgm.stages.release_pairs import ReleasePairsStage
from dpgm.stages.training import TrainingStage

for _stage in (ItemsStage, EmptyRecordsStage, DependenceStage, LengthBoundStage, ItemTotalsStage, PartitionStage,
               PartMeansStage, ItemPairsStage, ReleasePairsStage, RecordLengthsStage, TrainingStage):
    register_stage(_stage)

__all__ = ["STAGES", "Stage", "StageContext", "planned_stages", "register_stage", "released_payload",
           "unregister_stage"]
