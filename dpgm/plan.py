"""What ``rules: public`` does and why, as data: the settings of dpgm.rules beside each one's reason in words.

``plan(facts)`` is pure: it reads only public facts (dpgm.rules.PublicFacts) and returns a ``Plan``, whose settings
are ``rules.public_defaults``' and whose reasons come from the decision table ``TABLE``: rows of (setting, value,
condition on public facts, reason), the first row of a setting whose condition holds giving its reason. The same
rows give the privacy report's words (``words``), ``dpgm plan``'s output and docs/guide/rules.md.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpgm import rules
from dpgm.config import STATISTICS_ONLY, Config
from dpgm.errors import ConfigError
from dpgm.privacy.calibrate import zcdp_rho
from dpgm.rules import PublicFacts


@dataclass(frozen=True)
class Case:
    """What a row's condition reads: the public facts, the items modelled and the settings chosen."""

    facts: PublicFacts
    items: int
    settings: dict[str, Any]

    @property
    def scale(self) -> float:
        """N * epsilon, the scale most rules read."""
        return self.facts.scale

    def words(self) -> dict[str, Any]:
        """The values a row's text may name, beside every constant of dpgm.rules."""
        options = self.settings.get("model.options", {})
        fitted = ("every pair's noisy count" if options.get("all_pairs")
                  else "noisy pair counts along privately chosen edges")
        empty = share_reason(self.settings["partition.empty_part_noise_multiplier"],
                             zcdp_rho(self.facts.epsilon, self.facts.delta))
        return {"scale": self.scale, "k": self.settings["partition.k"], "kind": self.settings["model.kind"],
                "empty": empty,
                "attributes": self.facts.attributes, "min_items": self.facts.min_items,
                "pairs": self.items * (self.items - 1) / 2,
                "tree": ("a tree over the table's attributes per group, fitted to noisy tables of value pairs along "
                         "privately chosen edges" if options.get("by_attribute")
                         else f"a tree of items per group, fitted to {fitted}")}


@dataclass(frozen=True)
class Row:
    """One row of the decision table: ``setting`` takes ``value`` where ``when`` holds, because of ``why``; ``said``:
    whether the privacy report states it. Texts name rules' constants and ``Case.words`` in braces."""

    setting: str
    value: str
    when: str
    why: str
    holds: Callable[[Case], bool]
    said: bool = True


def _kind(kind: str) -> Callable[[Case], bool]:
    return lambda c: c.settings["model.kind"] == kind


def _lengths(c: Case) -> bool:
    return bool(c.settings["model.lengths_from_bound"] or c.settings["model.length_noise_multiplier"] is not None)


def _empty(c: Case) -> bool:
    return c.settings["partition.empty_part_noise_multiplier"] is not None


#: The rows, setting by setting; a setting's last row always holds.
TABLE: tuple[Row, ...] = (
    Row("model.kind", "tree", "a declared table (data.attributes) and N x epsilon below {TABLE_TREE_SCALE:,}",
        "{tree}: the data are a table of {attributes} attributes (declared) and N x epsilon = {scale:,.0f} is below "
        "{TABLE_TREE_SCALE:,}, where measured pairs buy more than DP-SGD",
        lambda c: _kind("tree")(c) and c.scale < rules.tree_scale(c.facts)),
    Row("model.kind", "independent", "N x epsilon below {MIN_TRAINING_SCALE:,}",
        "independent items at each group's noisy mean: N x epsilon = {scale:,.0f} is below {MIN_TRAINING_SCALE:,}, "
        "where DP-SGD's noise costs more than the correlations it learns",
        lambda c: _kind("independent")(c) and c.scale < rules.MIN_TRAINING_SCALE),
    Row("model.kind", "tree", "at most {PAIRS_MAX_ITEMS:,} items modelled or a declared table's attributes, and "
        "data.min_items at most 1",
        "{tree}, in DP-SGD's place and with its budget: N x epsilon = {scale:,.0f} is at least "
        "{MIN_TRAINING_SCALE:,}, where the pairs measured directly buy more than the models DP-SGD trains",
        lambda c: _kind("tree")(c) and rules.tree_for_training(c.facts, c.items)),
    Row("model.kind", "vae", "more than {PAIRS_MAX_ITEMS:,} items modelled, not over a declared table's attributes",
        "a VAE per group trained by DP-SGD: N x epsilon = {scale:,.0f} is at least {MIN_TRAINING_SCALE:,}, enough "
        "for DP-SGD to learn correlations between items (a tree of items, the rules' choice there, is kept to at "
        "most {PAIRS_MAX_ITEMS:,} items, whose pair counts fit in memory: set data.top_items)",
        lambda c: _kind("vae")(c) and not rules.pairs_fit(c.facts, c.items) and not rules.by_attribute(c.facts)),
    Row("model.kind", "vae", "data.min_items above 1",
        "a VAE per group trained by DP-SGD: N x epsilon = {scale:,.0f} is at least {MIN_TRAINING_SCALE:,}, enough "
        "for DP-SGD to learn correlations between items, and every record holds at least {min_items} items "
        "(declared), more than a tree keeps", _kind("vae")),
    Row("model.kind", "as stated", "the config states model.kind", "{kind}, as the config states",
        lambda c: True),
    Row("partition.k", "1", "N x epsilon from {PARTITION_SCALE:,} to below {PAIRS_PARTITION_SCALE:,} where each "
        "group's tree would count every pair",
        "one group (N x epsilon = {scale:,.0f} is below {PAIRS_PARTITION_SCALE:,} and its tree counts every pair: "
        "one tree fitted to every pair over all records is what groups would split, each group's counts as noisy "
        "over fewer records)",
        lambda c: c.settings["partition.k"] == 1 and rules.PARTITION_SCALE <= c.scale
        < rules.partition_scale(c.facts, c.items, c.settings["model.kind"])),
    Row("partition.k", "1", "N x epsilon from {RECORDS_PER_PART:,} x 2 to below {PARTITION_SCALE:,}",
        "one group (N x epsilon = {scale:,.0f} is below {PARTITION_SCALE:,}, where groups cost more than they buy)",
        lambda c: c.settings["partition.k"] == 1 and 2 * rules.RECORDS_PER_PART <= c.scale < rules.PARTITION_SCALE),
    Row("partition.k", "1", "N x epsilon below {PARTITION_SCALE:,}", "one group",
        lambda c: c.settings["partition.k"] == 1),
    Row("partition.k", "N x epsilon / {TABLE_RECORDS_PER_PART:,}, at most {MAX_PARTS}", "a tree over a declared "
        "table's attributes, otherwise", "{k} groups (one per {TABLE_RECORDS_PER_PART:,} records at epsilon 1, at "
        "most {MAX_PARTS}: a declared table's groups are larger than other data's, for their trees' tables of value "
        "pairs)", lambda c: rules.by_attribute(c.facts)),
    Row("partition.k", "N x epsilon / {RECORDS_PER_PART:,}, at most {MAX_PARTS}", "otherwise",
        "{k} groups (one per {RECORDS_PER_PART:,} records at epsilon 1, at most {MAX_PARTS})", lambda c: True),
    Row("partition.method", "{TABLE_PARTITIONER}", "k > 1 groups of a tree over a declared table's attributes",
        "The groups are formed by {TABLE_PARTITIONER} (DP kernel k-means on random Fourier features): a declared "
        "table's trees fit its groups better than those of {PARTITIONER}.",
        lambda c: c.settings["partition.method"] == rules.TABLE_PARTITIONER and c.settings["partition.k"] > 1
        and rules.by_attribute(c.facts)),
    Row("partition.method", "{PARTITIONER}", "k > 1 groups otherwise",
        "The groups are formed by the partitioner {PARTITIONER}.",
        lambda c: c.settings["partition.method"] == rules.PARTITIONER and c.settings["partition.k"] > 1, said=False),
    Row("partition.method", "none", "one group", "One group: only its noisy count is released.",
        lambda c: c.settings["partition.k"] == 1, said=False),
    Row("partition.method", "as stated", "the config states partition.method", "as the config states",
        lambda c: True, said=False),
    Row("model.lengths_from_bound", "on", "N x epsilon at least {LENGTHS_SCALE:,}, not a declared table, and the "
        "config leaves the release's length histogram open",
        "A noisy histogram of record lengths is measured, and the release follows it while each group keeps its "
        "items' and pairs' frequencies (N x epsilon is at least {LENGTHS_SCALE:,}).", _lengths),
    Row("model.lengths_from_bound", "off", "otherwise", "The release follows no record-length histogram: the data "
        "are a declared table, the config turns it off, or N x epsilon is below {LENGTHS_SCALE:,}, where its noise "
        "outweighs what it corrects.", lambda c: True, said=False),
    Row("model.options", "all_pairs", "a tree, the release follows lengths and N x epsilon per pair of items is at "
        "least {ALL_PAIRS_SCALE:,.4g}",
        "Each group's tree is the heaviest at every pair's noisy count: every pair's count is measured, and the "
        "release follows every pair (N x epsilon = {scale:,.0f} over {pairs:,.0f} pairs is at least "
        "{ALL_PAIRS_SCALE:,.4g}).", lambda c: bool(c.settings.get("model.options", {}).get("all_pairs"))),
    Row("model.options", "selected edges", "otherwise, for a tree", "Each tree's edges are chosen privately "
        "(the exponential mechanism) and only their pairs are counted.", lambda c: c.settings["model.kind"] == "tree",
        said=False),
    Row("model.options", "{TRAINED_OPTIONS[vae]}", "a VAE (conv_vae: its latent)", "fixed by dpgm/rules.py",
        lambda c: True, said=False),
    Row("model.pairs_noise_multiplier", "one tree of pairs over all records", "N x epsilon at least {PAIRS_SCALE:,}, "
        "a model not a tree, at most {PAIRS_MAX_ITEMS:,} items, no length histogram",
        "One tree of item pairs is measured over all records, and the release's item and pair frequencies follow it "
        "(N x epsilon is at least {PAIRS_SCALE:,}).",
        lambda c: c.settings["model.pairs_noise_multiplier"] is not None),
    Row("model.pairs_noise_multiplier", "none", "otherwise", "No pairs are measured over all records.",
        lambda c: True, said=False),
    Row("model.totals_noise_multiplier", "every value's count over all records", "a declared table in k > 1 groups",
        "Every value's count over all records is measured once ({TABLE_TOTALS_SHARE:.0%} of rho, from the means'), "
        "and the groups' means are made to agree with it: their sum alone would carry every group's noise.",
        lambda c: c.settings["model.totals_noise_multiplier"] is not None),
    Row("model.totals_noise_multiplier", "none", "otherwise", "No value's count is measured over all records.",
        lambda c: True, said=False),
    Row("partition.merge_below", "{MERGE_BELOW:g}", "k > 1 over at most {PAIRS_MAX_ITEMS:,} items, not a declared "
        "table, a partitioner whose budget the means can take, parts not stated",
        "The items' dependence on each other is measured first, and the records form one group where it is below "
        "{MERGE_BELOW:g} per record and edge, its means taking the partition's budget (items that barely depend on "
        "each other: groups would only split the records).", lambda c: c.settings["partition.merge_below"] > 0),
    Row("partition.merge_below", "0", "otherwise", "The groups are kept as planned.", lambda c: True, said=False),
    Row("partition.empty_part_noise_multiplier", "a noisy count of the empty records", "records may be empty (data."
        "min_items 0, not a declared table, no length histogram the release follows) and the length bound is measured",
        "{empty}; the release draws no empty record where the length bound's noisy histogram holds no record of one "
        "item although its cut would have let through a length of {EMPTY_SEEN_SHARE:.0%} of the records, nor where "
        "that histogram's cut lets through long records and no short one and the count is below "
        "{EMPTY_DENSE_CUT:g} of its noise stds (dense records: the count's noise alone would draw some empty)",
        lambda c: _empty(c) and c.settings["model.mean_clip_quantile"] is not None and rules.EMPTY_SEEN_SHARE > 0,
        said=False),
    Row("partition.empty_part_noise_multiplier", "a noisy count of the empty records", "records may be empty",
        "{empty}", _empty, said=False),
    Row("partition.empty_part_noise_multiplier", "none", "otherwise", "not released: no record can be empty "
        "(declared), the release's length histogram counts them, or they stay in the groups", lambda c: True,
        said=False),
)
#: The settings the table gives reasons for, in the order the report states them.
DECIDED = tuple(dict.fromkeys(row.setting for row in TABLE))


def constants() -> dict[str, Any]:
    """Every constant of dpgm.rules by name (read at call time: a patched rule is described as it acts)."""
    return {name: value for name, value in vars(rules).items() if name.isupper()}


def row_for(setting: str, case: Case) -> Row:
    """The first row of ``setting`` whose condition holds."""
    return next(row for row in TABLE if row.setting == setting and row.holds(case))


#: Multipliers whose release another setting switches on (null: nothing is released; the multiplier is the config's
#: default, unread).
RELEASED_WITH = {"model.length_bound_noise_multiplier": "model.mean_clip_quantile"}


def share_reason(value: Any, rho: float) -> str:
    """A Gaussian release's multiplier in words: the share of rho its 1 / (2 sigma^2) costs, or none."""
    return "not released" if value is None else f"{1 / (2 * value**2) / rho:.1%} of rho (a Gaussian release)"


def released(key: str, settings: dict[str, Any]) -> bool:
    """Whether ``key``'s release happens under ``settings`` (``RELEASED_WITH``)."""
    switch = RELEASED_WITH.get(key)
    return switch is None or settings.get(switch) is not None


@dataclass(frozen=True)
class Plan:
    """The settings ``rules: public`` chooses for some public facts, each beside its reason in words."""

    facts: PublicFacts
    settings: dict[str, Any]
    reasons: dict[str, str]
    said: tuple[str, ...]  # the decided settings whose reasons the privacy report states


def plan(facts: PublicFacts, *, top_items: int | None = None, **options: Any) -> Plan:
    """The rules' plan for ``facts`` (``options``: as for ``rules.public_defaults``, what a config states)."""
    settings = rules.public_defaults(facts, top_items=top_items, **options)
    items = facts.n_items if top_items is None else min(top_items, facts.n_items)
    case, values, rho = Case(facts, items, settings), constants(), zcdp_rho(facts.epsilon, facts.delta)
    values.update(case.words())
    reasons = {key: (share_reason(value if released(key, settings) else None, rho) if key.endswith("noise_multiplier")
                     else "fixed by dpgm/rules.py") for key, value in settings.items()}
    if settings["model.kind"] in STATISTICS_ONLY:  # its models are released statistics: DP-SGD's settings are idle
        reasons.update({key: f"unused: {settings['model.kind']} models take no DP-SGD step"
                        for key in settings if key.startswith("training.")})
    if settings["partition.k"] > 1:  # the partitioner's releases share its multiplier
        reasons["partition.noise_multiplier"] = f"{rules.PARTITION_SHARE:.0%} of rho over the partitioner's releases"
    rows = {setting: row_for(setting, case) for setting in DECIDED if setting in settings}
    reasons.update({setting: row.why.format(**values) for setting, row in rows.items()})
    return Plan(facts, settings, reasons, tuple(setting for setting, row in rows.items() if row.said))


def words(p: Plan) -> str:
    """Which model family and how many groups the plan chose, and why, then what else it measures (the report's)."""
    inputs = f"{records_words(p.facts)} and epsilon = {p.facts.epsilon:g}"
    extra = [p.reasons[key] for key in p.said if key not in ("model.kind", "partition.k")]
    return " ".join([f"The rules chose {p.reasons['model.kind']}, in {p.reasons['partition.k']}, from {inputs}.",
                     *extra])


def records_words(facts: PublicFacts) -> str:
    """n as the rules read it, in words: the noisy count, else the magnitude N standing for n."""
    if facts.records is None:
        return f"N = {facts.records_magnitude:,}"
    return f"N = {facts.size:,.0f} (a noisy count of the records)"


def config_plan(cfg: Config, facts: PublicFacts, stated: frozenset[str]) -> tuple[Plan, frozenset[str]]:
    """The plan for a config that states ``stated`` (dotted keys) and the settings it keeps (those and what its
    options rule out: a label per part or a stated length histogram rule out the empty part)."""
    no_empty_part = cfg.partition.method == "label" or cfg.model.follows_lengths
    if no_empty_part:  # plan as if no record could be empty (its share goes to the rest)
        facts = dataclasses.replace(facts, min_items=max(facts.min_items, 1))
    method = cfg.partition.method
    options = {
        "kind": cfg.model.kind if "model.kind" in stated else None,
        "partitioner": method if "partition.method" in stated and method in rules.PARTITIONER_RULES else None,
        # no global pairs where those options rule them out or the config turns them off: their share stays
        "pairs": not no_empty_part and not ("model.pairs_noise_multiplier" in stated
                                            and cfg.model.pairs_noise_multiplier is None),
        # stated parts are kept as stated; a partition calibrated to its own epsilon has no fixed budget to move
        "merge": rules.parts_open(stated) and cfg.partition.target_epsilon is None,
        # the release's lengths from the bound's histogram unless the config states its own (or none) or no bound
        "bound": not ("model.mean_clip_quantile" in stated and cfg.model.mean_clip_quantile is None),
        "bound_lengths": not ("model.length_noise_multiplier" in stated
                              or ("model.lengths_from_bound" in stated and not cfg.model.lengths_from_bound)),
    }
    facts = dataclasses.replace(facts, lengths=facts.lengths and rules.lengths_open(cfg, stated))
    left = frozenset({"partition.empty_part_noise_multiplier"} if no_empty_part else ())
    return plan(facts, top_items=cfg.data.top_items, **options), stated | left


def apply_plan(cfg: Config, p: Plan, kept: frozenset[str]) -> dict[str, Any]:
    """Set every setting of ``p`` but the ``kept`` ones on ``cfg`` and validate it; returns what was set. A setting
    that is not an option of the config is refused (ConfigError) before anything is set."""
    chosen = {key: value for key, value in p.settings.items() if key not in kept}
    for key in chosen:
        section, _, name = key.partition(".")
        part = getattr(cfg, section, None)
        if not dataclasses.is_dataclass(part) or name not in {f.name for f in dataclasses.fields(part)}:
            raise ConfigError(f"rules: {key} is not an option of the config")
    for key, value in chosen.items():
        section, _, name = key.partition(".")
        setattr(getattr(cfg, section), name, value)
    cfg.validate()
    return chosen


def apply_public_rules(cfg: Config, facts: PublicFacts, stated: frozenset[str]) -> dict[str, Any]:
    """Set every option ``cfg`` does not state (``stated``: dotted keys) to its rule; returns what was set."""
    return apply_plan(cfg, *config_plan(cfg, facts, stated))



class _Words(string.Formatter):
    """Formats a row's text where some values are words (the table's page), not numbers (a plan's)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return value if isinstance(value, str) else format(value, format_spec)


def table_markdown() -> str:
    """The decision table as a Markdown table (docs/guide/rules.md holds it; a test keeps the two the same)."""
    values = {**constants(), "tree": "a tree of items per group", "scale": "(its value)", "k": "k",
              "empty": "its share of rho",
              "kind": "the stated model", "attributes": "T", "min_items": "data.min_items", "pairs": "m (m - 1) / 2"}
    lines = ["| setting | value | when | why |", "|---|---|---|---|"]
    for row in TABLE:
        cells = (f"`{row.setting}`", row.value, row.when, row.why)
        lines.append("| " + " | ".join(_Words().format(cell, **values) for cell in cells) + " |")
    return "\n".join(lines)
