"""A tree of items instead of DP-SGD or independent items where the items depend strongly on each other
(``model.tree_above``).

At a budget where DP-SGD learns little, a tree of items measured directly (dpgm.stages.item_pairs)
captures strong pairwise dependence better; where the items barely depend on each other, its
pair counts buy nothing and DP-SGD's models, or independent items whose means take the tree's budget,
do better. The released dependence (dpgm.stages.dependence) decides: at or above ``model.tree_above``
each part's model is a tree fitted to ``model.tree_options``, else the configured model is fitted.

Privacy (docs/privacy.md, "A choice between models"): the choice is made on earlier releases, so
the run costs, at every RDP order, the larger of the two branches' curves (``ChoiceEvent``). Both
branches charge the same choice entry at the same point of the ledger, before either draws: the
tree before its first selection, DP-SGD before its first step, with DP-SGD's noise calibrated on
a plan that holds the choice. Both ledgers then end at the same epsilon. Against independent items
(``untrained_choice``) the entry is charged before the part means in both branches, since the means'
noise follows the choice (``independent_releases``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dpgm.config import Config, ModelConfig
from dpgm.models import MODELS
from dpgm.models.tree import TreeOptions
from dpgm.privacy.events import ChoiceEvent, DpEvent, ExponentialEvent, GaussianEvent

#: Ledger stage of the choice's entry.
STAGE = "model_choice"
#: Releases as (event, count) pairs, as a ``ChoiceEvent`` branch lists them.
Releases = tuple[tuple[DpEvent, int], ...]
#: The branches of a choice, in ``ChoiceEvent.branches`` order.
TREE, TRAINED = 0, 1


def tree_chosen(cfg: Config, measured: float | None) -> bool:
    """Whether a tree replaces the configured model: ``model.tree_above`` is set and the released
    dependence (None: not measured) is at or above it."""
    return measured is not None and cfg.model.tree_above > 0 and measured >= cfg.model.tree_above


def chosen_model(cfg: Config, measured: float | None) -> ModelConfig:
    """The model section the run fits: the configured one, or a tree with ``model.tree_options``."""
    if not tree_chosen(cfg, measured):
        return cfg.model
    return dataclasses.replace(cfg.model, kind="tree", options=dict(cfg.model.tree_options), calibrate=False)


def tree_options(model: ModelConfig) -> TreeOptions:
    """The tree's typed options: ``model.options`` of a tree, else ``model.tree_options``."""
    return MODELS.options("tree", model.options if model.kind == "tree" else model.tree_options)


def tree_releases(options: TreeOptions, nodes: int) -> Releases:
    """What a tree over ``nodes`` items or attributes charges (dpgm.stages.item_pairs): nodes - 1 selection rounds
    and one Gaussian release of the chosen pairs' counts (drawn as a discrete Gaussian, whose curve is the same),
    or with ``all_pairs`` that release alone, of every pair; nothing for one node."""
    if nodes < 2:
        return ()
    counts = (GaussianEvent(noise_multiplier=options.pair_noise_multiplier), 1)
    return (counts,) if options.all_pairs else ((ExponentialEvent(epsilon=options.select_epsilon), nodes - 1), counts)


def tree_nodes(cfg: Config, options: TreeOptions, n_items: int) -> int:
    """The nodes a tree spans: the declared attributes (``by_attribute``, dpgm.stages.attribute_pairs) or the items."""
    sizes = cfg.data.attribute_sizes
    return len(sizes) if options.by_attribute and sizes is not None else n_items


def tree_precision(cfg: Config, n_items: int) -> float:
    """The tree's zCDP cost as the 1 / sigma^2 of one Gaussian release of the means' sensitivity: what the means
    of independent items chosen instead take (2 rho: nodes - 1 selections of epsilon^2 / 8 each, none with
    ``all_pairs``, and the pairs' 1 / (2 sigma^2))."""
    options = tree_options(cfg.model)
    nodes = tree_nodes(cfg, options, n_items)
    if nodes < 2:
        return 0.0
    selections = 0 if options.all_pairs else nodes - 1
    return selections * options.select_epsilon ** 2 / 4.0 + 1.0 / options.pair_noise_multiplier ** 2


def independent_releases(cfg: Config, n_items: int) -> Releases:
    """The independent items' branch against a tree: the part of their means' one release that the tree's budget
    pays for, as a Gaussian of ``tree_precision`` (Gaussian costs add up, so the means' release at their own
    multiplier plus this one is the release the branch makes). Its curve is at least the tree's at every order."""
    precision = tree_precision(cfg, n_items)
    return ((GaussianEvent(noise_multiplier=precision ** -0.5), 1),) if precision > 0 else ()


def untrained_choice(cfg: Config) -> bool:
    """Whether the measured dependence chooses between a tree and independent items (``model.kind: independent``
    with ``model.tree_above``): the choice's entry is charged before the means, whose noise depends on it."""
    return cfg.model.kind == "independent" and cfg.model.tree_above > 0


def untrained_choice_entry(cfg: Config, n_items: int, measured: float | None) -> ChoiceEvent:
    """The entry of ``untrained_choice``: a tree against independent items whose means take its budget."""
    taken = TREE if tree_chosen(cfg, measured) else TRAINED
    return choice(cfg, n_items, independent_releases(cfg, n_items), taken)


def choice(cfg: Config, n_items: int, training: Releases, taken: int) -> ChoiceEvent:
    """The choice's ledger entry: a tree's releases against ``training``'s (DP-SGD's steps)."""
    options = tree_options(cfg.model)
    return ChoiceEvent(branches=(tree_releases(options, tree_nodes(cfg, options, n_items)), training), taken=taken)


def training_plan(cfg: Config, n_items: int, steps: Callable[[float], Releases]) -> Callable[[float], list]:
    """DP-SGD's plan at noise multiplier s for ``calibrate``: its ``steps(s)``, after the choice's entry when
    ``model.tree_above`` is set (the trained branch taken)."""
    if cfg.model.tree_above <= 0:
        return lambda sigma: list(steps(sigma))
    return lambda sigma: [(choice(cfg, n_items, steps(sigma), TRAINED), 1), *steps(sigma)]
