"""How strongly the items depend on each other, measured once (``partition.dependence_noise_multiplier``),
and the one group the records form where that is below ``partition.merge_below``.

Groups pay where the items depend on each other: a partition then separates records that hold
different item combinations, and each part's model learns its own. Where the items are nearly
independent, k groups only split the records, and every part's statistics carry its own noise.
This stage releases one number that tells the two apart: the heaviest spanning tree of the pairs'
L1 distances from independence (MST's score: McKenna, Miklau, Sheldon 2021), per record and per
edge.

Privacy (add/remove one record, docs/privacy.md): a pair's distance is 4 |c_ij - c_i c_j / n|
(all four cells of its 2 x 2 table are off by the same amount). Adding a record x moves
c_ij - c_i c_j / n by n (x_i - p_i)(x_j - p_j) / (n + 1), less than 1 in absolute value, so every
pair's distance moves by less than 4 and a spanning tree's total (m - 1 edges; the heaviest tree
is a maximum over trees) by less than 4 (m - 1). The tree's total and the record count, scaled by
the same 4 (m - 1), are one Gaussian release of L2 sensitivity 4 (m - 1) sqrt(2).

Below ``merge_below`` the records form one group (``merges``): the partition releases only their
noisy count, at the partitioner's multiplier, and the part means take what the partitioner's other
releases would have cost (``mean_noise``). Every one of these releases is Gaussian, whose zCDP costs
add up, so both ways the ledger costs the same (to floating-point rounding, as any sum the accountant
makes), DP-SGD is calibrated to the same noise, and epsilon does not depend on the measurement.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

from dpgm.clustering.noisy_lloyd import lloyd_releases
from dpgm.config import Config
from dpgm.data import Records, summed
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages.base import Stage, StageContext
from dpgm.stages.model_choice import tree_chosen, tree_precision, untrained_choice

#: Ledger stage of this release.
STAGE = "dependence"
#: Added to every distance so that a pair at exact independence is still an edge of the graph.
TINY = 1e-12


def plain_counts(records: Any) -> np.ndarray:
    """[m + 1, m + 1] sum over records of [x, 1] [x, 1]^T: pair counts, item counts and the count."""
    x = sp.hstack([sp.csr_matrix(records, dtype=np.float64), np.ones((records.shape[0], 1))], format="csr")
    return np.asarray((x.T @ x).todense(), dtype=np.float64)


def independence_distances(plain: np.ndarray) -> np.ndarray:
    """[m, m] each pair's L1 distance between its 2 x 2 table of counts and independence at the
    items' own frequencies (upper triangle), from ``plain_counts`` (size last)."""
    n = max(float(plain[-1, -1]), 1.0)
    items = np.diag(plain)[:-1]
    distance = 4.0 * np.abs(plain[:-1, :-1] - np.outer(items, items) / n)
    return np.triu(distance + TINY, k=1)


def heaviest_tree(weights: np.ndarray) -> float:
    """Total weight of a maximum spanning tree of positive upper-triangular ``weights``."""
    return float(-minimum_spanning_tree(-weights).sum())


def tree_sensitivity(n_items: int) -> float:
    """Bound on how much one record moves the heaviest tree's total (module docstring)."""
    return 4.0 * max(1, n_items - 1)


def noisy_dependence(data: Records, *, noise_multiplier: float, accountant: Accountant,
                     rng: np.random.Generator) -> float:
    """The items' dependence per record and edge: the heaviest tree's total over the record count, both from one
    Gaussian release charged to ``accountant`` (module docstring)."""
    local = summed(data, lambda chunk: plain_counts(chunk.records))  # this rank's records
    plain = collective.sum_over_ranks(local)
    edges = max(1, plain.shape[0] - 2)
    scale = tree_sensitivity(plain.shape[0] - 1)
    # a release is of the sum of every rank's value: the tree of all ranks' counts enters once, from rank 0
    tree = heaviest_tree(independence_distances(plain)) if collective.rank() == 0 else 0.0
    noisy = gaussian_release(np.array([tree, scale * local[-1, -1]]), sensitivity=scale * math.sqrt(2.0),
                             noise_multiplier=noise_multiplier, accountant=accountant, stage=STAGE, rng=rng)
    return float(noisy[0] / (max(noisy[1] / scale, 1.0) * edges))


class DependenceStage(Stage):
    """Release the items' dependence, per record and per edge; output: a float (module docstring)."""

    name = STAGE
    streams = True
    line = ("measure how strongly the items depend on each other (the heaviest tree of pairs' distances from "
            "independence, one noisy release)")
    switch = "partition.dependence_noise_multiplier"

    def run(self, ctx: StageContext) -> float:
        return noisy_dependence(ctx.data, noise_multiplier=self.cfg.partition.dependence_noise_multiplier,
                                accountant=ctx.accountant, rng=ctx.rng)

    def report(self) -> dict[str, Any]:
        """The measurement and what it decided: the parts merge below merge_below, a tree is chosen from tree_above."""
        cfg, measured = self.cfg, self.output
        return {"dependence": {"per_record_and_edge": measured, "merge_below": cfg.partition.merge_below,
                               "parts_merged": merges(cfg, measured), "tree_above": cfg.model.tree_above,
                               "tree_chosen": tree_chosen(cfg, measured), "otherwise": cfg.model.kind}}


def merges(cfg: Config, measured: float | None) -> bool:
    """Whether the records form one group: the released dependence (None: not measured) is below
    ``partition.merge_below`` (0: never, even for a noisy measurement below 0)."""
    return measured is not None and cfg.partition.merge_below > 0 and measured < cfg.partition.merge_below


def parts(cfg: Config, ctx: StageContext) -> int:
    """The number of parts the partition forms: one where ``merges``, else ``partition.k``."""
    return 1 if merges(cfg, ctx.output(STAGE)) else cfg.partition.k


def mean_noise(cfg: Config, ctx: StageContext) -> float:
    """The part means' multiplier: ``model.mean_noise_multiplier``, or one that also spends what other releases
    would have cost (the zCDP costs 1 / (2 sigma^2) add up; module docstring): where ``merges``, the partitioner's
    releases but the count, lloyd_releases(T) - 1 at ``partition.noise_multiplier``; where independent items are
    chosen instead of a tree (dpgm.stages.model_choice), the tree's (``tree_precision``)."""
    sigma, measured = cfg.model.mean_noise_multiplier, ctx.output(STAGE)
    moved = 0.0
    if merges(cfg, measured):
        moved += (lloyd_releases(cfg.partition.iterations) - 1) / cfg.partition.noise_multiplier ** 2
    if untrained_choice(cfg) and not tree_chosen(cfg, measured):
        moved += tree_precision(cfg, ctx.data.n_items)
    return sigma if moved == 0 else 1.0 / math.sqrt(1.0 / sigma ** 2 + moved)
