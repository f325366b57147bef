"""Noisy attribute pairs of a declared table (``model.options.by_attribute``): a tree over its attributes.

The table's counterpart of dpgm.stages.item_pairs' tree of items, as MST builds it on the table itself
(McKenna, Miklau, Sheldon 2021). Each attribute is one variable, its values the modelled items of the
attribute and ``none`` (value 0); a record takes the first of its items of each attribute
(``value_counts``), so it holds exactly one value of each whatever the data hold. As MST compresses its
domains, the values whose noisy frequency is below RARE_SIGMAS times a pair table cell's noise share one
group per attribute (``value_groups``: post-processing of the noisy means): a table of 3,000 records over
700 diagnoses is noise in every row of a rare one. Per part: T - 1 rounds of an exponential mechanism
grow a spanning tree over the T attributes (``attribute_distances``: MST's L1 score against independence
at the noisy means, on the groups, less ``noise_penalties``, the L1 noise the pair's released table would
carry, as AIM scores a marginal: a wide pair far from independence by sampling noise alone loses to a
narrow pair that truly depends), then the chosen pairs' tables of counts between groups are released
with Gaussian noise; each attribute's groups take the frequencies its noisy means and its edges' noisy
tables give together (``pooled_marginals``), its group given its parent's follows from the tables raked to
them, a value within its group in proportion to its noisy mean (``fit_attribute_tree``, ``tree_arrays``:
post-processing; the model keeps the tables over groups, not over values).

Privacy (add/remove one record): a record falls in exactly one cell of each pair's table, so it moves
every score by at most 1 (each round: one epsilon exponential mechanism, parts disjoint) and the T - 1
released tables by sqrt(T - 1) in L2 norm (one Gaussian mechanism of that sensitivity). T is the
declared schema's, whatever items are modelled: the plan does not depend on the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.models.attribute_tree import record_values as attribute_values
from dpgm.models.tree import orient
from dpgm.stages.attributes import Schema, simplex_projection

#: Sweeps at most of iterative proportional fitting that make a noisy pair table agree with both noisy marginals,
#: until the columns' margins are within RAKING_TOLERANCE (the rows' hold exactly after each sweep).
RAKING_SWEEPS, RAKING_TOLERANCE = 2_000, 1e-10
#: Weight of independence mixed into a noisy pair table before raking (every cell stays reachable).
INDEPENDENCE_WEIGHT = 1e-6
#: A value whose noisy count is below this many standard deviations of a pair table cell's noise shares one group
#: with the attribute's other such values in the pair tables (MST's domain compression at 3; 0: no groups).
RARE_SIGMAS = 3.0
#: Weight of a pair's expected L1 noise in its selection score (``noise_penalties``; AIM's quality score: 1, MST's: 0).
NOISE_PENALTY = 1.0
#: An attribute's group of rare values (none reaches RARE_SIGMAS) holding at least HEAVY_SHARE of its frequency shares
#: it equally among them, as MST decompresses a group, unless a likelihood-ratio test at SPREAD_LEVEL finds them spread
#: beyond their noise (``spread_beyond_noise``), then in proportion to their noisy means, as a lighter group always does
#: (SPREAD_LEVEL 1: always so; 0: always equally). A column of near-equal values (a census table's areas) is then not
#: drawn from its noise alone, one whose common values the noise hides (ages in bins) keeps them, and a light tail
#: of values the data may never hold gets no share of a heavier group's mass (HEAVY_SHARE 1: only a group of every
#: value).
SPREAD_LEVEL, HEAVY_SHARE = 0.05, 0.5
#: Weight of an edge's table margin against its inverse noise variance in an attribute's frequencies
#: (``pooled_marginals``; 1: the GLS estimate, 0: the noisy means alone).
MARGIN_WEIGHT = 1.0


def value_offsets(schema: Schema) -> np.ndarray:
    """[T + 1]: attribute t's values (none first, then its items) are columns offsets[t] .. offsets[t + 1] - 1
    of ``value_counts``."""
    sizes = np.bincount(schema.of, minlength=schema.complete.size) + 1
    return np.concatenate([[0], np.cumsum(sizes)])


def record_values(records: Any, schema: Schema) -> np.ndarray:
    """[n, T]: each record's value of every attribute (``attribute_tree.record_values``: the first of its items
    of the attribute, or none)."""
    return attribute_values(records, schema.of, schema.complete.size)


def value_counts(records: Any, schema: Schema, groups: list[np.ndarray] | None = None,
                 size: int | None = None) -> np.ndarray:
    """[D, D] (D = items + attributes): the counts of every pair of values over ``records`` (a sum over
    records; the block of attributes a, b is their table, a diagonal block the attribute's marginal). With
    ``groups`` (each attribute's ``value_groups``), of every pair of groups instead ([G, G], zero-padded to
    ``size``): the values' counts summed within groups, never held value by value."""
    columns = np.arange(value_offsets(schema)[-1]) if groups is None else group_columns(groups)
    values = columns[record_values(records, schema) + value_offsets(schema)[:-1]]
    d = int(columns.max()) + 1 if size is None else size
    rows = np.repeat(np.arange(values.shape[0]), values.shape[1])
    onehot = sp.csr_matrix((np.ones(values.size), (rows, values.ravel())), shape=(values.shape[0], d))
    return np.asarray((onehot.T @ onehot).todense(), dtype=np.float64)


def attribute_marginals(means: np.ndarray, schema: Schema) -> list[np.ndarray]:
    """Per attribute, its values' frequencies [none, items...] from one part's (projected) item means,
    none = 1 - their sum (at least 0), normalised to one."""
    out = []
    for t in range(schema.complete.size):
        values = means[schema.of == t]
        q = np.concatenate([[max(0.0, 1.0 - values.sum())], values])
        out.append(q / q.sum())
    return out


def value_groups(marginal: np.ndarray, threshold: float) -> np.ndarray:
    """Each value's group: the values of frequency at least ``threshold`` one each in value order, the others one
    group after them (all in one where none reaches it). Post-processing of the noisy frequencies."""
    common = np.asarray(marginal) >= threshold
    groups = np.cumsum(common) - 1
    groups[~common] = common.sum()
    return groups


def rare_groups(marginals: list[np.ndarray], noise: float) -> list[np.ndarray]:
    """Per attribute, its values' groups (``value_groups``) at RARE_SIGMAS times ``noise``, a pair table cell's
    noise std as a frequency."""
    return [value_groups(q, RARE_SIGMAS * noise) for q in marginals]


def group_columns(groups: list[np.ndarray]) -> np.ndarray:
    """[D]: each of the attributes' values (``value_offsets`` order) as its attribute's group's index, the groups
    running attribute by attribute as the values do."""
    starts = np.cumsum([0] + [int(g.max()) + 1 for g in groups[:-1]])
    return np.concatenate([g + s for g, s in zip(groups, starts)])


def merged_marginals(marginals: list[np.ndarray], groups: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """(marginals, offsets [T + 1]) of the groups from the values' (``attribute_marginals``): the offsets of each
    attribute's groups in ``value_counts`` over groups."""
    merged = [np.bincount(g, weights=q) for g, q in zip(groups, marginals)]
    return merged, np.concatenate([[0], np.cumsum([q.size for q in merged])])


def spread_beyond_noise(values: np.ndarray, noise: float, floor: float) -> bool:
    """Whether noisy frequencies of noise std ``noise`` spread beyond it: a likelihood-ratio test at SPREAD_LEVEL of
    their values drawn around one mean with a normal spread tau against tau = 0, those at ``floor`` (a noisy mean
    clipped there) censored below 0 (a Tobit fit). Post-processing."""
    from scipy.optimize import minimize
    from scipy.stats import chi2, norm

    if SPREAD_LEVEL >= 1.0 or noise <= 0:  # every spread counts, or no noise hides one
        return True
    seen = values > 2.0 * floor
    if seen.sum() < 2:  # nothing to fit a spread to
        return False
    x, hidden = values[seen], int((~seen).sum())

    def loss(mu: float, tau: float) -> float:
        spread = np.sqrt(noise**2 + tau**2)
        return -(norm.logpdf(x, mu, spread).sum() + hidden * norm.logcdf(0.0, mu, spread))

    start, where = (x.mean() if hidden == 0 else 0.0), (-10.0 * noise - 1.0, 1.0)
    spread = minimize(lambda t: loss(t[0], t[1]), np.array([start, max(float(x.std()), noise)]), method="L-BFGS-B",
                      bounds=[where, (0.0, 1.0)])
    equal = minimize(lambda t: loss(t[0], 0.0), np.array([start]), method="L-BFGS-B", bounds=[where])
    return bool(2.0 * (equal.fun - spread.fun) >= chi2.ppf(1.0 - SPREAD_LEVEL, 1))


def within_shares(marginal: np.ndarray, groups: np.ndarray, known: np.ndarray, noise: float = 0.0,
                  floor: float = 0.0) -> np.ndarray:
    """Each value's share of its group's frequency: in proportion to its noisy frequency, or, in a group of rare values
    (``value_groups``: the last) that holds HEAVY_SHARE of the attribute's frequency and does not spread beyond its
    noise (SPREAD_LEVEL), equal among its values not ``known`` (``noise``: a value's noise std, as a frequency;
    ``floor``: where a noisy mean was clipped). Post-processing."""
    q = np.asarray(marginal, dtype=np.float64)
    free = ~np.asarray(known, dtype=bool)
    rare = free & (groups == groups.max())
    heavy = rare.sum() > 1 and q[rare].sum() >= HEAVY_SHARE * q[free].sum()
    if heavy and not spread_beyond_noise(q[rare], noise, floor):
        q = q.copy()
        q[rare] = q[rare].sum() / rare.sum()
    return q / np.maximum(np.bincount(groups, weights=q)[groups], 1e-300)


def tree_arrays(parent: np.ndarray, probs: np.ndarray, marginals: list[np.ndarray], groups: list[np.ndarray],
                width: int, second: np.ndarray | None = None,
                triples: dict[int, np.ndarray] | None = None, known: list[np.ndarray] | None = None,
                noise: float = 0.0, floor: float = 0.0) -> dict[str, np.ndarray]:
    """The tree as dpgm.models.attribute_tree keeps it (``AttributeTree.set_tree``): each value's group and its share
    of its group's noisy frequency [T, width], and each attribute's table of its group given its parent's (``probs``
    over groups: a row per group of the parent's, one for a root), or given both parents' where ``second`` names a
    second one (``triples[t]``: ``triple_conditional``), one after another. Post-processing."""
    T = len(marginals)
    second = np.full(T, -1, dtype=np.int64) if second is None else np.asarray(second, dtype=np.int64)
    group_of, within, shapes = np.zeros((T, width), dtype=np.int64), np.zeros((T, width)), np.zeros((T, 2), np.int64)
    tables = []
    for t, (q, g) in enumerate(zip(marginals, groups)):
        group_of[t, :g.size] = g
        within[t, :q.size] = within_shares(q, g, np.zeros(q.size, dtype=bool) if known is None else known[t],
                                           noise, floor)
        if second[t] >= 0:
            table = (triples or {})[t]
        else:
            table = probs[t, :(int(groups[parent[t]].max()) + 1 if parent[t] >= 0 else 1), :int(g.max()) + 1]
        shapes[t] = table.shape
        tables.append(table.ravel())
    return {"groups": group_of, "within": within, "tables": np.concatenate(tables), "shapes": shapes,
            "second": second}


def attribute_distances(counts: np.ndarray, size: float, marginals: list[np.ndarray],
                        offsets: np.ndarray) -> np.ndarray:
    """Per pair a < b of attributes (``np.triu_indices`` order), the L1 distance between its table of counts
    and ``size`` x the table of independent attributes at ``marginals`` (MST's score). One record adds 1 to
    one cell of every table: sensitivity 1."""
    a, b = np.triu_indices(len(marginals), 1)
    return np.array([np.abs(counts[offsets[i]:offsets[i + 1], offsets[j]:offsets[j + 1]]
                            - size * np.outer(marginals[i], marginals[j])).sum() for i, j in zip(a, b)])


def noise_penalties(offsets: np.ndarray, cell_noise: float) -> np.ndarray:
    """Per pair a < b of attributes (``np.triu_indices`` order), NOISE_PENALTY x the expected L1 norm of the Gaussian
    noise its released table of counts would carry, sqrt(2 / pi) x ``cell_noise`` (a cell's noise std, in records) x
    its cells (AIM's quality score, McKenna et al. 2022, section 4: a pair is worth its table where its distance
    from independence exceeds that noise). Public: the plan's noise and the groups (post-processing of noisy means)."""
    sizes = np.diff(offsets)
    a, b = np.triu_indices(sizes.size, 1)
    return NOISE_PENALTY * np.sqrt(2.0 / np.pi) * cell_noise * (sizes[a] * sizes[b]).astype(np.float64)


def edge_tables(counts: np.ndarray, edges: list[tuple[int, int]], offsets: np.ndarray, width: int) -> np.ndarray:
    """[len(edges), width, width]: each edge's table of counts, zero-padded (padding never moves)."""
    out = np.zeros((len(edges), width, width))
    for e, (a, b) in enumerate(edges):
        table = counts[offsets[a]:offsets[a + 1], offsets[b]:offsets[b + 1]]
        out[e, :table.shape[0], :table.shape[1]] = table
    return out


def edge_cells(edges: list[tuple[int, int]], offsets: np.ndarray, width: int) -> np.ndarray:
    """[len(edges), width, width]: where each edge's table (``edge_tables``) has a cell, not padding: the cells
    released (a record falls in one of them per edge; the padding holds nothing to release)."""
    out = np.zeros((len(edges), width, width), dtype=bool)
    sizes = np.diff(offsets)
    for e, (a, b) in enumerate(edges):
        out[e, :sizes[a], :sizes[b]] = True
    return out


def rake(table: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The non-negative joint frequencies nearest (iterative proportional fitting) a noisy ``table`` whose
    margins are ``rows`` and ``columns`` (each summing to one)."""
    joint = np.maximum(table, 0.0) + INDEPENDENCE_WEIGHT * np.outer(rows, columns)
    for _ in range(RAKING_SWEEPS):
        joint *= (columns / np.maximum(joint.sum(axis=0), 1e-300))[None, :]
        joint *= (rows / np.maximum(joint.sum(axis=1), 1e-300))[:, None]
        if np.abs(joint.sum(axis=0) - columns).max() < RAKING_TOLERANCE:
            break
    return joint


def pooled_marginals(edges: list[tuple[int, int]], tables: np.ndarray, size: float, marginals: list[np.ndarray],
                     values: list[np.ndarray], known: list[np.ndarray], *, mean_noise: float,
                     cell_noise: float) -> list[np.ndarray]:
    """Per attribute, its groups' frequencies as the inverse-variance mean of two kinds of noisy estimate: its noisy
    means summed within each group (``marginals``; variance ``values`` x ``mean_noise``^2, ``values`` the number of
    values a group holds) and each of its edges' noisy table summed over the other attribute's G groups (G x
    ``cell_noise``^2); then projected onto the frequencies that add up to what the ``known`` groups (public
    frequencies: kept as the means give them) leave (``simplex_projection``, as the means were: a group whose
    estimate is noise about 0 stays at 0). The pair tables hold every attribute's marginal again at noise
    independent of the means' (MST's estimation fits them together, McKenna et al. 2021; here the GLS of Hay et al.
    2010, one attribute at a time). Noise stds are in records; post-processing."""
    precision = [1.0 / (np.maximum(v, 1) * mean_noise**2) for v in values]
    weighted = [p * size * q for p, q in zip(precision, marginals)]
    for (a, b), counts in zip(edges, tables):
        rows, columns = marginals[a].size, marginals[b].size
        table = counts[:rows, :columns]
        weighted[a] = weighted[a] + MARGIN_WEIGHT * table.sum(axis=1) / (columns * cell_noise**2)
        precision[a] = precision[a] + MARGIN_WEIGHT / (columns * cell_noise**2)
        weighted[b] = weighted[b] + MARGIN_WEIGHT * table.sum(axis=0) / (rows * cell_noise**2)
        precision[b] = precision[b] + MARGIN_WEIGHT / (rows * cell_noise**2)
    out = []
    for w, p, q, k in zip(weighted, precision, marginals, known):
        pooled = q.copy()
        if not k.all():
            pooled[~k] = simplex_projection(w[~k] / p[~k] / size, 1.0 - q[k].sum())
        out.append(pooled)
    return out


def known_values(schema: Schema, fixed: np.ndarray | None = None) -> list[np.ndarray]:
    """Per attribute, which of its values [none, items...] have a public frequency: none where the schema says the
    attribute always holds a value (frequency 0), and every value of an attribute with a ``fixed`` item
    (``Partition.fixed``: the parts' definition sets it)."""
    sizes = np.bincount(schema.of, minlength=schema.complete.size) + 1
    pinned = np.zeros(sizes.size, dtype=bool) if fixed is None else np.isin(np.arange(sizes.size), schema.of[fixed])
    return [np.full(n, True) if pin else (np.arange(n) == 0) & complete
            for n, pin, complete in zip(sizes, pinned, schema.complete)]


def known_groups(groups: list[np.ndarray], known: list[np.ndarray]) -> list[np.ndarray]:
    """Per attribute, which of its groups have a public frequency (``pooled_marginals`` keeps the means'): those
    whose every value is ``known`` (``known_values``)."""
    return [np.bincount(g, weights=~k) == 0 for g, k in zip(groups, known)]


def fit_attribute_tree(edges: list[tuple[int, int]], tables: np.ndarray, size: float,
                       marginals: list[np.ndarray], width: int, root: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(parent [T], probs [T, width, width]) of one part from its attributes' noisy marginals and its edges'
    noisy tables of counts (``edge_tables`` order): the forest directed away from ``root`` and each other
    component's lowest attribute, each child's values given its parent's from the raked table, so every attribute
    keeps its marginal exactly."""
    T = len(marginals)
    parent = np.full(T, -1, dtype=np.int64)
    probs = np.zeros((T, width, width))
    for t, q in enumerate(marginals):
        probs[t, :, :q.size] = q
    table = {}
    for (a, b), counts in zip(edges, tables):
        joint = counts[:marginals[a].size, :marginals[b].size] / size
        table[(a, b)], table[(b, a)] = joint, joint.T
    for u, v in orient(edges, T, start=root):
        parent[v] = u
        joint = rake(table[(u, v)], marginals[u], marginals[v])
        rows = joint.sum(axis=1, keepdims=True)  # a value its parent never takes: the marginal
        probs[v, :joint.shape[0], :joint.shape[1]] = np.where(rows > 0, joint / np.maximum(rows, 1e-300), marginals[v])
    return parent, probs


def fit_pooled_tree(edges: list[tuple[int, int]], tables: np.ndarray, size: float, marginals: list[np.ndarray],
                    groups: list[np.ndarray], known: list[np.ndarray], width: int, *, mean_noise: float,
                    cell_noise: float) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``fit_attribute_tree`` at the groups' ``pooled_marginals`` (``known``: ``known_values``), and those marginals:
    (parent, probs, pooled)."""
    pooled = pooled_marginals(edges, tables, size, marginals, [np.bincount(g) for g in groups],
                              known_groups(groups, known), mean_noise=mean_noise, cell_noise=cell_noise)
    return (*fit_attribute_tree(edges, tables, size, pooled, width), pooled)
