"""``dpgm plan``: what ``rules: public`` would do for some public facts, and why, before anything reads data.

    dpgm plan --records 1e5 --items 100 --epsilon 1
    dpgm plan --records 3000 --items 75 --epsilon 4 --attributes 37 --json
    dpgm plan --records 50000 --items 2733 --epsilon 1 --attribute-sizes 20 30 ... (one size per attribute)

The facts are those a run of the generic config (configs/transactions.yaml) reads: n (a run reads it as a noisy
count of its records, released first), the items, epsilon, delta (default 1/(100 N), N the power of ten with
N <= n < 10 N) and what the data section declares. Nothing here is private.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from dpgm.config import DEFAULT_CONFIG, Config, load_config
from dpgm.errors import ConfigError
from dpgm.pipeline.plan import declared_facts, rules_why, run_delta
from dpgm.plan import Plan, apply_plan, config_plan
from dpgm.privacy.calibrate import records_magnitude


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description="Print what rules: public would choose for these public "
                                "facts, and why (no data are read).")
    p.add_argument("--records", type=float, required=True, help="the number of records n, as a run reads it: "
                   "the noisy count its privacy report gives as noisy_records (its power of ten N sets the default "
                   "delta)")
    p.add_argument("--items", type=int, required=True, help="the number of items (the item universe)")
    p.add_argument("--epsilon", type=float, required=True, help="the whole run's budget")
    p.add_argument("--delta", type=float, default=None, help="default: 1/(100 N)")
    p.add_argument("--min-items", type=int, default=None, help="data.min_items, if declared")
    p.add_argument("--top-items", type=int, default=None, help="data.top_items, if set")
    p.add_argument("--attributes", type=int, default=None, help="data.attributes, for a declared table")
    p.add_argument("--attribute-sizes", type=int, nargs="+", default=None, metavar="SIZE",
                   help="data.attribute_sizes, a declared table's schema: the values of each attribute, adding up "
                        "to --items")
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"a config with rules: public (default: {DEFAULT_CONFIG})")
    p.add_argument("--json", action="store_true", help="one JSON object: facts, words, settings and reasons")
    return p.parse_args(argv)


def stated_config(args: argparse.Namespace) -> Config:
    """The config a run would train: ``--config`` with the budget and what the data section declares."""
    if args.records < 1 or args.items < 1 or args.epsilon <= 0:
        raise ConfigError("dpgm plan: --records and --items must be at least 1 and --epsilon above 0")
    if args.attribute_sizes is not None and sum(args.attribute_sizes) != args.items:
        raise ConfigError(f"dpgm plan: --attribute-sizes add up to {sum(args.attribute_sizes):,} values, "
                          f"not the {args.items:,} of --items")
    declared = {"privacy.target_epsilon": args.epsilon, "privacy.delta": args.delta, "data.min_items": args.min_items,
                "data.top_items": args.top_items, "data.attributes": args.attributes,
                "data.attribute_sizes": args.attribute_sizes}
    cfg = load_config(args.config, [f"{key}={json.dumps(value)}" for key, value in declared.items()
                                    if value is not None])
    if cfg.rules != "public":
        raise ConfigError(f"dpgm plan: {args.config} does not leave its options to the rules (rules: public)")
    return cfg


def planned(args: argparse.Namespace) -> tuple[Plan, dict[str, Any], str]:
    """The plan for the facts, the settings a run would take from it (what the config does not state) and the
    privacy report's words for it."""
    cfg = stated_config(args)
    magnitude = records_magnitude(int(args.records))
    facts = declared_facts(cfg, args.items, magnitude, run_delta(cfg, magnitude), records=args.records)
    p, kept = config_plan(cfg, facts, cfg.stated)
    apply_plan(cfg, p, kept)  # as a run's config: the report's words read the settings the plan gives it
    return p, {key: value for key, value in p.settings.items() if key not in kept}, rules_why(cfg, facts)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    p, settings, words = planned(args)
    f = p.facts
    if args.json:
        print(json.dumps({"facts": {"records": f.records, "records_magnitude": f.records_magnitude, "items": f.n_items,
                                    "epsilon": f.epsilon, "delta": f.delta, "min_items": f.min_items,
                                    "attributes": f.attributes},
                          "rules": words, "settings": {key: {"value": value, "reason": p.reasons[key]}
                                                       for key, value in settings.items()}}, indent=1))
        return 0
    print(f"n = {f.size:,.0f}, {f.n_items:,} items, epsilon = {f.epsilon:g}, delta = {f.delta:g}\n\n{words}\n")
    width = max(map(len, settings))
    print("\n".join(f"{key:<{width}}  {json.dumps(value)}  ({p.reasons[key]})" for key, value in settings.items()))
    return 0
