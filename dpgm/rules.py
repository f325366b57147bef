"""Defaults from public quantities: the rules behind ``rules: public`` (configs/transactions.yaml).

A config with ``rules: public`` states what its user knows (the data, the budget) and leaves
every other option to the rules below. They read only public quantities and released ones: the number
of items, epsilon, delta and n as a NOISY COUNT of the records (COUNT_SHARE of rho, on the ledger
before the plan; ``dpgm plan --records`` takes it as given). n's order of magnitude N serves the
default delta only. An option the config states is never changed.

The budget is split in zCDP terms (Bun and Steinke 2016): rho is the largest value whose curve
a * rho the accountant converts to at most epsilon at delta. Each fixed-noise stage gets a share
of rho (a Gaussian release with multiplier sigma costs 1 / (2 sigma^2)); DP-SGD gets what is left,
calibrated by the accountant on the exact ledger (``privacy.target_epsilon``), so the plan can
neither overshoot nor leave budget unused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpgm.config import STATISTICS_ONLY, Config
from dpgm.privacy.calibrate import sigma_for_share, zcdp_rho

#: Share of rho on the noisy count of the records the rules read as n (sensitivity 1): N * epsilon's noise is then
#: about 7.4 / sqrt(2 COUNT_SHARE) at delta 1e-6 whatever epsilon, where a power of ten put 9,999 records at 1,000.
COUNT_SHARE = 0.01
#: Shares of rho for the fixed-noise stages (DP-SGD takes the rest, at least 0.19). Every share and
#: threshold below was chosen by leave-one-dataset-out (benchmarks/rules_lodo.py; the results page).
ITEMS_SHARE, PARTITION_SHARE, SINGLE_PART_SHARE, MEANS_SHARE = 0.05, 0.15, 0.02, 0.58
#: Share of the noisy record-length histogram the release follows (0: none; never for a declared table), from the
#: means' share, from N * epsilon = LENGTHS_SCALE up (below, the histogram's noise outweighs what it corrects).
LENGTHS_SHARE, LENGTHS_SCALE = 0.05, 2_000
#: Whether that histogram is the length bound's, which then takes both shares (one release, the clip's and the
#: release's).
LENGTHS_FROM_BOUND = True
#: Share of the noisy count of empty records, which then form a part of their own
#: (``partition.empty_part_noise_multiplier``; 0: off), from N * epsilon = EMPTY_SCALE up (0: at every scale; the
#: count's noise std is 340 records at epsilon 0.1). Not used when data.min_items >= 1 (none is empty).
EMPTY_SHARE, EMPTY_SCALE = 0.01, 0
#: The release draws no empty record where the length bound's noisy histogram holds no record of one item and its cut
#: would have let through a length holding this share of the records (dense records: chess's all hold 37 items, and
#: the empty count's noise alone drew up to a third of them empty; 0: never; dpgm.stages.empty_records).
EMPTY_SEEN_SHARE = 0.15
#: Where the length bound's histogram, read where some length passes its cut, holds no record in its first two bins
#: past length 0 (dense records: no short record beside long ones; ``length_bound.reads_dense``), the release reads
#: an empty-record count below this many of the count's noise stds as none (0: never): at a thousand records the
#: count's noise alone drew 7% of chess's records empty in one seed of four.
EMPTY_DENSE_CUT = 1.0
#: Share of the noisy length histogram whose LENGTH_QUANTILE-quantile L bounds the records in the
#: means (clip sqrt(L), ``model.mean_clip_quantile``; 0: off, the clip is MEAN_CLIP_ITEMS items). A
#: fixed clip fits one kind of data: nine items shrink every record of a table written as
#: attribute=value items (each record holds one item per attribute) and bias all its means.
LENGTH_BOUND_SHARE, LENGTH_QUANTILE = 0.02, 0.9
#: The weight of the means' noise against the clip's bias in the length that raises L when longer
#: (``model.mean_clip_balance``; None: off): with little noise, a clip at the quantile costs more than it saves.
LENGTH_BALANCE: float | None = 16.0
#: Share of the items' measured dependence (dpgm.stages.dependence), from the means' share, where the rules
#: form k > 1 groups and MERGE_BELOW is set: below MERGE_BELOW (per record and edge) the records form one group,
#: whose means take the partition's budget (the same epsilon either way). 0: never measured.
DEPENDENCE_SHARE, MERGE_BELOW = 0.02, 0.025
#: Statistics over every pair of items (trees, the pairs over all records, the dependence) only over at most this many
#: items (after data.top_items): each builds dense (m + 1)^2 counts, gigabytes over thousands; above it DP-SGD trains.
PAIRS_MAX_ITEMS = 1_000
#: Records per part wanted at epsilon 1 (more budget, smaller parts): k = N eps / this, in 1..MAX_PARTS.
RECORDS_PER_PART, MAX_PARTS = 5_000, 20
#: The same for a declared table's tree over its attributes (``by_attribute``): its groups' tables of value pairs are
#: over tens of values each, and fewer, larger groups measure them better than many small ones.
TABLE_RECORDS_PER_PART = 10_000
#: Below this N * epsilon the records form one group whatever RECORDS_PER_PART gives (0: never): two or
#: three groups halve each group's records and the partition takes its share of rho for little structure.
PARTITION_SCALE = 20_000
#: The same where each group's model would be a tree counting every pair (``every_pair``): one tree fitted to every
#: pair's count over all records, with a release that follows them all, is what groups would split, each group's
#: counts then as noisy over fewer records (at most PARTITION_SCALE: as elsewhere).
PAIRS_PARTITION_SCALE = 50_000
#: Share of rho on every value's noisy count over all records of a declared table where it forms k > 1 groups
#: (``model.totals_noise_multiplier``, from the means' share; 0: none): the groups' means, each noisy over its own
#: records, then agree with it (dpgm.stages.item_totals), where their sum alone adds k groups' noise to each value.
TABLE_TOTALS_SHARE = 0.25
LLOYD_ITERATIONS = 10
#: The partitioner of k > 1 parts, by its rule in PARTITIONER_RULES (lloyd, kernel_kmeans, lsh_tree).
PARTITIONER = "lloyd"
#: The same for a declared table's tree over its attributes (``partitioner_of``): its records, one value of each
#: attribute, are grouped by DP kernel k-means on random Fourier features, whose groups its trees fit better than DP
#: Lloyd's on the raw values.
TABLE_PARTITIONER = "kernel_kmeans"
#: lsh_tree: hash bits and the share of its rho on the tree's counts.
LSH_MAX_DEPTH, LSH_COUNT_SHARE = 20, 0.2
#: A record's L2 norm is clipped to that of this many items in the noisy part means (without the length bound).
MEAN_CLIP_ITEMS = 9
#: Below this N * epsilon DP-SGD is skipped: each part's model is its noisy mean record (independent
#: items) and the means get DP-SGD's share too. From it up, where pairs fit (PAIRS_MAX_ITEMS) and no record needs
#: more than one item, each part's model is a tree of items (dpgm.stages.item_pairs) in DP-SGD's place, with its
#: budget; a tree's edge selections and its pair counts split its share TREE_SELECT_SHARE : TREE_PAIRS_SHARE.
MIN_TRAINING_SCALE = 3_000
TREE_SELECT_SHARE, TREE_PAIRS_SHARE = 0.1, 0.3
#: Below this N * epsilon a declared table (``data.attributes``: one item per attribute in every record)
#: gets a tree of items per part: its strongest pairs (values of the same attribute exclude each other,
#: attributes depend on each other) are what independent items and DP-SGD at this scale lose (0: never).
TABLE_TREE_SCALE = 10_000
#: From N * epsilon per pair (of m (m - 1) / 2) = this up, where the release follows lengths, a tree of items counts
#: every pair instead of selecting edges (``model.options.all_pairs``; inf: never): one tree misses what items share.
ALL_PAIRS_SCALE = 1.0
#: Whether a declared schema (``data.attribute_sizes``) puts a table's tree over its attributes (``by_attribute``).
TABLE_BY_ATTRIBUTE = True
#: Whether a tree leaves the empty records to a part of their own (its empty draws dropped, ``tree_fit.fit_tree``)
#: or not.
TREE_EMPTY_PART = True
#: Shares of the one tree of item pairs over all records that the release follows (dpgm.stages.release_pairs): its
#: selections and pair counts (0: off), from the means' share, from N eps = PAIRS_SCALE up, for a model not a tree.
PAIRS_SELECT_SHARE, PAIRS_COUNTS_SHARE, PAIRS_SCALE = 0.1, 0.2, 30_000
#: The clip of the pair counts (``model.pairs_clip``): the means' (``means``), or ``balanced`` for this one
#: release (the counts then carry the item totals too).
PAIRS_CLIP = "balanced"
#: The items' weight against the pairs' in that balanced release (``model.pairs_item_weight``).
PAIRS_ITEM_WEIGHT = 1.0
MARGIN = 0.01  # budget left unspent when nothing is calibrated to the exact ledger (a margin for rounding)
#: DP-SGD: about this many records of each part per step, for this many steps.
PART_BATCH, STEPS, MAX_SAMPLING_RATE = 256, 200, 0.1
CLIP_NORM = 30.0  # DP-SGD's fixed clip of each record's gradient (L2 norm)
#: The ``model.options`` of a kind DP-SGD trains: a VAE's hidden widths and latent dimension (conv_vae: its latent).
TRAINED_OPTIONS = {"vae": {"hidden": [128], "latent": 8}, "conv_vae": {"latent": 8}}


@dataclass(frozen=True)
class PublicFacts:
    """What the rules may read: all public (declared or listed in the privacy report)."""

    n_items: int
    records_magnitude: int  # N: a power of ten with N <= n < 10 N (the default delta's)
    epsilon: float
    delta: float
    min_items: int = 0  # data.min_items, declared
    attributes: int | None = None  # data.attributes, declared: a table, one item per attribute in every record
    schema: bool = False  # data.attribute_sizes declared: which item is a value of which attribute
    lengths: bool = True  # False where the config turns the release's length histogram off (``lengths_open``)
    records: float | None = None  # the noisy count of the records (released); None: N stands for n

    @property
    def size(self) -> float:
        """n as the rules read it: the noisy count (at least 1), else the magnitude N."""
        return self.records_magnitude if self.records is None else max(1.0, self.records)

    @property
    def scale(self) -> float:
        """N * epsilon, the scale most rules read (N: ``size``)."""
        return self.size * self.epsilon


def _lloyd(rho: float) -> dict[str, Any]:
    """DP Lloyd from a random partition: 2 T + 1 Gaussian releases costing ``rho``."""
    return {"partition.method": "lloyd", "partition.iterations": LLOYD_ITERATIONS, "partition.init": "random",
            "partition.noise_multiplier": sigma_for_share(rho, 1.0, 2 * LLOYD_ITERATIONS + 1)}


def _kernel_kmeans(rho: float) -> dict[str, Any]:
    """DP kernel k-means (random Fourier features, the config's gamma), as DP Lloyd costing ``rho``."""
    return {**_lloyd(rho), "partition.method": "kernel_kmeans"}


def _lsh_tree(rho: float) -> dict[str, Any]:
    """An LSH-tree coreset costing ``rho``: its leaf sums take 1 - LSH_COUNT_SHARE of it, one release."""
    return {"partition.method": "lsh_tree", "partition.noise_multiplier": sigma_for_share(rho, 1.0 - LSH_COUNT_SHARE),
            "partition.options": {"max_depth": LSH_MAX_DEPTH, "count_share": LSH_COUNT_SHARE}}


#: The partitioner of k > 1 parts (``PARTITIONER``), each given the partition's share of rho.
PARTITIONER_RULES = {"lloyd": _lloyd, "kernel_kmeans": _kernel_kmeans, "lsh_tree": _lsh_tree}


def parts(facts: PublicFacts, items: int | None = None, kind: str | None = None) -> int:
    """k: one part per ``records_per_part`` records at epsilon 1 (n = 3,000 gets 1 part), at most MAX_PARTS; one below
    N * epsilon = ``partition_scale`` (``items``: the items modelled, default all; ``kind``: the model family the
    config states, default ``family``)."""
    scale = facts.scale
    one = scale < partition_scale(facts, items, kind)
    return 1 if one else max(1, min(MAX_PARTS, int(scale // records_per_part(facts))))


def partition_scale(facts: PublicFacts, items: int | None = None, kind: str | None = None) -> int:
    """The N * epsilon below which the records form one group: PAIRS_PARTITION_SCALE where each group's model is a
    tree counting every pair of the ``items`` (``every_pair``), else PARTITION_SCALE."""
    items = facts.n_items if items is None else items
    pairs = (kind or family(facts, items)) == "tree" and every_pair(facts, items)
    return max(PARTITION_SCALE, PAIRS_PARTITION_SCALE) if pairs else PARTITION_SCALE


def partitioner_of(facts: PublicFacts) -> str:
    """The partitioner of k > 1 parts: TABLE_PARTITIONER for a tree over a declared table's attributes
    (``by_attribute``), else PARTITIONER."""
    return TABLE_PARTITIONER if by_attribute(facts) else PARTITIONER


def records_per_part(facts: PublicFacts) -> int:
    """Records per part at epsilon 1: TABLE_RECORDS_PER_PART for a tree over a declared table's attributes
    (``by_attribute``), else RECORDS_PER_PART."""
    return TABLE_RECORDS_PER_PART if by_attribute(facts) else RECORDS_PER_PART


def tree_scale(facts: PublicFacts) -> int:
    """The N * epsilon below which the rules pick a tree of items at every scale: TABLE_TREE_SCALE for a declared
    table, else 0 (below MIN_TRAINING_SCALE other data get independent items)."""
    return 0 if facts.attributes is None else TABLE_TREE_SCALE


def family(facts: PublicFacts, items: int | None = None) -> str:
    """The model family from N * epsilon: ``tree`` below ``tree_scale``, ``independent`` below
    MIN_TRAINING_SCALE, ``tree`` where DP-SGD would train (``tree_for_training``), else ``vae`` (DP-SGD);
    ``items``: the items modelled (default: all)."""
    scale = facts.scale
    if scale < tree_scale(facts) or tree_for_training(facts, items):
        return "tree"
    return "independent" if scale < MIN_TRAINING_SCALE else "vae"


def pairs_fit(facts: PublicFacts, items: int | None = None) -> bool:
    """Whether statistics over every pair of the ``items`` modelled (default: all) fit: at most PAIRS_MAX_ITEMS."""
    return (facts.n_items if items is None else items) <= PAIRS_MAX_ITEMS


def tree_for_training(facts: PublicFacts, items: int | None = None) -> bool:
    """Whether a tree takes DP-SGD's place (and budget) where DP-SGD would train: over at most PAIRS_MAX_ITEMS
    ``items`` (default: all), or over a declared table's attributes (``by_attribute``: its pair tables are over
    attributes and groups of values, whatever the items), and with at most one item per record required (a tree
    keeps at most one)."""
    scale = facts.scale
    trains = max(MIN_TRAINING_SCALE, tree_scale(facts)) <= scale  # below, a tree or independent items already
    return trains and (pairs_fit(facts, items) or by_attribute(facts)) and facts.min_items <= 1


def by_attribute(facts: PublicFacts) -> bool:
    """Whether a tree is over a declared table's attributes: TABLE_BY_ATTRIBUTE and a schema that says which item is
    whose."""
    return bool(TABLE_BY_ATTRIBUTE and facts.schema and facts.attributes is not None)


def select_epsilon(rho: float, share: float, n_items: int) -> float:
    """Epsilon of each of a tree's n_items - 1 edge selections that together cost ``share`` of rho (an
    epsilon exponential mechanism costs epsilon^2 / 8 in zCDP)."""
    return math.sqrt(8.0 * share * rho / max(1, n_items - 1))


def tree_options(rho: float, n_items: int, share: float = TREE_SELECT_SHARE + TREE_PAIRS_SHARE,
                 all_pairs: bool = False) -> dict[str, Any]:
    """The tree's ``model.options`` costing ``share`` of rho: its selections take TREE_SELECT_SHARE of every
    TREE_SELECT_SHARE + TREE_PAIRS_SHARE, the pair counts the rest; with ``all_pairs`` the counts of every pair
    take it all."""
    if all_pairs:
        return {"all_pairs": True, "pair_noise_multiplier": sigma_for_share(rho, share)}
    select = share * TREE_SELECT_SHARE / (TREE_SELECT_SHARE + TREE_PAIRS_SHARE)
    return {"select_epsilon": select_epsilon(rho, select, n_items), "pair_noise_multiplier": sigma_for_share(
        rho, share - select)}


def every_pair(facts: PublicFacts, items: int) -> bool:
    """Whether a tree of items releases every pair's count: the release follows lengths and N * epsilon per pair
    of ``items`` (over m (m - 1) / 2 pairs) is at least ALL_PAIRS_SCALE."""
    pairs = max(items * (items - 1) / 2, 1.0)
    return follows_lengths(facts) and facts.scale / pairs >= ALL_PAIRS_SCALE


#: The partitioners whose budget one group's means can take (``partition.merge_below``).
MERGEABLE = ("lloyd", "kernel_kmeans")


def measures_dependence(facts: PublicFacts, k: int, partitioner: str | None = None, items: int | None = None) -> bool:
    """Whether the items' dependence is measured to merge the k groups: k > 1, MERGE_BELOW set, a partitioner in
    MERGEABLE (default: PARTITIONER), not a table (its items depend on each other by construction: one value of
    each attribute), at most PAIRS_MAX_ITEMS ``items`` (default: all)."""
    return (k > 1 and MERGE_BELOW > 0 and DEPENDENCE_SHARE > 0 and facts.attributes is None
            and (partitioner or PARTITIONER) in MERGEABLE and pairs_fit(facts, items))


def parts_open(stated: frozenset[str]) -> bool:
    """Whether the rules may choose the parts (and merge them): the config states neither their number nor method."""
    return not {"partition.k", "partition.method"} & stated


def lengths_open(cfg: Config, stated: frozenset[str]) -> bool:
    """Whether the rules may have the release follow a length histogram: the config does not state
    ``model.length_noise_multiplier: null`` without ``model.lengths_from_bound`` (the release's lengths off)."""
    return not ("model.length_noise_multiplier" in stated and cfg.model.length_noise_multiplier is None
                and not cfg.model.lengths_from_bound)


def measures_pairs(facts: PublicFacts, kind: str, items: int) -> bool:
    """Whether the release follows one tree of item pairs measured over all records: from N * epsilon =
    PAIRS_SCALE up, when its shares are set, there are pairs (at most PAIRS_MAX_ITEMS items), each part's model
    is not a tree already, and the release follows no length histogram (LENGTHS_SHARE: it follows one or the
    other)."""
    shares = PAIRS_SELECT_SHARE + PAIRS_COUNTS_SHARE > 0 and not follows_lengths(facts)
    scale = facts.scale
    return shares and items > 1 and pairs_fit(facts, items) and kind != "tree" and scale >= PAIRS_SCALE


def follows_lengths(facts: PublicFacts) -> bool:
    """Whether the release follows a noisy record-length histogram: LENGTHS_SHARE set, N * epsilon at least
    LENGTHS_SCALE, no declared table (whose records all hold one item per attribute), and not turned off by the
    config (``facts.lengths``)."""
    scale = facts.scale
    return LENGTHS_SHARE > 0 and facts.lengths and facts.attributes is None and scale >= LENGTHS_SCALE


def public_defaults(facts: PublicFacts, *, top_items: int | None, kind: str | None = None,
                    partitioner: str | None = None, pairs: bool = True, merge: bool = True,
                    bound: bool = True, bound_lengths: bool = True) -> dict[str, Any]:
    """Every rule's value as dotted config keys (the module docstring gives the reasons); ``kind``: the model family
    the config states (default: ``family``); ``partitioner``: the partitioner it states, when PARTITIONER_RULES has a
    rule for it (default: PARTITIONER); ``pairs``: False when a stated option rules out a release that follows global
    pairs (``measures_pairs``); ``merge``: False when the config states the parts (no measured merge,
    ``measures_dependence``); ``bound``: False when it turns the length bound off (the means' clip is then
    MEAN_CLIP_ITEMS items); ``bound_lengths``: False when it states a length histogram of the release's own."""
    rho = zcdp_rho(facts.epsilon, facts.delta)
    items = facts.n_items if top_items is None else min(top_items, facts.n_items)
    kind = kind or family(facts, items)
    k = parts(facts, items, kind)
    partition_share = PARTITION_SHARE if k > 1 else SINGLE_PART_SHARE
    items_share = ITEMS_SHARE if items < facts.n_items else 0.0
    table = facts.attributes is not None  # no record is empty; its length is declared, not measured
    lengths_share = LENGTHS_SHARE if follows_lengths(facts) else 0.0  # its first bin holds the empty records
    empty_part = (facts.min_items == 0 and not table and (kind != "tree" or TREE_EMPTY_PART) and lengths_share == 0
                  and facts.scale >= EMPTY_SCALE)
    empty_share = EMPTY_SHARE if empty_part else 0.0
    tree_share = TREE_SELECT_SHARE + TREE_PAIRS_SHARE if kind == "tree" else 0.0
    bound_share = LENGTH_BOUND_SHARE if bound and not table else 0.0
    shared = LENGTHS_FROM_BOUND and bound_lengths and lengths_share > 0 and bound_share > 0  # one for clip and release
    pairs_share = PAIRS_SELECT_SHARE + PAIRS_COUNTS_SHARE if pairs and measures_pairs(facts, kind, items) else 0.0
    totals_share = TABLE_TOTALS_SHARE if table and k > 1 else 0.0
    merged = merge and measures_dependence(facts, k, partitioner, items)
    dependence_share = DEPENDENCE_SHARE if merged else 0.0
    fixed = (COUNT_SHARE + items_share + partition_share + lengths_share + empty_share + bound_share + pairs_share
             + dependence_share + totals_share)
    # a kind without DP-SGD leaves the means its share too, but a tree in DP-SGD's place takes DP-SGD's; the
    # length histogram's share comes from the means'
    trained = MEANS_SHARE - lengths_share
    if kind == "tree" and tree_for_training(facts, items):
        tree_share = 1.0 - fixed - trained + pairs_share + totals_share - MARGIN  # the pairs' and totals' come from
        # the means'
    means_share = (1.0 - fixed - tree_share - MARGIN if kind in STATISTICS_ONLY
                   else trained - pairs_share - dependence_share - totals_share)
    out: dict[str, Any] = {
        **({"data.top_items_noise_multiplier": sigma_for_share(rho, items_share)} if items_share > 0 else {}),
        "partition.k": k,
        "model.kind": kind, **({"model.options": TRAINED_OPTIONS[kind]} if kind in TRAINED_OPTIONS else {}),
        # calibrate: a trained model's item frequencies drift from the noisy means; an independent
        # one's do not, but with data.min_items the redraw would raise them (part_means.py); a tree
        # keeps the means by construction
        "model.output_bias": "noisy_mean", "model.calibrate": kind != "tree",
        "model.mean_clip": math.sqrt(min(MEAN_CLIP_ITEMS if facts.attributes is None else facts.attributes, items)),
        "model.mean_noise_multiplier": sigma_for_share(rho, means_share),
        "model.length_noise_multiplier": (sigma_for_share(rho, lengths_share) if lengths_share > 0 and not shared
                                          else None),
        "model.lengths_from_bound": shared,
        "model.totals_noise_multiplier": sigma_for_share(rho, totals_share) if totals_share > 0 else None,
        "model.pairs_noise_multiplier": sigma_for_share(rho, PAIRS_COUNTS_SHARE) if pairs_share > 0 else None,
        "model.pairs_select_epsilon": select_epsilon(rho, PAIRS_SELECT_SHARE, items) if pairs_share > 0 else 0.1,
        "model.pairs_clip": PAIRS_CLIP if pairs_share > 0 and bound_share > 0 else "means",
        "model.pairs_item_weight": PAIRS_ITEM_WEIGHT,
        "model.mean_clip_quantile": LENGTH_QUANTILE if bound_share > 0 else None,
        "model.mean_clip_balance": LENGTH_BALANCE if bound_share > 0 else None,
        "model.mean_debias": "off",  # the clipped means are not rescaled (leave-one-dataset-out)
        "model.length_bound_noise_multiplier": (sigma_for_share(rho, bound_share + (lengths_share if shared else 0.0))
                                                 if bound_share > 0 else 20.0),
        "partition.empty_part_noise_multiplier": sigma_for_share(rho, empty_share) if empty_share > 0 else None,
        "partition.dependence_noise_multiplier": sigma_for_share(rho, dependence_share) if dependence_share else None,
        "partition.merge_below": MERGE_BELOW if merged else 0.0,
        "model.tree_above": 0.0, "model.tree_options": {},  # no model chosen on the measured dependence
        "training.clipping": "fixed", "training.clip_norm": CLIP_NORM, "training.optimizer": "adam",
        "training.learning_rate": 0.003, "training.schedule": "parallel",
    }
    if k == 1:
        out.update({"partition.method": "none", "partition.noise_multiplier": sigma_for_share(rho, partition_share)})
    else:
        out.update(PARTITIONER_RULES[partitioner or partitioner_of(facts)](rho * partition_share))
    if kind == "tree":  # over the declared attributes where TABLE_BY_ATTRIBUTE and the schema say which item is whose
        over = by_attribute(facts)
        out["model.options"] = {**tree_options(rho, facts.attributes if over else items, tree_share,
                                               not over and every_pair(facts, items)), "by_attribute": over}
    q = min(MAX_SAMPLING_RATE, PART_BATCH * k / facts.size)
    out.update({"training.sampling_rate": q, "training.epochs": STEPS * q})
    return out
