"""The declared target as every attribute's second parent (``model.options.target_parent``): a tree-augmented class.

A tree over a table's attributes (dpgm.stages.attribute_pairs) draws each attribute given one other, so the column a
classifier is to predict depends on its tree neighbours only, and a model trained on the release learns little
else. Rooted at the schema's declared ``target`` (public), the tree draws each attribute whose parent is not the
target given its parent and the target (tree-augmented naive Bayes, Friedman, Geiger and Goldszmidt 1997), from
the noisy table of the three in place of its pair's: the pair's table is that table's margin over the target. A
triple is asked only where its table over groups holds one noise std of records per cell on average
(``target_slots``: public, from the noisy part size and the groups); elsewhere the pair's table, as without.
Privacy (docs/privacy.md, "A tree over a table's attributes"): a record falls in one cell of each of the T - 1
tables, pairs or triples, so they are one Gaussian release of sensitivity sqrt(T - 1) at the pairs' noise, the
charge of the pair tables they replace; the conditionals are post-processing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from dpgm.data.chunks import summed
from dpgm.data.dataset import BinaryDataset
from dpgm.models.tree import TreeOptions, order_of, orient
from dpgm.privacy.mechanisms import gaussian_release
from dpgm.stages.attribute_pairs import edge_cells, edge_tables, fit_attribute_tree
from dpgm.stages.attribute_triples import given_both, rake_triple, tree_pair_joint, triple_counts
from dpgm.stages.attributes import Schema
from dpgm.stages.base import StageContext

#: Standard deviations of a triple's chi-square under no link beyond the tree above which the target is a second
#: parent (``beyond_noise``: a one-sided test at about 2%).
DEPENDENCE_SIGMAS = 2.0


def rooted_parents(edges: list[tuple[int, int]], nodes: int, root: int) -> np.ndarray:
    """[nodes]: each attribute's parent in the tree of ``edges`` directed away from ``root`` (-1: a root)."""
    parent = np.full(nodes, -1, dtype=np.int64)
    for u, v in orient(edges, nodes, start=root):
        parent[v] = u
    return parent


def target_slots(parent: np.ndarray, counts: list[int], size: float, noise: float, target: int) -> list[int]:
    """The attributes drawn given the target too: those whose parent is not the target and whose table of the three
    over groups (``counts``: each attribute's groups) holds at least ``noise`` (a cell's noise std) records per cell
    on average (``size`` records; over more cells the table is noise), in attribute order."""
    return [t for t, p in enumerate(parent.tolist())
            if p >= 0 and p != target and size / (counts[target] * counts[p] * counts[t]) >= noise]


def target_conditionals(parent: np.ndarray, probs: np.ndarray, marginals: list[np.ndarray], target: int,
                        tables: dict[int, np.ndarray], size: float, noise: float) -> dict[int, np.ndarray]:
    """The attributes t of ``tables`` (their noisy counts [target, parent, t] over groups, each cell's noise std
    ``noise``) that depend on the target beyond their parent (``beyond_noise``), each drawn given its parent and the
    target ([p's groups x target's groups, t's groups], ``given_both``) from its table raked to the model's joint of
    the target with the parent and to the tree's (parent, t) joint, parents first; the model's joint of the target
    with every attribute is followed along (an exact frequency, ``AttributeTree.marginals``). Post-processing."""
    rooted = {target: np.diag(marginals[target])}  # t -> [target's groups, t's groups]
    out = {}
    for t in order_of(torch.as_tensor(parent)).tolist():
        p = int(parent[t])
        if p < 0:
            continue
        conditional = probs[t, :marginals[p].size, :marginals[t].size]
        prediction = rooted[p][:, :, None] * conditional[None]  # the target, the parent and t without their link
        if t in tables and beyond_noise(tables[t], size * prediction, noise):
            joint = rake_triple(tables[t] / size, rooted[p], tree_pair_joint(parent, probs, marginals, p, t))
            out[t] = given_both(joint, rooted[p], conditional)
            rooted[t] = joint.sum(axis=1)
        else:
            rooted[t] = prediction.sum(axis=1)
    return out


def beyond_noise(table: np.ndarray, prediction: np.ndarray, noise: float) -> bool:
    """Whether a noisy table of counts departs from the ``prediction`` of it by more than its noise (std ``noise``
    per cell) explains: its squared distance in noise stds above the cells' number by DEPENDENCE_SIGMAS standard
    deviations of that chi-square. Each weak link kept would add its noise to what the release says of the target
    (a classifier trained on it reads every attribute's); post-processing of released values."""
    cells = table.size
    return float((((table - prediction) / noise) ** 2).sum()) > cells + DEPENDENCE_SIGMAS * np.sqrt(2.0 * cells)


def target_trees(ctx: StageContext, rows_of: Callable[[BinaryDataset], list[Any]], sizes: np.ndarray,
                 schema: Schema, groups: list[list[np.ndarray]], counts: list[np.ndarray],
                 parts: list[tuple[list[np.ndarray], np.ndarray]], edges: list[list[tuple[int, int]]], span: int,
                 options: TreeOptions, stage: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray],
                                                            list[dict[int, np.ndarray]]]:
    """Per part, the tree of ``edges`` rooted at the target (``fit_attribute_tree``'s (parent, probs)), each
    attribute's second parent [T] (the target, or -1) and its table given both (``target_conditionals``): the pair
    tables (``counts``: this rank's counts over groups; ``parts``: (marginals, offsets) over groups) and the triples'
    (``rows_of``: each part's records in a chunk) in one Gaussian release of sensitivity sqrt(T - 1), or with
    ``triple_noise_multiplier`` every pair's table as without the target and the triples' beside them (module
    docstring); ``stage``: the ledger's name."""
    T, target = schema.complete.size, int(schema.target)
    beside = options.triple_noise_multiplier is not None
    noise = (options.triple_noise_multiplier * np.sqrt(max(T - 2, 1)) if beside
             else options.pair_noise_multiplier * np.sqrt(T - 1))
    parents = [rooted_parents(e, T, target) for e in edges]
    group_counts = [[int(g.max()) + 1 for g in part] for part in groups]
    slots = [target_slots(p, c, s, noise, target) for p, c, s in zip(parents, group_counts, sizes)]
    shapes = [[(c[target], c[int(p[t])], c[t]) for t in slot] for p, c, slot in zip(parents, group_counts, slots)]

    def triples_of(chunk: BinaryDataset) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [triple_counts(r, schema, g, p, [(t, target) for t in slot])
                                               for r, g, p, slot in zip(rows_of(chunk), groups, parents, slots)])

    triples = summed(ctx.data, triples_of)  # this rank's: the release sums over ranks
    pairs = [part if beside else [e for e in part if _child(e, p) not in slot]
             for part, p, slot in zip(edges, parents, slots)]
    pair_cells = [edge_tables(c, e, o, span)[edge_cells(e, o, span)] for c, e, (_, o) in zip(counts, pairs, parts)]
    lengths = [c.size for c in pair_cells] + [sum(int(np.prod(s)) for s in part) for part in shapes]
    release = {"rng": ctx.rng, "accountant": ctx.accountant, "stage": stage}
    if beside:  # the triples' release only where some part asks for one (public: the slots)
        noisy = np.concatenate([
            gaussian_release(np.concatenate(pair_cells), sensitivity=float(np.sqrt(T - 1)),
                             noise_multiplier=options.pair_noise_multiplier, **release),
            *([gaussian_release(triples, sensitivity=float(np.sqrt(T - 2)),
                                noise_multiplier=options.triple_noise_multiplier, **release)] if any(slots) else [])])
    else:
        noisy = gaussian_release(np.concatenate(pair_cells + [triples]), sensitivity=float(np.sqrt(T - 1)),
                                 noise_multiplier=options.pair_noise_multiplier, **release)
    pieces = np.split(noisy, np.cumsum(lengths)[:-1])
    fits, seconds, conditionals, k = [], [], [], len(parents)
    for j, (p, slot) in enumerate(zip(parents, slots)):
        q, o = parts[j]
        margins = [] if beside else slot  # the pairs whose table is the triple's margin over the target
        tables = np.zeros((len(pairs[j]) + len(margins), span, span))
        tables[:len(pairs[j])][edge_cells(pairs[j], o, span)] = pieces[j]
        cubes = {t: c.reshape(s) for t, s, c in zip(slot, shapes[j], np.split(
            pieces[k + j], np.cumsum([int(np.prod(s)) for s in shapes[j]])[:-1]))}
        for e, t in enumerate(margins):
            margin = cubes[t].sum(axis=0)
            tables[len(pairs[j]) + e, :margin.shape[0], :margin.shape[1]] = margin
        parent, probs = fit_attribute_tree(pairs[j] + [(int(p[t]), t) for t in margins], tables, sizes[j], q, span,
                                           root=target)
        kept = target_conditionals(parent, probs, q, target, cubes, sizes[j], noise)
        second = np.full(T, -1, dtype=np.int64)
        second[list(kept)] = target
        fits.append((parent, probs))
        seconds.append(second)
        conditionals.append(kept)
    return fits, seconds, conditionals


def _child(edge: tuple[int, int], parent: np.ndarray) -> int:
    """The end of ``edge`` whose parent is the other."""
    return edge[1] if parent[edge[1]] == edge[0] else edge[0]
