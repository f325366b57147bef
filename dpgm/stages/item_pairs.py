"""Noisy item pairs along a tree (``model.kind: tree``): each part's model is a Chow-Liu forest.

MST's recipe (McKenna, Miklau, Sheldon 2021) for binary items, on top of the part means: per
part, a spanning tree is grown one edge at a time (Kruskal), each edge chosen by an exponential
mechanism among the pairs that join two components, scored as MST scores it: the L1 distance
between the pair's 2 x 2 table of counts and the table that independence at the noisy means and
size predicts (``table_distances``); then the co-occurrence counts of the chosen edges are released
with Gaussian noise, and each item's frequency given its parent follows from them and the noisy
means (``tree_fit.fit_tree``: post-processing; the tree's item frequencies are the noisy means exactly).

Privacy (add/remove one record, docs/privacy.md): a record falls in exactly one cell of each pair's
2 x 2 table, so it moves every score by at most 1: each round is one epsilon exponential mechanism
(the parts are disjoint: parallel composition). In the released counts a record enters with the
weight s <= 1 that scales it to L2 norm <= the bound B of the part means
(``length_bound.mean_bound``) and holds at most
|x| - 1 edges of a forest, each with weight s, so it moves them by at most
s sqrt(|x| - 1) < B in L2 norm: one Gaussian mechanism of sensitivity B. The number of rounds,
n_items - 1, does not depend on the data. Every mechanism is charged before it draws.

Every pair (``model.options.all_pairs``): no selections; the counts of all m (m - 1) / 2 pairs are released
at once, each record scaled by s <= 1 so that its own pair counts, sqrt(|x| (|x| - 1) / 2) of them at 1,
have L2 norm at most B_p = sqrt(L (L - 1) / 2), L = B^2 (at least 2) the means' length bound
(``pair_bound``): one Gaussian mechanism of sensitivity B_p over every part (disjoint parts). Each part's
tree is then the heaviest spanning tree under MST's score at the noisy counts (post-processing), and the
release's tilt follows every pair (dpgm.models.tilt, ``Tree.edge_joints``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.clustering.base import Partition
from dpgm.config import Config
from dpgm.data.chunks import Records, summed
from dpgm.data.dataset import BinaryDataset
from dpgm.models.tilt import tilt_targets
from dpgm.models.tree import TreeOptions
from dpgm.privacy import collective
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.clipping import clip_rows, clip_target
from dpgm.privacy.mechanisms import exponential_mechanisms, floor_counts, gaussian_release
from dpgm.stages.attribute_pairs import (
    attribute_distances,
    attribute_marginals,
    edge_cells,
    edge_tables,
    fit_pooled_tree,
    group_columns,
    known_values,
    merged_marginals,
    noise_penalties,
    rare_groups,
    tree_arrays,
    value_counts,
    value_offsets,
)
from dpgm.stages.attribute_target import target_trees
from dpgm.stages.attribute_triples import second_parents
from dpgm.stages.attributes import Schema, project_values, schema_of
from dpgm.stages.base import DictStage, StageContext
from dpgm.stages.dependence import mean_noise, plain_counts
from dpgm.stages.length_bound import mean_bound
from dpgm.stages.model_choice import STAGE as CHOICE
from dpgm.stages.model_choice import TREE, chosen_model, tree_options, untrained_choice
from dpgm.stages.part_means import FLOOR, table_parts
from dpgm.stages.training import choice_entry, release_min_items
from dpgm.stages.tree_fit import fit_tree

#: Ledger stage of the selections and the pair counts.
STAGE = "item_pairs"


def weighted_pair_counts(records: Any, bound: float) -> np.ndarray:
    """[m, m] sum over records of s x x^T, s <= 1 the scale that clips a record to L2 norm ``bound``."""
    scaled = clip_rows(records, bound, dtype=np.float64)
    counts = scaled.T @ records
    return np.asarray(counts.todense() if hasattr(counts, "todense") else counts, dtype=np.float64)


def pair_bound(bound: float) -> float:
    """The L2 bound of a record's counts of every pair: those of a record at the means' length bound
    L = ``bound``^2 (at least 2 items), sqrt(L (L - 1) / 2)."""
    length = max(float(bound) ** 2, 2.0)
    return math.sqrt(length * (length - 1.0) / 2.0)


def all_pair_counts(records: Any, bound: float) -> np.ndarray:
    """[m, m] sum over records of s x x^T, s <= 1 the scale that brings a record's pair counts (its
    |x| (|x| - 1) / 2 pairs) to L2 norm ``bound`` (``pair_bound``); only the pairs a != b are bounded."""
    x = sp.csr_matrix(records, dtype=np.float64)
    held = np.diff(x.indptr).astype(np.float64)
    norms = np.sqrt(held * (held - 1.0) / 2.0)
    target = clip_target(bound)
    scale = np.where(norms > target, target / np.maximum(norms, 1e-300), 1.0)
    return np.asarray(((sp.diags(scale) @ x).T @ x).todense(), dtype=np.float64)


@dataclass(frozen=True)
class PairCounts:
    """Per part, the weighted pair counts the release measures and the plain counts the selections
    score: a sum over records (chunks and ranks add)."""

    weighted: np.ndarray  # [k, m, m]: sum of s x x^T (``weighted_pair_counts``)
    plain: np.ndarray  # [k, m + 1, m + 1]: sum of [x, 1] [x, 1]^T (pairs, items, and the size last)

    def __add__(self, other: PairCounts) -> PairCounts:
        return PairCounts(self.weighted + other.weighted, self.plain + other.plain)

    def over_ranks(self) -> PairCounts:
        return PairCounts(collective.sum_over_ranks(self.weighted), collective.sum_over_ranks(self.plain))


def part_rows(chunk: BinaryDataset, partition: Partition) -> list[Any]:
    """Each part's records in ``chunk``."""
    parts = np.asarray(partition.parts_of(chunk))
    return [chunk.records[parts == j] for j in range(partition.k)]


def part_pair_counts(chunk: BinaryDataset, partition: Partition, bound: float) -> PairCounts:
    """``PairCounts`` of each part's records in ``chunk``."""
    rows = part_rows(chunk, partition)
    return PairCounts(np.stack([weighted_pair_counts(r, bound) for r in rows]),
                      np.stack([plain_counts(r) for r in rows]))


def part_value_counts(chunk: BinaryDataset, partition: Partition, schema: Schema,
                      groups: list[list[np.ndarray]]) -> np.ndarray:
    """[k, G, G]: each part's ``attribute_pairs.value_counts`` of its records in ``chunk`` over its ``groups`` (G: the
    most groups of a part; zero past a part's own)."""
    size = max(int(group_columns(g).max()) + 1 for g in groups)
    return np.stack([value_counts(r, schema, g, size) for r, g in zip(part_rows(chunk, partition), groups)])


def table_distances(plain: np.ndarray, size: float, means: np.ndarray) -> np.ndarray:
    """Per pair a < b (``np.triu_indices`` order), the L1 distance between its 2 x 2 table of counts
    (from ``plain_counts``) and ``size`` x the table of independent items at ``means`` (MST's score).
    One record adds 1 to one cell of every table: sensitivity 1."""
    m = means.size
    a, b = np.triu_indices(m, 1)
    n, ca, cb, cab = plain[m, m], plain[a, a], plain[b, b], plain[a, b]
    table = np.stack([cab, ca - cab, cb - cab, n - ca - cb + cab])
    pa, pb = means[a], means[b]
    expected = size * np.stack([pa * pb, pa * (1 - pb), (1 - pa) * pb, (1 - pa) * (1 - pb)])
    return np.abs(table - expected).sum(axis=0)


def grow_trees(plain: Sequence[np.ndarray], sizes: np.ndarray, means: np.ndarray, *, epsilon: float,
               accountant: Accountant, rng: np.random.Generator, stage: str = STAGE) -> list[list[tuple[int, int]]]:
    """Per part, the n_items - 1 edges of a spanning tree over its items (``spanning_trees``, scored by
    ``table_distances``); ``plain``: each part's ``plain_counts``; ``stage``: the ledger's name for the selections."""
    scores = [table_distances(plain[j], sizes[j], means[j]) for j in range(means.shape[0])]
    return spanning_trees(scores, means.shape[1], epsilon=epsilon, accountant=accountant, rng=rng, stage=stage)


def spanning_trees(scores: Sequence[np.ndarray], nodes: int, *, epsilon: float, accountant: Accountant,
                   rng: np.random.Generator, stage: str = STAGE) -> list[list[tuple[int, int]]]:
    """Per part, the ``nodes`` - 1 edges of a spanning tree (Kruskal), each picked by an ``epsilon`` exponential
    mechanism among the pairs joining two components; ``scores``: each part's score of every pair a < b
    (``np.triu_indices`` order), of sensitivity 1. One round charges one event (the parts are disjoint)."""
    a, b = np.triu_indices(nodes, 1)
    components = [np.arange(nodes) for _ in scores]
    edges: list[list[tuple[int, int]]] = [[] for _ in scores]
    for _ in range(nodes - 1):
        open_pairs = [np.flatnonzero(comp[a] != comp[b]) for comp in components]
        picks = exponential_mechanisms([u[o] for u, o in zip(scores, open_pairs)], epsilon=epsilon, sensitivity=1.0,
                                       accountant=accountant, stage=stage, rng=rng)  # one round, every part
        for j, (pick, open_j) in enumerate(zip(picks, open_pairs)):
            pair = open_j[pick]
            edges[j].append((int(a[pair]), int(b[pair])))
            comp = components[j]
            comp[comp == comp[b[pair]]] = comp[a[pair]]
    return edges


def heaviest_tree(scores: np.ndarray, nodes: int) -> list[tuple[int, int]]:
    """The ``nodes`` - 1 edges of a maximum spanning tree (Kruskal) under ``scores`` of every pair a < b
    (``np.triu_indices`` order): the selection of ``spanning_trees`` without noise, for released scores."""
    a, b = np.triu_indices(nodes, 1)
    component, edges = np.arange(nodes), []
    for pair in np.argsort(-np.asarray(scores), kind="stable"):
        u, v = component[a[pair]], component[b[pair]]
        if u != v:
            edges.append((int(a[pair]), int(b[pair])))
            component[component == v] = u
            if len(edges) == nodes - 1:
                break
    return edges


def noisy_joints(noisy: np.ndarray, size: float, means: np.ndarray) -> np.ndarray:
    """Every pair's joint frequency (``np.triu_indices`` order) from its noisy count over the noisy ``size``,
    projected onto what the two means allow (``tilt.tilt_targets``)."""
    a, b = np.triu_indices(means.size, 1)
    return tilt_targets(means, np.asarray(noisy, dtype=np.float64) / size, np.stack([a, b], axis=1))[means.size:]


def joint_distances(joints: np.ndarray, size: float, means: np.ndarray) -> np.ndarray:
    """MST's score of every pair (``table_distances``) at the joint frequencies ``joints`` and the means."""
    m = means.size
    a, b = np.triu_indices(m, 1)
    plain = np.zeros((m + 1, m + 1))
    plain[a, b], plain[np.arange(m), np.arange(m)], plain[m, m] = joints * size, means * size, size
    return table_distances(plain, size, means)


class ItemPairsStage(DictStage):
    """Each part's tree; output: {"parent": [k, m] ints, "logits": [k, m, 2]} (see ``fit_tree``)."""

    name = STAGE
    streams = True
    line = "grow a tree of items per group, each edge chosen privately, and measure its noisy pair counts"

    @classmethod
    def enabled(cls, cfg: Config) -> bool:
        return cfg.model.kind == "tree" or cfg.model.tree_above > 0

    def run(self, ctx: StageContext) -> dict[str, np.ndarray] | None:
        model = chosen_model(self.cfg, ctx.output("dependence"))
        if model.kind != "tree":  # the configured model is trained (dpgm.stages.model_choice)
            return None
        if self.cfg.model.kind != "tree" and not untrained_choice(self.cfg):  # chosen instead of DP-SGD: the choice
            ctx.accountant.spend(CHOICE, choice_entry(self.cfg, ctx.accountant, ctx.data.n_items, TREE))
        options = tree_options(model)
        partition, means = ctx.output("partition"), ctx.output("part_means")
        schema = schema_of(self.cfg, ctx.output("items"))
        by_attribute = options.by_attribute and schema is not None  # the config requires the schema with it
        # a table's items add up to its attributes only while every item is kept (top_items may drop some values)
        whole = (self.cfg.data.attributes if self.cfg.data.top_items is None
                 and not by_attribute else None)
        sizes, means = table_parts(floor_counts(partition.noisy_sizes), means, whole)
        if schema is not None:  # each attribute's values add up to one
            means = np.clip(project_values(means, schema, FLOOR), FLOOR, 1.0 - FLOOR)
        if by_attribute:
            return attribute_trees(ctx, partition, sizes, means, schema, options,
                                   mean_std=mean_noise(self.cfg, ctx) * mean_bound(self.cfg, ctx))
        bound = mean_bound(self.cfg, ctx)
        if ctx.data.n_items < 2:  # one item: no pair, nothing to release
            logits = np.log(means) - np.log1p(-means)
            return {"parent": np.full(means.shape, -1), "logits": np.repeat(logits[..., None], 2, axis=-1)}
        if options.all_pairs:
            return every_pair_trees(ctx, partition, sizes, means, options, pair_bound(bound),
                                    nonempty=release_min_items(self.cfg) == 1)
        counts = summed(ctx.data, lambda chunk: part_pair_counts(chunk, partition, bound))  # this rank's
        edges = grow_trees(counts.over_ranks().plain, sizes, means, epsilon=options.select_epsilon,
                           accountant=ctx.accountant, rng=ctx.rng)  # the scores need every rank's counts
        chosen = np.array([[c[u, v] for u, v in part] for c, part in zip(counts.weighted, edges)], dtype=np.float64)
        noisy = gaussian_release(chosen, sensitivity=bound, noise_multiplier=options.pair_noise_multiplier,
                                 accountant=ctx.accountant, stage=STAGE, rng=ctx.rng)
        nonempty = release_min_items(self.cfg) == 1
        fits = [fit_tree(part, y, s, p, nonempty=nonempty, count_noise=options.pair_noise_multiplier * bound)
                for part, y, s, p in zip(edges, noisy.reshape(len(edges), -1), sizes, means)]
        return {"parent": np.stack([f[0] for f in fits]), "logits": np.stack([f[1] for f in fits])}


def attribute_trees(ctx: StageContext, partition: Partition, sizes: np.ndarray, means: np.ndarray, schema: Schema,
                    options: TreeOptions, *, mean_std: float) -> dict[str, np.ndarray]:
    """Each part's tree over the declared attributes (dpgm.stages.attribute_pairs), its pair tables over groups of
    values (``rare_groups``: the rare ones merged, from the noisy means), fitted by ``fit_pooled_tree`` (``mean_std``:
    a mean's noise std in records);
    output: {"attribute": [k, m], "parent": [k, T], "groups", "within": [k, T, S + 1], "tables": [k, L], "shapes":
    [k, T, 2]} (``tree_arrays``, each part's tables zero-padded to the longest; dpgm.models.attribute_tree)."""
    offsets, T = value_offsets(schema), schema.complete.size
    width = int(np.diff(offsets).max())
    sensitivity = float(np.sqrt(max(T - 1, 0)))
    marginals = [attribute_marginals(p, schema) for p in means]
    cell = options.pair_noise_multiplier * sensitivity / np.maximum(sizes, 1.0)  # a cell's noise, as a frequency
    groups = [rare_groups(q, c) for q, c in zip(marginals, cell)]
    known = known_values(schema, None if partition.fixed is None else partition.fixed[0])
    counts = summed(ctx.data, lambda chunk: part_value_counts(chunk, partition, schema, groups))  # this rank's
    parts = [merged_marginals(q, g) for q, g in zip(marginals, groups)]
    penalty = options.pair_noise_multiplier * sensitivity  # a cell's noise std, in records
    scores = [attribute_distances(c, s, q, o) - noise_penalties(o, penalty)
              for c, s, (q, o) in zip(collective.sum_over_ranks(counts), sizes, parts)]
    edges = spanning_trees(scores, T, epsilon=options.select_epsilon, accountant=ctx.accountant, rng=ctx.rng)
    span = max(int(np.diff(o).max()) for _, o in parts)
    seconds, triples = [None] * partition.k, [None] * partition.k
    if options.target_parent:
        fits, seconds, triples = target_trees(ctx, lambda chunk: part_rows(chunk, partition), sizes, schema, groups,
                                              counts, parts, edges, span, options, STAGE)
    else:
        tables = np.stack([edge_tables(c, e, o, span) for c, (_, o), e in zip(counts, parts, edges)])
        cells, noisy = np.stack([edge_cells(e, o, span) for (_, o), e in zip(parts, edges)]), tables.copy()
        if T > 1:  # the tables' own cells, not their padding to the widest
            noisy[cells] = gaussian_release(tables[cells], sensitivity=sensitivity, rng=ctx.rng, stage=STAGE,
                                            noise_multiplier=options.pair_noise_multiplier, accountant=ctx.accountant)
        fits = [fit_pooled_tree(e, y, s, q, g, known, span, mean_noise=mean_std, cell_noise=penalty)
                for e, y, s, (q, _), g in zip(edges, noisy, sizes, parts, groups)]
    if options.triple_noise_multiplier is not None and T > 2 and not options.target_parent:
        seconds, triples = second_parents(ctx, lambda chunk: part_rows(chunk, partition), sizes, schema, groups, fits,
                                          [f[2] for f in fits], options, STAGE)  # the tree's own marginals
    trees = [tree_arrays(f[0], f[1], q, g, width, s2, tr, known, noise=mean_std / max(s, 1.0), floor=FLOOR)
             for f, q, g, s2, tr, s in zip(fits, marginals, groups, seconds, triples, sizes)]
    length = max(tree["tables"].size for tree in trees)
    for tree in trees:
        tree["tables"] = np.pad(tree["tables"], (0, length - tree["tables"].size))
    return {"attribute": np.repeat(schema.of[None], partition.k, axis=0), "parent": np.stack([f[0] for f in fits]),
            **{name: np.stack([tree[name] for tree in trees]) for name in trees[0]}}


def every_pair_trees(ctx: StageContext, partition: Partition, sizes: np.ndarray, means: np.ndarray,
                     options: TreeOptions, bound: float, *, nonempty: bool) -> dict[str, np.ndarray]:
    """Each part's tree from the noisy counts of every pair (module docstring; ``bound``: ``pair_bound``); output
    as ``ItemPairsStage``'s, with {"pairs": [k, P, 2], "pair_joints": [k, P], "pair_noise": [k, P]}: every pair's
    noisy joint frequency and its noise (``pair_noise``)."""
    m = means.shape[1]
    a, b = np.triu_indices(m, 1)
    noisy = noisy_every_pair(ctx.data, partition, bound, noise_multiplier=options.pair_noise_multiplier,
                             accountant=ctx.accountant, rng=ctx.rng)
    joints = np.stack([noisy_joints(y, s, p) for y, s, p in zip(noisy, sizes, means)])
    index = {pair: i for i, pair in enumerate(zip(a.tolist(), b.tolist()))}
    count_noise, fits = options.pair_noise_multiplier * bound, []  # a pair count's noise std, in records
    for y, s, p in zip(joints, sizes, means):
        edges = heaviest_tree(joint_distances(y, s, p), m)
        fits.append(fit_tree(edges, s * y[[index[e] for e in edges]], s, p, nonempty=nonempty,
                             count_noise=count_noise))
    return {"parent": np.stack([f[0] for f in fits]), "logits": np.stack([f[1] for f in fits]),
            "pairs": np.repeat(np.stack([a, b], axis=1)[None], partition.k, axis=0), "pair_joints": joints,
            "pair_noise": np.repeat(pair_noise(count_noise, sizes)[:, None], a.size, axis=1)}


def noisy_every_pair(data: Records, partition: Partition, bound: float, *, noise_multiplier: float,
                     accountant: Accountant, rng: np.random.Generator) -> np.ndarray:
    """[k, m (m - 1) / 2]: each part's counts of every pair a < b (``all_pair_counts``, row-major), one charged
    Gaussian release of L2 sensitivity ``bound``."""
    a, b = np.triu_indices(data.n_items, 1)
    counts = summed(data, lambda chunk: np.stack([all_pair_counts(r, bound) for r in part_rows(chunk, partition)]))
    return gaussian_release(counts[:, a, b], sensitivity=bound, noise_multiplier=noise_multiplier,
                            accountant=accountant, stage=STAGE, rng=rng)


def pair_noise(count_noise: float, sizes: np.ndarray) -> np.ndarray:
    """Per part, the noise variance of a measured pair's count per record of the part, sigma_c^2 / size (public: the
    noise std of the counts and the noisy sizes): how far the release's tilt may leave each measured pair
    (dpgm.models.tilt, ``length_problem``)."""
    return count_noise**2 / np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
