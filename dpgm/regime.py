"""The rules' choice in words: which model family and how many groups ``rules: public`` chose, and why.

One sentence for the privacy report (dpgm.pipeline.plan), from the public quantities and the constants that
dpgm.rules reads (looked up there at call time, so a patched rule is described as it acts).
"""

from __future__ import annotations

from dpgm import rules
from dpgm.rules import PublicFacts


def regime(facts: PublicFacts, *, merge: bool = True, items: int | None = None) -> str:
    """Which model family and how many parts the rules chose, and why, in one sentence (for the report);
    ``merge``: as for ``rules.public_defaults``; ``items``: the items modelled (default: all)."""
    items = facts.n_items if items is None else items
    k = rules.parts(facts)
    split = ("one group" if k == 1
             else f"{k} groups (one per {rules.RECORDS_PER_PART:,} records at epsilon 1, at most {rules.MAX_PARTS})")
    scale = facts.records_magnitude * facts.epsilon
    if k == 1 and scale >= 2 * rules.RECORDS_PER_PART:
        split += (f" (N x epsilon = {scale:,.0f} is below {rules.PARTITION_SCALE:,}, where groups cost more than "
                  "they buy)")
    inputs = f"N = {facts.records_magnitude:,} and epsilon = {facts.epsilon:g}"
    return (f"The rules chose {family_words(facts, items)}, in {split}, from {inputs}."
            + extra_words(facts, k, items, merge=merge))


def family_words(facts: PublicFacts, items: int) -> str:
    """The model family (``rules.family``) and why."""
    scale, kind = facts.records_magnitude * facts.epsilon, rules.family(facts, items)
    tree = "a tree of items per group, fitted to noisy pair counts along privately chosen edges"
    if kind == "tree" and rules.tree_for_training(facts, items):
        return (f"{tree}, in DP-SGD's place and with its budget: N x epsilon = {scale:,.0f} is at least "
                f"{rules.MIN_TRAINING_SCALE:,}, where the pairs measured directly buy more than the models "
                "DP-SGD trains")
    if kind == "tree":
        table = (f"the data are a table of {facts.attributes} attributes (declared) and "
                 if facts.attributes is not None else "")
        return (f"{tree}: {table}N x epsilon = {scale:,.0f} is below {rules.tree_scale(facts):,}, where measured "
                "pairs buy more than DP-SGD")
    if kind == "independent":
        return (f"independent items at each group's noisy mean: N x epsilon = {scale:,.0f} is below "
                f"{rules.MIN_TRAINING_SCALE:,}, where DP-SGD's noise costs more than the correlations it learns")
    vae = (f"a VAE per group trained by DP-SGD: N x epsilon = {scale:,.0f} is at least "
           f"{max(rules.MIN_TRAINING_SCALE, rules.tree_scale(facts)):,}, enough for DP-SGD to learn correlations "
           "between items")
    if not rules.pairs_fit(facts, items):
        vae += (f" (a tree of items, the rules' choice there, is kept to at most {rules.PAIRS_MAX_ITEMS:,} items, "
                "whose pair counts fit in memory: set data.top_items)")
    return vae


def extra_words(facts: PublicFacts, k: int, items: int, *, merge: bool) -> str:
    """The statistics measured besides the family's, each in a sentence."""
    kind = rules.family(facts, items)
    merged = merge and rules.measures_dependence(facts, k, items=items)
    measured = " The items' dependence on each other is measured first, and"
    words = [
        ((" A noisy histogram of record lengths is measured, and the release follows it while each group keeps its "
         f"items' and pairs' frequencies (N x epsilon is at least {rules.LENGTHS_SCALE:,})."),
         rules.follows_lengths(facts)),
        ((" Instead of choosing a tree's edges privately, every pair's count is measured, each group's tree is the "
          "heaviest at those counts, and the release follows every pair (N x epsilon per pair is at least "
          f"{rules.ALL_PAIRS_SCALE:,.4g})."), kind == "tree" and rules.every_pair(facts, items)),
        ((" One tree of item pairs is measured over all records, and the release's item and pair frequencies "
         f"follow it (N x epsilon is at least {rules.PAIRS_SCALE:,})."), rules.measures_pairs(facts, kind, items)),
        ((f"{measured} the records form one group where it is below {rules.MERGE_BELOW:g} per record and edge, its "
         "means taking the partition's budget (items that barely depend on each other: groups would only split "
         "the records)."), merged),
    ]
    return "".join(text for text, said in words if said)
