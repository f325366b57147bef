"""Second parents over a declared table's attributes (``model.options.triple_noise_multiplier``): triples' tables.

A tree over the attributes (dpgm.stages.attribute_pairs) draws each attribute given one other. Here an attribute may
also be drawn given a second parent, a tree neighbour of its parent (its parent's parent, or a sibling of lower index
that ancestral order draws first), from a noisy table of the three: PrivBayes's degree-2 networks (Zhang et al.
2017) on the junction tree of the tree's edges, so that the two parents' joint is a tree edge already fitted and
the model's frequencies stay exact (dpgm.models.attribute_tree). Candidates are asked only where a triple's table over
the pair tables' groups holds one noise std of records per cell on average (``triple_slots``: public, from the noisy
part size). Privacy (docs/privacy.md, "A tree over a table's attributes"): each second parent is one exponential
mechanism round scored against the fitted tree's released prediction (sensitivity 1), and the chosen tables one
Gaussian release of sensitivity sqrt(T - 2); the conditionals are post-processing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpgm.data.chunks import summed
from dpgm.data.dataset import BinaryDataset
from dpgm.models.tree import TreeOptions
from dpgm.privacy import collective
from dpgm.privacy.mechanisms import exponential_mechanisms, gaussian_release
from dpgm.stages.attribute_pairs import INDEPENDENCE_WEIGHT, RAKING_SWEEPS, RAKING_TOLERANCE, record_values
from dpgm.stages.attributes import Schema
from dpgm.stages.base import StageContext


def second_candidates(parent: np.ndarray) -> list[list[int]]:
    """Per attribute, the attributes that may be its second parent: its parent's parent and its parent's other
    children of lower index (``AttributeTree.set_tree``'s rule: drawn before it, each a tree neighbour of its parent,
    so a triple's pair of parents is a tree edge whose joint the tree already holds)."""
    out: list[list[int]] = []
    for t, p in enumerate(parent.tolist()):
        if p < 0:
            out.append([])
            continue
        grand = [int(parent[p])] if parent[p] >= 0 else []
        out.append(grand + [int(w) for w in np.flatnonzero(parent == p) if w < t])
    return out


def triple_slots(parent: np.ndarray, counts: list[int], size: float, noise: float) -> list[tuple[int, list[int]]]:
    """(attribute, its second parents' candidates) for each attribute that has one whose table of the three over
    groups (``counts``: each attribute's groups) holds at least one cell noise std ``noise`` of records per cell on
    average (``size`` records; over more cells the table is noise), in attribute order; at most T - 2."""
    out = []
    for t, candidates in enumerate(second_candidates(parent)):
        p = int(parent[t])
        fit = [w for w in candidates if size / (counts[w] * counts[p] * counts[t]) >= noise]
        if fit:
            out.append((t, fit))
    return out


def triple_counts(records: Any, schema: Schema, groups: list[np.ndarray], parent: np.ndarray,
                  triples: list[tuple[int, int]]) -> np.ndarray:
    """The counts of every (second parent w, parent, attribute t) ``triples`` entry (t, w) over groups, each table
    [w's groups, t's parent's groups, t's groups] flattened, one after another (a sum over records)."""
    values = record_values(records, schema)
    g = np.stack([groups[a][values[:, a]] for a in range(values.shape[1])], axis=1) if values.size else values
    sizes = [int(q.max()) + 1 for q in groups]
    out = []
    for t, w in triples:
        p = int(parent[t])
        cell = (g[:, w] * sizes[p] + g[:, p]) * sizes[t] + g[:, t]
        out.append(np.bincount(cell, minlength=sizes[w] * sizes[p] * sizes[t]).astype(np.float64))
    return np.concatenate(out) if out else np.zeros(0)


def tree_pair_joint(parent: np.ndarray, probs: np.ndarray, marginals: list[np.ndarray], a: int, b: int) -> np.ndarray:
    """The fitted tree's joint frequency of attributes a and b over groups [a's, b's], one the other's parent."""
    if parent[b] == a:
        return marginals[a][:, None] * probs[b, :marginals[a].size, :marginals[b].size]
    return tree_pair_joint(parent, probs, marginals, b, a).T


def triple_prediction(parent: np.ndarray, probs: np.ndarray, marginals: list[np.ndarray], t: int,
                      w: int) -> np.ndarray:
    """The fitted tree's joint frequency of (w, t's parent p, t) over groups [w's, p's, t's]: P(w, p) P(t | p)."""
    p = int(parent[t])
    return tree_pair_joint(parent, probs, marginals, w, p)[:, :, None] * probs[t, None, :marginals[p].size,
                                                                                 :marginals[t].size]


def rake_triple(table: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The non-negative joint [w, p, t] nearest (iterative proportional fitting) a noisy ``table`` whose (w, p)
    margin is ``first`` and (p, t) margin ``second`` (a tree's two edges, agreeing on p)."""
    joint = np.maximum(table, 0.0) + INDEPENDENCE_WEIGHT * first[:, :, None] * (
        second / np.maximum(second.sum(axis=1, keepdims=True), 1e-300))[None]
    for _ in range(RAKING_SWEEPS):
        joint *= (second / np.maximum(joint.sum(axis=0), 1e-300))[None]
        joint *= (first / np.maximum(joint.sum(axis=2), 1e-300))[:, :, None]
        if np.abs(joint.sum(axis=0) - second).max() < RAKING_TOLERANCE:
            break
    return joint


def triple_conditional(table: np.ndarray, size: float, parent: np.ndarray, probs: np.ndarray,
                       marginals: list[np.ndarray], t: int, w: int) -> np.ndarray:
    """Attribute t's table given its parent p and second parent w, rows p-major ([p's groups x w's groups, t's
    groups], ``AttributeTree``'s order), from the triple's noisy counts [w, p, t] raked to the tree's (w, p) and
    (p, t) joints: post-processing; a pair of parents' values the tree never draws keeps P(t | p)."""
    p = int(parent[t])
    first, second = tree_pair_joint(parent, probs, marginals, w, p), tree_pair_joint(parent, probs, marginals, p, t)
    return given_both(rake_triple(table / size, first, second), first, probs[t, :marginals[p].size,
                                                                              :marginals[t].size])


def given_both(joint: np.ndarray, first: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """t's table given both parents from their joint with t [w, p, t] and their own [w, p], rows p-major ([p's
    groups x w's groups, t's groups], ``AttributeTree``'s order); a pair of parents' values of no mass keeps
    ``fallback``, P(t | p) [p's groups, t's groups]."""
    mass = first[:, :, None]
    given = np.where(mass > 0, joint / np.maximum(mass, 1e-300), fallback[None])
    return given.transpose(1, 0, 2).reshape(-1, joint.shape[2])


def triple_distances(table: np.ndarray, size: float, prediction: np.ndarray) -> float:
    """The L1 distance between a triple's table of counts and ``size`` x the tree's prediction of it (MST's score
    against the model so far; one record adds 1 to one cell: sensitivity 1)."""
    return float(np.abs(table - size * prediction).sum())


def second_parents(ctx: StageContext, rows_of: Callable[[BinaryDataset], list[Any]], sizes: np.ndarray,
                   schema: Schema, groups: list[list[np.ndarray]], fits: list[tuple[np.ndarray, np.ndarray]],
                   marginals: list[list[np.ndarray]], options: TreeOptions, stage: str) -> tuple[list[Any], list[Any]]:
    """Per part, each attribute's second parent [T] (-1: none) and its table given both (``triple_conditional``):
    one exponential mechanism round per attribute that has candidates (``triple_slots``; every part in one round),
    scored by the triple's distance to the fitted tree's prediction (released: sensitivity 1), then the chosen
    triples' tables over groups, one Gaussian release: a record falls in one cell of each of at most T - 2 tables of
    its part, so sensitivity sqrt(T - 2). ``rows_of``: each part's records in a chunk; ``marginals``: each part's
    over groups, as the tree was fitted; ``stage``: the ledger's name for both."""
    T = schema.complete.size
    sensitivity = float(np.sqrt(T - 2))
    counts = [[int(g.max()) + 1 for g in part] for part in groups]
    slots = [triple_slots(f[0], c, s, options.triple_noise_multiplier * sensitivity)
             for f, c, s in zip(fits, counts, sizes)]
    asked = [[(t, w) for t, ws in part for w in ws] for part in slots]

    def tables_of(chunk: BinaryDataset) -> np.ndarray:
        return np.concatenate([triple_counts(r, schema, g, f[0], a) for r, g, f, a in
                               zip(rows_of(chunk), groups, fits, asked)])

    local = summed(ctx.data, tables_of)  # this rank's: the release sums over ranks, the scores read every rank's
    flat = collective.sum_over_ranks(local)
    tables: list[dict[tuple[int, int], np.ndarray]] = []  # every rank's
    mine: list[dict[tuple[int, int], np.ndarray]] = []  # this rank's
    start = 0
    for c, f, a in zip(counts, fits, asked):
        tables.append({})
        mine.append({})
        for t, w in a:
            shape = (c[w], c[int(f[0][t])], c[t])
            tables[-1][(t, w)] = flat[start: start + int(np.prod(shape))].reshape(shape)
            mine[-1][(t, w)] = local[start: start + int(np.prod(shape))].reshape(shape)
            start += int(np.prod(shape))
    chosen: list[list[tuple[int, int]]] = [[] for _ in slots]
    for r in range(max(len(s) for s in slots)):
        scores = [np.array([triple_distances(tb[(part[r][0], w)], s, triple_prediction(f[0], f[1], q, part[r][0], w))
                            for w in part[r][1]]) if r < len(part) else np.zeros(1)
                  for part, tb, s, f, q in zip(slots, tables, sizes, fits, marginals)]
        picks = exponential_mechanisms(scores, epsilon=options.select_epsilon, sensitivity=1.0,
                                       accountant=ctx.accountant, stage=stage, rng=ctx.rng)
        for j, (part, pick) in enumerate(zip(slots, picks)):
            if r < len(part):
                chosen[j].append((part[r][0], part[r][1][pick]))
    seconds = [np.full(T, -1, dtype=np.int64) for _ in slots]
    triples: list[dict[int, np.ndarray]] = [{} for _ in slots]
    measured = [mine[j][key] for j, part in enumerate(chosen) for key in part]
    if not measured:
        return seconds, triples
    noisy = gaussian_release(np.concatenate([m.ravel() for m in measured]), sensitivity=sensitivity,
                             noise_multiplier=options.triple_noise_multiplier, accountant=ctx.accountant,
                             stage=stage, rng=ctx.rng)
    start = 0
    for j, part in enumerate(chosen):
        parent, probs = fits[j][:2]
        for t, w in part:
            shape = tables[j][(t, w)].shape
            table = noisy[start: start + int(np.prod(shape))].reshape(shape)
            start += int(np.prod(shape))
            seconds[j][t] = w
            triples[j][t] = triple_conditional(table, sizes[j], parent, probs, marginals[j], t, w)
    return seconds, triples
