"""Leave-one-dataset-out (LODO) check of the generic rules: choose without X, test on X.

A candidate is a patch of ``dpgm.rules`` constants (the budget shares, records per part, steps,
...) over BASE, the rules as shipped. For each dataset, fit size, epsilon and candidate,
``configs/transactions.yaml`` (``rules: public``) is trained on records drawn from a random half of
the dataset (``full``: all of that half; a number: a subsample of that many records, skipped where
the half is smaller) and answers ``--queries`` counting queries on the OTHER half, next to
independent marginals fitted on the same records at the same (epsilon, delta). Every method
releases as many records as it was fitted on (the baselines their noisy n): a release of more
records carries less sampling noise, and the comparison would favour whichever draws more. Every dataset is
restricted to its 100 most frequent items (exact counts: an evaluation set-up step, treated as
public; msnbc and chess have fewer and keep all). A candidate's score on one setting (dataset,
size, epsilon) is the mean over the 5 length groups of log(error / marginals' error), averaged over
seeds (below 0: better than marginals).

LODO, per epsilon: for each dataset X, the candidate with the best mean score over the settings
of the OTHER datasets is chosen, and its score on X (the mean over X's sizes) is reported beside
the default's and the best one's on X; then the mean and the worst (largest) held-out score over
the datasets, for the LODO choice and for the default. Each row also keeps the 1-, 2- and 3-way
marginal TVDs to the held-out half (``tvd1``, ``tvd2``, ``tvd3``, marginals' beside them); ``--score tvd2`` runs the same LODO on
log(tvd2 / marginals' tvd2). The summary ends with every setting's per-group errors of the
default and of the marginals.

    python benchmarks/rules_lodo.py --sizes 3000 30000 300000 full --epsilons 1 4 \\
        --json benchmarks/results/rules_lodo_seven.json
    python benchmarks/rules_lodo.py --summarize benchmarks/results/rules_lodo_seven.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from counting_queries import CONFIGS, TOP_ITEMS, config_sections, load
from provenance import write_json

from dpgm import rules
from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.evaluation.baselines import baseline_options
from dpgm.evaluation.counting import (
    CountingEvaluation,
    run_baseline,
    start_evaluation,
)
from dpgm.evaluation.marginal_tvd import marginal_tvd
from dpgm.evaluation.queries import group_means
from dpgm.pipeline.run import train
from dpgm.privacy.calibrate import default_delta
from dpgm.release import sample_dataset

DATASETS = ("msnbc", "retail", "gowalla", "foodmart", "t10i4d100k", "mushroom", "chess", "mnist")
#: The rules every candidate patches: dpgm.rules as shipped (no patch).
BASE: dict[str, Any] = {}
#: Candidates: patches of BASE ("default" is BASE itself).
CANDIDATES: dict[str, dict[str, Any]] = {
    "default": {},
    # the clip of the means from a noisy length quantile (2% of rho) instead of 9 items
    "lb90": {"LENGTH_BOUND_SHARE": 0.02, "MEANS_SHARE": 0.58},
    "lb99": {"LENGTH_BOUND_SHARE": 0.02, "LENGTH_QUANTILE": 0.99, "MEANS_SHARE": 0.58},
    # the clip of the means raised to the length balancing its bias against the means' noise
    "lbalmax": {"LENGTH_BALANCE": 1.0},
    "lbalmax4": {"LENGTH_BALANCE": 4.0},
    "lbalmax16": {"LENGTH_BALANCE": 16.0},
    # no DP-SGD below a larger N x epsilon (independent items at each part's noisy mean)
    "indep5e3": {"MIN_TRAINING_SCALE": 5_000},
    "indep3e4": {"MIN_TRAINING_SCALE": 30_000},
    "indep1e5": {"MIN_TRAINING_SCALE": 100_000},
    # a tree of items (private edge selections, MST's way, or every pair) down to every scale, or from N eps = 1,000
    "tree0": {"MIN_TRAINING_SCALE": 0},
    "tree1e3": {"MIN_TRAINING_SCALE": 1_000},
    # fewer, larger groups: k = N eps / RECORDS_PER_PART
    "rpp1e4": {"RECORDS_PER_PART": 10_000},
    "rpp2e4": {"RECORDS_PER_PART": 20_000},
    "rpp5e4": {"RECORDS_PER_PART": 50_000},
    # one group below N eps = 20,000 or 50,000 (where k = N eps / RECORDS_PER_PART would give 2 to 9)
    "one2e4": {"PARTITION_SCALE": 20_000},
    "one5e4": {"PARTITION_SCALE": 50_000},
    # a declared table (data.attributes) modelled like any other data, and its tree with an even split
    "tables_off": {"TABLE_TREE_SCALE": 0},
    "tables_even": {"TREE_SELECT_SHARE": 0.25, "TREE_PAIRS_SHARE": 0.25},
    "tables_light": {"TREE_SELECT_SHARE": 0.05, "TREE_PAIRS_SHARE": 0.15},
    "tables_sel5": {"TREE_SELECT_SHARE": 0.05, "TREE_PAIRS_SHARE": 0.3},
    "tables_pairs15": {"TREE_SELECT_SHARE": 0.1, "TREE_PAIRS_SHARE": 0.15},
    # DP-SGD's batch and steps: larger batches, fewer or more steps at the same budget
    "b1024": {"PART_BATCH": 1_024},
    "b1024_s50": {"PART_BATCH": 1_024, "STEPS": 50},
    "s50": {"STEPS": 50},
    "s800": {"STEPS": 800},
    # a noisy histogram of record lengths the release follows (its share from the means'), at every scale; or none
    "lengths2": {"LENGTHS_SHARE": 0.02, "LENGTHS_SCALE": 0},
    "lengths5": {"LENGTHS_SHARE": 0.05, "LENGTHS_SCALE": 0},
    "lengths10": {"LENGTHS_SHARE": 0.1, "LENGTHS_SCALE": 0},
    "nolengths": {"LENGTHS_SHARE": 0.0},
    "lbound": {"LENGTHS_FROM_BOUND": True},  # one length histogram (7% of rho) for the clip and the release
    # the tilt's ridge (dpgm/models/tilt.py): how far an unreachable target may pull the weights
    "ridge1e4": {"dpgm.models.tilt.RIDGE": 1e-4},
    # a tree of items releases every pair's count wherever the release follows lengths (merge_threshold.py's gate
    # allpairs composes a scale from it), the tilt's ridge on each pair PAIR_RIDGE x its noise (0: RIDGE alone)
    "allp": {"ALL_PAIRS_SCALE": 0.0, "dpgm.models.tilt.PAIR_RIDGE": 0.1},
    "allp_r003": {"ALL_PAIRS_SCALE": 0.0, "dpgm.models.tilt.PAIR_RIDGE": 0.03},
    "allp_r0": {"ALL_PAIRS_SCALE": 0.0, "dpgm.models.tilt.PAIR_RIDGE": 0.0},
    # selected edges wherever a tree is fitted (on dense yes/no records every pair's count is sqrt((L - 1) / 2) times
    # a selected pair's noise: chess gains, mushroom loses; rules_lodo_dense_pairs*.json)
    "noallp": {"ALL_PAIRS_SCALE": math.inf},
    # DP-SGD's gradient clip: near the per-record gradients' median norm (about 5-10 on these data)
    "clip5": {"CLIP_NORM": 5.0},
    "clip10": {"CLIP_NORM": 10.0},
    "clip15": {"CLIP_NORM": 15.0},
    # another partitioner of the parts at the same share of rho
    "part_lsh": {"PARTITIONER": "lsh_tree"},
    "part_kernel": {"PARTITIONER": "kernel_kmeans"},
    # one tree of item pairs over all records that the release follows (its shares from the means' by the rules)
    "pairs20": {"PAIRS_SELECT_SHARE": 0.1, "PAIRS_COUNTS_SHARE": 0.2},
    "pairs20_1e4": {"PAIRS_SELECT_SHARE": 0.1, "PAIRS_COUNTS_SHARE": 0.2, "PAIRS_SCALE": 10_000},
    "bpairs20_1e4": {"PAIRS_SELECT_SHARE": 0.1, "PAIRS_COUNTS_SHARE": 0.2, "PAIRS_SCALE": 10_000, "PAIRS_CLIP": "balanced"},
    "bpairs20_3e4": {"PAIRS_SELECT_SHARE": 0.1, "PAIRS_COUNTS_SHARE": 0.2, "PAIRS_SCALE": 30_000, "PAIRS_CLIP": "balanced"},
    # the items' weight against the pairs' in the balanced pairs release
    "pitems2": {"PAIRS_ITEM_WEIGHT": 2.0},
    "pitems05": {"PAIRS_ITEM_WEIGHT": 0.5},
    # the items' dependence measured where groups form (2% of rho, from the means'): the groups always kept or
    # always merged into one; a threshold's rows are these by the measured value (merge_threshold.py)
    "dep_keep": {"MERGE_BELOW": 1e-9},
    "dep_merge": {"MERGE_BELOW": 1.0},
    # the trees in DP-SGD's place (shipped): the means' share against the tree's, the selections' part of the
    # tree's (tables' trees too), no merge, fewer groups
    "tm45": {"MEANS_SHARE": 0.45},
    "tm70": {"MEANS_SHARE": 0.70},
    "tsel5": {"TREE_SELECT_SHARE": 0.05, "TREE_PAIRS_SHARE": 0.35},
    "tsel15": {"TREE_SELECT_SHARE": 0.15, "TREE_PAIRS_SHARE": 0.25},
    "tnomerge": {"MERGE_BELOW": 0.0},
    # the tables declare their schemas (DECLARE_SCHEMA): each attribute's values linked in each tree
    "schema": {},
    # the tables' trees over their declared attributes (one value of each per record) instead of their items
    "atree": {"TABLE_BY_ATTRIBUTE": True},
    "itree": {"TABLE_BY_ATTRIBUTE": False},
    # the tables' trees over attributes: their selections' part of the tree's 40% of rho, and the tree's share
    # against the means' (10% : 30% shipped)
    "atsel5": {"TREE_SELECT_SHARE": 0.05, "TREE_PAIRS_SHARE": 0.35},
    "atsel15": {"TREE_SELECT_SHARE": 0.15, "TREE_PAIRS_SHARE": 0.25},
    "atlight": {"TREE_SELECT_SHARE": 0.05, "TREE_PAIRS_SHARE": 0.15},
    "atheavy": {"TREE_SELECT_SHARE": 0.15, "TREE_PAIRS_SHARE": 0.45},
    # a longer clip under the trees: less weight on the noise against the clip's bias, or a higher quantile
    "tbal4": {"LENGTH_BALANCE": 4.0},
    "tq95": {"LENGTH_QUANTILE": 0.95},
    "trpp1e4": {"RECORDS_PER_PART": 10_000},
    "trpp2500": {"RECORDS_PER_PART": 2_500},
    "tparts1e4": {"PARTITION_SCALE": 10_000},
    # eight groups from N epsilon = 10,000 (one per 1,250 records at epsilon 1): what exact trees on msnbc ask for
    "tparts8": {"PARTITION_SCALE": 10_000, "RECORDS_PER_PART": 1_250},
    # small budgets: no empty part below N eps = 1,000 or 2,000 (its count's noise outweighs the empty records), a
    # length histogram's noise read as empty below 3 noise stds (2 let a hundred lengths' noise through), the one
    # group's noisy size with a larger share (rules_lodo_small_mode.json names them mode_*, beside the length bound's
    # quantile on the raw shares where no length survives the cut, rawfall)
    "empty1e3": {"EMPTY_SCALE": 1_000},
    "empty2e3": {"EMPTY_SCALE": 2_000},
    "tail3": {"dpgm.stages.length_bound.TAIL_NOISE": 3.0},
    "tail3_empty2e3": {"dpgm.stages.length_bound.TAIL_NOISE": 3.0, "EMPTY_SCALE": 2_000},
    "single5": {"SINGLE_PART_SHARE": 0.05},
    # the length bound's cut at about the largest noise of m + 1 lengths (shipped), read in wider bins where no
    # length passes, each bin's sum spread as the projected shares within it: at the largest of a tenth as many
    # draws, or off (the fixed cut of TAIL_NOISE stds). rules_lodo_gate_*.json also hold the rows of a gate on the
    # length histogram's noise per bin over n / (m + 1) (lnoise*: lost, removed) and of an even spread within a
    # bin (tailmax: lost to the projected shares on sparse baskets)
    "tail01": {"dpgm.stages.length_bound.TAIL_BY_LENGTHS": 0.1},
    # dense yes/no records at small budgets: a tree of items (tree0's) where the released length bound's quantile L
    # over the m items is at least 0.15 to 0.4 (a choice on a released value, its code removed: it lost, the rows
    # dense*_* in rules_lodo_dense_tree.json); or no empty part where the length bound's read histogram holds no record
    # of one item and its cut would have let through a length of 5%, 10%, 15% (shipped), 40% or any share of the
    # records, or always an empty part (emptykept, the rules before; rows there and in rules_lodo_dense_empty.json)
    "noempty1_seen40": {"EMPTY_SEEN_SHARE": 0.4},
    "noempty1_seen10": {"EMPTY_SEEN_SHARE": 0.1},
    "noempty1_seen5": {"EMPTY_SEEN_SHARE": 0.05},
    "noempty1_0": {"EMPTY_SEEN_SHARE": math.inf},
    "emptykept": {"EMPTY_SEEN_SHARE": 0.0},
    # the empty records' count where the length bound reads dense records (long ones pass its cut, no short one): read
    # as none below 1 (shipped) or 2 of its noise stds, or as drawn (edense0, the rules before). Lost and removed
    # (rows in rules_lodo_empty_cut.json): a cut at 1 or 2 stds on every data (ecut1, ecut2) or 1 std subtracted
    # (esoft1), which cost sparse baskets their empty records; dense read as no record of one item even where no
    # length passed the cut (edense1, edense2; foodmart at 1,000 records and epsilon 0.1); edc1 and edc2 read the
    # first bin only, where the shipped rule reads two; short005, short01, short02 read dense where those two bins hold
    # at most 0.5%, 1% or 2% of the records per length (MNIST's pixels alone move: not chosen)
    "edense0": {"EMPTY_DENSE_CUT": 0.0},
    "edw2": {"EMPTY_DENSE_CUT": 2.0},
    # tree0 with MST's budget split: its selections take a third of rho where tree0's take 9% (each edge's epsilon
    # half MST's), the means and the pair counts the rest (msel: 0.24 of the tree's 0.35, means 0.58; mthirds:
    # means 0.33, selections 0.30, pairs 0.30)
    "tree0_msel": {"MIN_TRAINING_SCALE": 0, "TREE_SELECT_SHARE": 0.24, "TREE_PAIRS_SHARE": 0.11},
    "tree0_mthirds": {"MIN_TRAINING_SCALE": 0, "MEANS_SHARE": 0.33, "TREE_SELECT_SHARE": 0.3, "TREE_PAIRS_SHARE": 0.3},
    "tree0_sel20": {"MIN_TRAINING_SCALE": 0, "MEANS_SHARE": 0.5, "TREE_SELECT_SHARE": 0.2, "TREE_PAIRS_SHARE": 0.23},
    # the other way: more of rho on the means, whose noise the tree's pair counts do not average out (0.62, the most
    # MIN_DPSGD_SHARE allows; the tree 0.31)
    "tree0_m62": {"MIN_TRAINING_SCALE": 0, "MEANS_SHARE": 0.62},
    # each tree edge's noisy count shrunk toward independence at the means by the positive-part James-Stein factor of
    # its excess (shipped) or as measured (noshrink: the rules before), with the rules' families or a tree at every
    # scale (tree0). Lost and removed (rows in rules_lodo_edge_shrink.json, code under its removed_candidates): one
    # factor pooled over a part's edges (pshrink) and an empirical-Bayes posterior under a fitted spike-and-normal
    # prior (mixture)
    "noshrink": {"dpgm.stages.tree_fit.EDGE_SHRINK": 0.0},
    "tree0_noshrink": {"MIN_TRAINING_SCALE": 0, "dpgm.stages.tree_fit.EDGE_SHRINK": 0.0},
    # each group's item means pulled toward the item's mean over all records by how far the groups' means spread
    # beyond their noise (the Fay-Herriot estimator, shipped) or as measured (nopartshrink: the rules before)
    "nopartshrink": {"dpgm.stages.part_means.PART_SHRINK": 0.0},
    # one group below N epsilon = 50,000 where each group's tree would count every pair (shipped), or below 20,000
    # wherever (groups20k: the rules before)
    "groups20k": {"PAIRS_PARTITION_SCALE": 0},
}
#: The tables among the datasets and their number of attributes (their READMEs: one attribute=value item
#: per attribute in every record), declared as ``data.attributes`` as their users would declare it.
ATTRIBUTES = {"mushroom": 23, "chess": 37}
#: Their schemas: the values of each attribute, items running attribute by attribute in id order (mushroom:
#: UCI's 22 attributes after the class, the values that occur; chess: 36 attributes of two values and one of
#: three), over every item of the file; ``schema`` maps them to the items a run keeps.
ATTRIBUTE_SIZES = {"mushroom": [2, 6, 4, 10, 2, 9, 2, 2, 2, 12, 2, 5, 4, 4, 9, 9, 1, 4, 3, 5, 9, 6, 7],
                   "chess": [2] * 15 + [3] + [2] * 21}
#: Candidates that declare the tables' schemas (``data.attribute_sizes``) besides their rules' patch, whatever
#: ``--schema`` says (which declares it for every candidate, as the shipped rules' users do).
DECLARE_SCHEMA = ("schema", "atree", "itree", "atsel5", "atsel15", "atlight", "atheavy")
#: The fixed shares of rho must leave DP-SGD at least this much.
MIN_DPSGD_SHARE = 0.15
FIXED_SHARES = ("ITEMS_SHARE", "PARTITION_SHARE", "MEANS_SHARE", "EMPTY_SHARE",
                "LENGTH_BOUND_SHARE")  # the global pairs' and the length histogram's shares come out of the means'

#: The marginals' generator is seeded with this integer plus the seed: only a generator built from an
#: integer seed draws reproducible noise (dpgm.privacy.discrete.is_secure; any other is the OS CSPRNG's).
MARGINALS_SEED = 2_000
#: Number of length groups of the counting queries.
GROUPS = 5
#: Peers (``--peers``) fitted on the same records, scored on the same held-out queries; their
#: generators are seeded with this integer plus the seed. Their rows name them ``peer:NAME`` and
#: take no part in the choice.
PEERS = ("mst", "aim", "mwem_pgm")
#: One colour per method in every panel of the plots (the candidate is C0).
PLOT_COLOURS = {"marginals": "C7", "mst": "C1", "aim": "C3", "mwem_pgm": "C2"}
PEER_SEED = 3_000


def dataset_order(name: str) -> tuple[int, str]:
    """Sort key of a dataset: DATASETS' order, then any other by name (a set's order varies between runs)."""
    return (DATASETS.index(name) if name in DATASETS else len(DATASETS), name)


def owner(key: str) -> tuple[Any, str]:
    """The module and name a candidate's key patches: a constant of dpgm.rules, or of another dpgm module by its
    dotted path (``dpgm.models.tilt.RIDGE``)."""
    if "." not in key:
        return rules, key
    module, _, name = key.rpartition(".")
    return importlib.import_module(module), name


def check_candidate(name: str) -> dict[str, Any]:
    """BASE patched by candidate ``name``; refuses unknown constants and shares leaving DP-SGD too little."""
    patch = {**BASE, **CANDIDATES[name]}
    unknown = [key for key in patch if not hasattr(*owner(key))]
    if unknown:
        raise SystemExit(f"candidate {name}: no constant {', '.join(unknown)} (dpgm.rules, or a dotted path)")
    fixed = sum(patch.get(key, getattr(rules, key, 0.0)) for key in FIXED_SHARES)
    if fixed > 1.0 - MIN_DPSGD_SHARE + 1e-9:
        raise SystemExit(f"candidate {name}: fixed shares sum to {fixed:.2f} > {1 - MIN_DPSGD_SHARE:.2f}")
    return patch


def patched(patch: dict[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` (``owner`` of each key) and return the previous values (to restore)."""
    old = {key: getattr(*owner(key)) for key in patch}
    for key, value in patch.items():
        setattr(*owner(key), value)
    return old


def size_label(size: int | str) -> str:
    """A row's size as the summary writes it (``half`` in older files is ``full``)."""
    return "full" if size in ("full", "half") else str(size)


def row_size(row: dict[str, Any]) -> str:
    """A row's size label, with ``@K`` where its data kept their K most frequent items (``--top-items``)."""
    return size_label(row["size"]) + (f"@{row['top_items']}" if row.get("top_items") else "")


def size_order(label: str) -> tuple[float, int]:
    """Sort key of a size label (``row_size``): the records ("full" last), then the items kept."""
    size, _, items = label.partition("@")
    return float("inf") if size == "full" else float(size), int(items or 0)


class Held:
    """One dataset split once: the fit half (as a permutation prefix), the held-out half, its queries."""

    def __init__(self, name: str, args: argparse.Namespace) -> None:
        self.data = load(name, argparse.Namespace(top_items=args.top_items, limit=None, subsample=None, seed=0,
                                                  data_dir=args.data_dir))
        self.order = np.random.default_rng(0).permutation(self.data.n_records)
        self.half = self.data.n_records // 2
        self.held_out = self.data.subset(np.sort(self.order[self.half:]))
        self.evaluation = start_evaluation(self.held_out, args.queries, np.random.default_rng(1))

    def fit(self, size: int | None, seed: int) -> BinaryDataset:
        pick = (self.order[:self.half] if size is None
                else np.random.default_rng([seed, 11]).choice(self.order[:self.half], size, replace=False))
        return self.data.subset(np.sort(pick))


def schema(name: str, data: BinaryDataset) -> list[int]:
    """``name``'s values per attribute among the items ``data`` keeps (its top items: ``meta['item_ids']``)."""
    of = np.repeat(np.arange(len(ATTRIBUTE_SIZES[name])), ATTRIBUTE_SIZES[name])
    kept = data.meta.get("item_ids", range(of.size))
    return np.bincount(of[np.asarray(kept)], minlength=len(ATTRIBUTE_SIZES[name])).tolist()


def take_means(evaluation: CountingEvaluation, key: str) -> dict[int, float]:
    """The per-group mean relative errors of ``key``, dropped from the evaluation afterwards."""
    means = group_means(evaluation.errors.pop(key), evaluation.queries)
    return {int(g): float(v) for g, v in means.items()}


def peer_options(args: argparse.Namespace, peer: str) -> dict[str, Any]:
    """The ``--peer-options`` of ``peer`` (``aim.max_rounds=20`` applies to aim: its ``max_rounds``)."""
    out: dict[str, Any] = {}
    for item in args.peer_options:
        key, _, value = item.partition("=")
        if key.split(".")[0] == peer:
            out[key] = yaml.safe_load(value)
    return out


def run_setting(name: str, held: Held, size: int | None, epsilon: float, args: argparse.Namespace,
                rows: list[dict[str, Any]], done: set[tuple[str, str, float, str, int]]) -> None:
    """Every candidate and seed on one (dataset, fit size, epsilon); appends rows."""
    config = config_sections(CONFIGS / "transactions.yaml")
    label = ("full" if size is None else str(size)) + (f"@{args.top_items}" if args.top_items else "")
    evaluation = held.evaluation
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        todo = [c for c in args.candidates if (name, label, epsilon, c, seed) not in done]
        peers = [p for p in args.peers if (name, label, epsilon, f"peer:{p}", seed) not in done]
        if not todo and not peers:
            continue
        fit = held.fit(size, seed)
        delta = default_delta(fit.n_records)
        start = time.perf_counter()
        syn, _ = run_baseline("marginals", fit, evaluation.queries, epsilon=epsilon, delta=delta,
                              rng=np.random.default_rng(MARGINALS_SEED + seed), options=None)
        evaluation.add("marginals", syn)
        marginals = take_means(evaluation, "marginals")
        marginals_tvd = marginal_tvd(held.held_out, syn)
        marginals_seconds = time.perf_counter() - start
        common = {"dataset": name, "size": "full" if size is None else str(size), "top_items": args.top_items,
                  "n_fit": fit.n_records, "n_items": fit.n_items, "epsilon": epsilon,
                  "seed": seed, "marginals": marginals, "marginals_tvd2": marginals_tvd.twoway,
                  "marginals_tvd3": marginals_tvd.threeway, "marginals_tvd1": marginals_tvd.oneway,
                  "marginals_seconds": marginals_seconds}
        for peer in peers:
            start = time.perf_counter()
            syn, report = run_baseline(peer, fit, evaluation.queries, epsilon=epsilon, delta=delta,
                                       rng=np.random.default_rng(PEER_SEED + seed),
                                       options=baseline_options(peer, peer_options(args, peer)))
            evaluation.add(peer, syn)
            groups = take_means(evaluation, peer)
            tvd = marginal_tvd(held.held_out, syn)
            rows.append({**common, "candidate": f"peer:{peer}", "peer": peer,
                         "score": float(np.mean([np.log(groups[g] / marginals[g]) for g in marginals])),
                         "groups": groups, "tvd2": tvd.twoway, "tvd3": tvd.threeway, "tvd1": tvd.oneway,
                         "seconds": time.perf_counter() - start, "options": peer_options(args, peer),
                         "rounds": report.get("rounds")})
            print(f"  {name}/{label} eps {epsilon:g} {peer}#{seed}: score {rows[-1]['score']:+.3f} "
                  f"({rows[-1]['seconds']:.0f} s)", flush=True)
            save(args, rows)
        for cand in todo:
            old = patched(check_candidate(cand))
            start = time.perf_counter()
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    declared = [f"data.attributes={ATTRIBUTES[name]}"] if name in ATTRIBUTES and args.attributes else []
                    if name in ATTRIBUTE_SIZES and (cand in DECLARE_SCHEMA or args.schema):
                        declared.append(f"data.attribute_sizes={schema(name, fit)}")
                    cfg = config_from_dict(config, [f"runs_dir={tmp}", "name=lodo", f"seed={seed}", f"threads={args.threads}",
                                                    f"privacy.delta={delta}", f"privacy.target_epsilon={epsilon}",
                                                    *declared])
                    run_dir, report = train(cfg, data=fit, progress=False)
                    train_seconds = time.perf_counter() - start
                    released = sample_dataset(run_dir, fit.n_records, seed=seed)  # as the baselines (docstring)
            finally:
                patched(old)
            evaluation.add(cand, released)
            groups = take_means(evaluation, cand)
            tvd = marginal_tvd(held.held_out, released)
            seconds = time.perf_counter() - start
            ratio = [np.log(groups[g] / marginals[g]) for g in marginals]
            rows.append({**common, "candidate": cand, "score": float(np.mean(ratio)), "groups": groups,
                         "tvd2": tvd.twoway, "tvd3": tvd.threeway, "tvd1": tvd.oneway, "seconds": seconds,
                         "train_seconds": train_seconds,
                         **({"dependence": report["dependence"]} if "dependence" in report else {})})
            print(f"  {name}/{label} eps {epsilon:g} {cand}#{seed}: score {rows[-1]['score']:+.3f} "
                  f"({seconds:.0f} s)", flush=True)
            save(args, rows)


def save(args: argparse.Namespace, rows: list[dict[str, Any]], skipped: list[str] | None = None) -> None:
    """The JSON so far (after every run, so that a stopped sweep keeps what it measured)."""
    if not args.json:
        return
    if skipped is not None:
        args.skipped = skipped
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    write_json(args.json, {"settings": settings, "base": BASE, "candidates": CANDIDATES,
                           "top_items": {d: TOP_ITEMS[d] for d in args.datasets}, "rows": rows})


def row_score(row: dict[str, Any], score: str) -> float:
    """A row's score: the counting-query one, or log(2-way TVD / marginals' 2-way TVD)."""
    return row["score"] if score == "queries" else float(np.log(row["tvd2"] / row["marginals_tvd2"]))


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def one_rule_lines(mean: dict[tuple[str, str, float], dict[str, float]], cands: list[str]) -> list[str]:
    """LODO with one rule for every epsilon (the rules take epsilon as an input, not a choice): for each held-out
    dataset the candidate best on the other datasets' settings at every epsilon, scored on the held-out dataset at
    each epsilon; the mean and worst held-out score per epsilon."""
    epsilons = sorted({s[2] for s in mean})
    datasets = sorted({s[0] for s in mean}, key=dataset_order)
    lines = ["\nLODO with one rule for every epsilon (chosen on the other datasets' settings at every epsilon):",
             f"  {'held out':<12}{'LODO choice':<20}" + "".join(f"{'eps ' + format(e, 'g'):>18}" for e in epsilons)]
    held: dict[float, dict[str, tuple[float, float]]] = {e: {} for e in epsilons}
    for x in datasets:
        others = [by for s, by in mean.items() if s[0] != x]
        common = [c for c in cands if others and all(c in by for by in others)]
        if not common:
            continue
        chosen = min(common, key=lambda c: np.mean([by[c] for by in others]))
        cells = []
        for e in epsilons:
            on_x = [by for s, by in mean.items() if s[0] == x and s[2] == e]
            held[e][x] = (_mean([by.get(chosen, float("nan")) for by in on_x]),
                          _mean([by.get("default", float("nan")) for by in on_x]))
            cells.append(f"{held[e][x][0]:+.3f} ({held[e][x][1]:+.3f})")
        lines.append(f"  {x:<12}{chosen:<20}" + "".join(f"{c:>18}" for c in cells))
    lines.append("  (default in brackets)")
    for e in epsilons:
        if held[e]:
            worst = {i: max(held[e], key=lambda d: held[e][d][i]) for i in (0, 1)}
            lines.append(f"  eps {e:g}: held-out mean {_mean([h[0] for h in held[e].values()]):+.3f}, worst "
                         f"{held[e][worst[0]][0]:+.3f} ({worst[0]}); default {_mean([h[1] for h in held[e].values()]):+.3f}, "
                         f"worst {held[e][worst[1]][1]:+.3f} ({worst[1]})")
    return lines


def summarize(rows: list[dict[str, Any]], score_name: str = "queries", groups: bool = True) -> str:
    """Mean score per (setting, candidate), the LODO choice for every dataset and epsilon, the mean
    and worst held-out score, and (``groups``) the per-group errors of the default and of the
    marginals, and the default beside the peers."""
    Setting = tuple[str, str, float]
    score: dict[Setting, dict[str, list[float]]] = {}
    peer_rows = [r for r in rows if r.get("peer")]
    rows = [r for r in rows if not r.get("peer")]
    for r in rows:
        if score_name == "tvd2" and "tvd2" not in r:
            continue
        s = (r["dataset"], row_size(r), float(r["epsilon"]))
        score.setdefault(s, {}).setdefault(r["candidate"], []).append(row_score(r, score_name))
    mean = {s: {c: float(np.mean(v)) for c, v in by.items()} for s, by in score.items()}
    cands = sorted({c for by in mean.values() for c in by}, key=lambda c: (c != "default", c))
    width = max(18, *(len(c) + 2 for c in cands))

    def order(s: Setting) -> tuple[float, str, float]:
        return (s[2], s[0], size_order(s[1]))

    what = "error / marginals' error" if score_name == "queries" else "2-way TVD / marginals' 2-way TVD"
    lines = [f"score = mean log({what}); below 0: better than marginals; lower is better", "",
             f"{'setting':<26}" + "".join(f"{c:>{width}}" for c in cands)]
    for s in sorted(mean, key=order):
        lines.append(f"{s[0] + '/' + s[1] + ' eps ' + format(s[2], 'g'):<26}"
                     + "".join(f"{mean[s].get(c, float('nan')):>+{width}.3f}" for c in cands))
    for eps in sorted({s[2] for s in mean}):
        at = {s: by for s, by in mean.items() if s[2] == eps}
        datasets = sorted({s[0] for s in at}, key=dataset_order)
        lines.append(f"\nLODO at epsilon {eps:g} (held-out score: mean over the held-out dataset's sizes):")
        lines.append(f"  {'held out':<12}{'sizes':<22}{'LODO choice':<20}{'chosen':>8}{'default':>9}  best on it")
        held: dict[str, dict[str, float]] = {}
        for x in datasets:
            others = [by for s, by in at.items() if s[0] != x]
            on_x = {s[1]: by for s, by in at.items() if s[0] == x}
            common = [c for c in cands if others and all(c in by for by in others)]
            if not common:
                lines.append(f"  {x:<12}no other dataset's settings to choose on")
                continue
            chosen = min(common, key=lambda c: np.mean([by[c] for by in others]))
            x_mean = {c: _mean([by[c] for by in on_x.values() if c in by]) for c in cands
                      if all(c in by for by in on_x.values())}
            best = min(x_mean, key=lambda c: x_mean[c])
            held[x] = {"chosen": x_mean.get(chosen, float("nan")), "default": x_mean.get("default", float("nan")),
                       "best": x_mean[best]}
            sizes = ",".join(sorted(on_x, key=size_order))
            lines.append(f"  {x:<12}{sizes:<22}{chosen:<20}{held[x]['chosen']:>+8.3f}{held[x]['default']:>+9.3f}"
                         f"  {best} {x_mean[best]:+.3f}")
            for z, by in sorted(on_x.items(), key=lambda t: size_order(t[0])):
                lines.append(f"  {'':<12}  {z:<20}{'':<20}{by.get(chosen, float('nan')):>+8.3f}"
                             f"{by.get('default', float('nan')):>+9.3f}  {min(by, key=by.get)} {min(by.values()):+.3f}")
        if held:
            for who in ("chosen", "default", "best"):
                worst = max(held, key=lambda d: held[d][who])
                name = {"chosen": "LODO choice", "default": "default", "best": "best per dataset (oracle)"}[who]
                lines.append(f"  {name:<26} mean over held-out datasets {_mean([h[who] for h in held.values()]):+.3f}, "
                             f"worst {held[worst][who]:+.3f} ({worst})")
    if len({s[2] for s in mean}) > 1:
        lines += one_rule_lines(mean, cands)
    if groups:
        lines.append("\n" + group_table(rows))
    if groups and peer_rows:
        lines.append("\n" + peer_table(rows, peer_rows))
    return "\n".join(lines)


def group_errors(r: dict[str, Any], key: str) -> list[float]:
    """A row's mean relative error per length group 1..GROUPS, of ``key`` (``groups``: the row's method; ``marginals``)."""
    return [r[key][str(g)] if str(g) in r[key] else r[key][g] for g in range(1, GROUPS + 1)]


def peer_table(rows: list[dict[str, Any]], peer_rows: list[dict[str, Any]], candidate: str = "default") -> str:
    """Per setting and peer: the candidate's and the peer's mean relative error per length group, the
    groups where the candidate is at or below the peer and below the marginals, and both 2-way TVDs
    (means over the seeds both ran)."""
    def by_setting(rs: list[dict[str, Any]]) -> dict[tuple[str, str, float, int], dict[str, Any]]:
        return {(r["dataset"], row_size(r), float(r["epsilon"]), r["seed"]): r for r in rs}

    ours = by_setting([r for r in rows if r["candidate"] == candidate])
    three = any("tvd3" in p for p in peer_rows)
    lines = [f"{candidate} beside the peers, on the same records and held-out queries (groups 1..5; TVD: 2-way"
             + (", TVD3: 3-way)" if three else ")"),
             (f"{'setting':<26}{'peer':<10}{candidate + ' errors':>45}{'peer errors':>45}"
              f"{'<= peer':>9}{'< marg.':>9}{'TVD':>9}{'peer TVD':>9}" + (f"{'TVD3':>9}{'peer TVD3':>10}" if three else ""))]
    settings: dict[tuple[str, str, float, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for p in peer_rows:
        key = (p["dataset"], row_size(p), float(p["epsilon"]), p["seed"])
        if key in ours:
            settings.setdefault((*key[:3], p["peer"]), []).append((ours[key], p))
    for s in sorted(settings, key=lambda s: (s[2], s[0], size_order(s[1]), s[3])):
        pairs = settings[s]
        mine = np.mean([group_errors(o, "groups") for o, _ in pairs], axis=0)
        theirs = np.mean([group_errors(p, "groups") for _, p in pairs], axis=0)
        marg = np.mean([group_errors(o, "marginals") for o, _ in pairs], axis=0)
        lines.append(f"{s[0] + '/' + s[1] + ' eps ' + format(s[2], 'g'):<26}{s[3]:<10}"
                     + "".join(f"{v:>9.3g}" for v in mine) + "".join(f"{v:>9.3g}" for v in theirs)
                     + f"{int(np.sum(mine <= theirs)):>7}/5{int(np.sum(mine < marg)):>7}/5"
                     + f"{np.mean([o['tvd2'] for o, _ in pairs]):>9.3g}{np.mean([p['tvd2'] for _, p in pairs]):>9.3g}"
                     + (_tvd3(pairs) if three else ""))
    return "\n".join(lines)


def _tvd3(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """The candidate's and the peer's mean 3-way TVD, or dashes where a row has none (older files)."""
    if not all("tvd3" in o and "tvd3" in p for o, p in pairs):
        return f"{'-':>9}{'-':>10}"
    return f"{np.mean([o['tvd3'] for o, _ in pairs]):>9.3g}{np.mean([p['tvd3'] for _, p in pairs]):>10.3g}"


def group_table(rows: list[dict[str, Any]], candidate: str = "default") -> str:
    """Per setting: the candidate's and the marginals' mean relative error per length group (mean over
    seeds), and the groups where every candidate's error is above the marginals'."""
    cells: dict[tuple[str, str, float], dict[str, list[list[float]]]] = {}
    for r in rows:
        s = (r["dataset"], row_size(r), float(r["epsilon"]))
        by = cells.setdefault(s, {})
        by.setdefault(r["candidate"], []).append(group_errors(r, "groups"))
        by.setdefault("marginals", []).append(group_errors(r, "marginals"))
    head = (f"{'setting':<26}{candidate + ' (groups 1..5)':>45}{'marginals (groups 1..5)':>45}"
            f"  groups where every candidate loses to marginals")
    lines = ["mean relative error per length group (1: shortest queries ... 5: longest)", head]
    for s in sorted(cells, key=lambda s: (s[2], s[0], size_order(s[1]))):
        by = {c: np.mean(v, axis=0) for c, v in cells[s].items()}
        if candidate not in by:
            continue
        cands = [c for c in by if c != "marginals"]
        lose = [g + 1 for g in range(GROUPS) if all(by[c][g] > by["marginals"][g] for c in cands)]
        lines.append(f"{s[0] + '/' + s[1] + ' eps ' + format(s[2], 'g'):<26}"
                     + "".join(f"{v:>9.3g}" for v in by[candidate]) + "".join(f"{v:>9.3g}" for v in by["marginals"])
                     + f"  {','.join(map(str, lose)) or '-'}")
    return "\n".join(lines)


def plot_peers(rows: list[dict[str, Any]], folder: Path, candidate: str = "default") -> list[Path]:
    """One PNG per dataset: per fit size (rows) and epsilon (columns), the mean relative error per
    length group of ``candidate``, of each peer and of the marginals (means over the seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[tuple[str, str, float], dict[str, list[list[float]]]] = {}
    for r in rows:
        who = r.get("peer") or r["candidate"]
        if who != candidate and not r.get("peer"):
            continue
        cell = lines.setdefault((r["dataset"], row_size(r), float(r["epsilon"])), {})
        cell.setdefault(who, []).append(group_errors(r, "groups"))
        if not r.get("peer"):
            cell.setdefault("marginals", []).append(group_errors(r, "marginals"))
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for dataset in sorted({k[0] for k in lines}, key=lambda d: DATASETS.index(d) if d in DATASETS else 99):
        sizes = sorted({k[1] for k in lines if k[0] == dataset}, key=size_order)
        epsilons = sorted({k[2] for k in lines if k[0] == dataset})
        fig, axes = plt.subplots(len(sizes), len(epsilons), figsize=(4.2 * len(epsilons), 2.8 * len(sizes)),
                                 squeeze=False, sharex=True)
        for i, size in enumerate(sizes):
            for j, eps in enumerate(epsilons):
                ax = axes[i][j]
                for who, values in sorted(lines.get((dataset, size, eps), {}).items()):
                    style = {"marginals": ":", candidate: "-"}.get(who, "--")
                    label = f"dpgm ({who})" if who == candidate else who
                    colour = "C0" if who == candidate else PLOT_COLOURS.get(who)
                    ax.plot(range(1, GROUPS + 1), np.mean(values, axis=0), style, marker="o", label=label, color=colour)
                ax.set_yscale("log")
                ax.set_title(f"{dataset}, {size} records, epsilon {eps:g}", fontsize=9)
                ax.set_xlabel("length group (1: shortest queries)", fontsize=8)
                ax.set_ylabel("mean relative error", fontsize=8)
                ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"{dataset}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def read_rows(path: str) -> list[dict[str, Any]]:
    """A result file's rows; rows of older files without an epsilon get the file's ``--epsilon``."""
    return rows_of(json.loads(Path(path).read_text()))


def rows_of(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A parsed result file's rows, each a new dict; rows of older files without an epsilon get the file's
    ``--epsilon``."""
    eps = float(payload.get("settings", {}).get("epsilon", 1.0))
    return [{"epsilon": eps, **r} for r in payload["rows"]]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--sizes", nargs="+", default=["3000", "30000", "300000", "full"],
                   help="fit sizes: 'full' (the whole fit half) or a record count (skipped above the fit half)")
    p.add_argument("--full-max-records", type=int, default=None, metavar="N",
                   help="run 'full' only on datasets whose fit half holds at most N records (default: all)")
    p.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0])
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--top-items", type=int, default=None, metavar="K",
                   help="keep each dataset's K most frequent items (default: 100; msnbc and chess keep all theirs); "
                        "rows and summaries label the size SIZE@K")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--first-seed", type=int, default=0,
                   help="run seeds FIRST_SEED .. FIRST_SEED + SEEDS - 1 (split one setting's seeds over processes)")
    p.add_argument("--peers", nargs="*", default=[], choices=PEERS,
                   help="also fit these baselines (need mbi) on the same records and score them beside the rules")
    p.add_argument("--peer-options", nargs="*", default=[], metavar="PEER.KEY=VALUE",
                   help="a peer's options, e.g. aim.max_rounds=20 (a public cap on AIM's rounds)")
    p.add_argument("--no-attributes", dest="attributes", action="store_false",
                   help="do not declare the tables' attributes (data.attributes) to the rules")
    p.add_argument("--schema", action="store_true",
                   help="declare the tables' schemas (data.attribute_sizes) for every candidate, not only DECLARE_SCHEMA's")
    p.add_argument("--threads", type=int, default=1, help="the runs' torch and BLAS threads (config key threads)")
    p.add_argument("--data-dir", type=Path, default=None, help="default: $DPGM_DATA_DIR or ../shared/data")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--resume", action="store_true", help="keep the rows already in --json and skip their runs")
    p.add_argument("--summarize", nargs="+", default=None, metavar="JSON", help="only print the LODO summary of these files")
    p.add_argument("--plot", type=Path, default=None, metavar="DIR",
                   help="with --summarize: one PNG per dataset in DIR, the default beside the peers and the marginals")
    p.add_argument("--score", choices=("queries", "tvd2"), default="queries",
                   help="what the summary scores: the counting queries or the 2-way marginal TVD")
    args = p.parse_args(argv)
    if args.summarize:
        rows = [r for path in args.summarize for r in read_rows(path)]
        print(summarize(rows, args.score))
        for path in plot_peers(rows, args.plot) if args.plot else []:
            print(f"wrote {path}")
        return 0
    for cand in args.candidates:
        check_candidate(cand)
    sizes = [None if z in ("full", "half") else int(z) for z in args.sizes]
    rows: list[dict[str, Any]] = read_rows(args.json) if args.resume and args.json and Path(args.json).exists() else []
    done = {(r["dataset"], row_size(r), float(r["epsilon"]), r["candidate"], r["seed"]) for r in rows}
    skipped: list[str] = []
    held: dict[str, Held] = {}
    for size in sizes:  # small sizes first: a stopped sweep has every dataset at them
        for name in args.datasets:
            if name not in held:
                held[name] = Held(name, args)
                h = held[name]
                print(f"== {name}: {h.data.n_records} records, {h.data.n_items} items, fit half {h.half}, "
                      f"held-out maxlen {h.evaluation.queries.maxlen}", flush=True)
            h = held[name]
            if size is not None and size > h.half:
                skipped.append(f"{name}/{size}: the fit half holds {h.half} records")
            elif size is None and args.full_max_records is not None and h.half > args.full_max_records:
                skipped.append(f"{name}/full: the fit half's {h.half} records are above --full-max-records")
            else:
                for eps in args.epsilons:
                    run_setting(name, h, size, eps, args, rows, done)
                continue
            print(f"  skip {skipped[-1]}", flush=True)
            save(args, rows, skipped)
    save(args, rows, skipped)
    print(summarize(rows, args.score))
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
