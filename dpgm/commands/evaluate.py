"""``dpgm evaluate`` (``python evaluate.py``): synthetic data against the real data: counting
queries (DPGM paper section 6.3), marginal distances, a declared table's metrics, an HTML report.

    dpgm evaluate counting --real msnbc/msnbc.txt.gz --synthetic synthetic.csv --json eval.json
    dpgm evaluate counting --real retail/retail.txt.gz --top-items 100 \\
        --baseline mwem --baseline marginals --epsilon 1 --seed 0
    dpgm evaluate marginals --real msnbc/msnbc.txt.gz --synthetic synthetic.csv
    dpgm evaluate tables --real bank.csv.gz --synthetic synthetic.csv --schema bank.schema.json --target y \\
        --out metrics.json
    dpgm evaluate report --real msnbc/msnbc.txt.gz --synthetic synthetic.csv --out report.html
    dpgm evaluate report --real bank.csv.gz --synthetic synthetic.csv --schema bank.schema.json --out report.html
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import yaml

from dpgm.config_fields import check_epsilon
from dpgm.errors import ConfigError
from dpgm.evaluation.counting import (
    BASELINES,
    load_records,
    load_synthetic,
    options_among,
    run_baseline,
    start_evaluation,
)
from dpgm.evaluation.table_data import Table
from dpgm.evaluation.table_metrics import DEFAULT_MAX_TRIPLES, TableMetrics
from dpgm.io import atomic_write_json, check_output
from dpgm.locations import data_dir, resolve_data_path
from dpgm.privacy.verdict import judge, stamped
from dpgm.progress import progress_scope
from dpgm.registry import Registry
from dpgm.tables import TableSchema


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 through run_cli
        raise ConfigError(message)


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = _Parser(prog=prog, description="Evaluate synthetic data against the real data.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser(
        "counting",
        help="relative error of random counting queries (paper section 6.3)",
        description="Draw N random item-set queries in 5 length groups (group i: lengths 1..i*maxlen/5, "
        "maxlen = longest real record); a query counts the records holding at least one of its items. "
        "Prints the mean relative error per group and method.",
    )
    c.add_argument("--real", required=True, help="real data: transactions file, or CSV (.csv) with a header")
    c.add_argument("--synthetic", action="append", default=[], metavar="PATH",
                   help="synthetic data (CSV with the real item names, or transactions with the real item ids); "
                   "repeatable")
    c.add_argument("--baseline", action="append", default=[], choices=BASELINES,
                   help="also run a DP baseline on the real data at --epsilon (repeatable)")
    c.add_argument("--epsilon", type=float, default=None, help="privacy budget of each baseline")
    c.add_argument("--delta", type=float, default=None,
                   help="delta of each baseline (default: 1/(100 N) for the power of ten N <= n < 10 N, as dpgm train)")
    c.add_argument("--accounting", choices=("rdp", "pure"), default="rdp",
                   help="rdp: calibrate baselines so the RDP accountant's epsilon at delta is --epsilon; "
                   "pure: spend --epsilon as pure epsilon (laplace marginals, mwem)")
    c.add_argument("--mechanism", choices=("gaussian", "laplace"), default="gaussian",
                   help="noise of the marginals baseline")
    c.add_argument("--rounds", type=int, default=50, help="MWEM rounds T (paper: 50)")
    c.add_argument("--baseline-option", action="append", default=[], metavar="METHOD.NAME=VALUE",
                   help="an option of one --baseline (the fields of the options dataclass it registers in "
                        "dpgm/evaluation/baselines.py, e.g. aim.max_rounds=20; the value is read as YAML; repeatable)")
    c.add_argument("--queries", type=int, default=1000, help="number of queries (default 1000)")
    c.add_argument("--top-items", type=int, default=None,
                   help="transactions: keep the M most frequent items (exact counts: evaluation set-up)")
    c.add_argument("--limit", type=int, default=None, help="use only the first N real records")
    c.add_argument("--seed", type=int, default=None, help="seed of queries and baselines (default: OS entropy)")
    c.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON")
    t = sub.add_parser("marginals", help="average TVD of 1-, 2-, 3-way marginals and of record lengths")
    t.add_argument("--real", required=True, help="real data: transactions file, or CSV (.csv) with a header")
    t.add_argument("--synthetic", action="append", required=True, metavar="PATH", help="synthetic data; repeatable")
    t.add_argument("--top-items", type=int, default=None, help="transactions: keep the M most frequent items")
    t.add_argument("--limit", type=int, default=None, help="use only the first N real records")
    t.add_argument("--max-triples", type=int, default=5000,
                   help="all 3-way marginals up to this many, else a seeded sample of this size")
    t.add_argument("--seed", type=int, default=0, help="seed of the sample of triples (default 0)")
    t.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON")
    _tables_parser(sub)
    r = sub.add_parser(
        "report", help="a self-contained HTML page comparing one release with the real data",
        description="Plots (item frequencies, record lengths, pair co-occurrence and correlation, counting-query "
        "errors, image samples, label counts) and a plain-language summary in one HTML file. Not private: "
        "it reads the real data; keep the page with the data custodian.")
    r.add_argument("--real", required=True,
                   help="real data: transactions file, CSV (.csv) with a header, or digits, mnist, mnist:test")
    r.add_argument("--synthetic", required=True, metavar="PATH",
                   help="the release (CSV with the real item names, or transactions with the real item ids)")
    r.add_argument("--out", required=True, help="the HTML file to write (its folder must exist unless --mkdir)")
    r.add_argument("--mkdir", action="store_true", help="create the output's folder if it does not exist")
    r.add_argument("--top-items", type=int, default=None,
                   help="transactions: keep the M most frequent items (not with --schema)")
    r.add_argument("--limit", type=int, default=None, help="use only the first N real records")
    r.add_argument("--label-column", default="label",
                   help="CSV column holding labels, used when both files have it (default: label; not with --schema)")
    r.add_argument("--image-shape", default=None, metavar="HxW",
                   help="draw records as HxW images (default: known image data and px0..pxN columns; not with "
                   "--schema)")
    r.add_argument("--max-shown", type=int, default=50,
                   help="items in the pair matrices: the most frequent (default 50; not with --schema)")
    r.add_argument("--queries", type=int, default=1000,
                   help="number of counting queries (default 1000; not with --schema)")
    r.add_argument("--seed", type=int, default=0,
                   help="seed of the queries and image samples, or of a table's triples and split (default 0)")
    r.add_argument("--schema", default=None,
                   help="the real data is a declared table with this schema: the table view (per-column plots, "
                   "workload error, train-on-synthetic, the release's privacy verdict)")
    _table_options(r)
    r.add_argument("--privacy", default=None, metavar="JSON",
                   help="with --schema: the release's privacy report (default: SYNTHETIC.privacy.json when present; "
                   "else runs/NAME/release/privacy_report.json)")
    r.set_defaults(**{dest: None for options in VIEW_OPTIONS.values() for dest in options})  # None: not given
    for command in sub.choices.values():
        command.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p.parse_args(argv)


#: The report's options that only one of its views reads, each with its default: an option of the other view is
#: refused rather than silently ignored (``view_options``).
VIEW_OPTIONS = {
    "items": {"top_items": None, "image_shape": None, "max_shown": 50, "queries": 1000, "label_column": "label"},
    "table": {"target": None, "no_target": False, "holdout": None, "split": 0.2,
              "max_triples": DEFAULT_MAX_TRIPLES, "privacy": None},
}
#: Which data each report view is for, in the words of the refusal.
VIEW_WORDS = {"items": "transactions, 0/1 CSV or images, not for a declared table (--schema)",
              "table": "a declared table: give --schema too"}


def view_options(args: argparse.Namespace, view: str) -> None:
    """Refuse an option the report's ``view`` does not read (one line), then fill in its own options' defaults."""
    for owner, options in VIEW_OPTIONS.items():
        for dest, default in options.items():
            if getattr(args, dest) is None:
                setattr(args, dest, default)
            elif owner != view:
                raise ConfigError(f"--{dest.replace('_', '-')} is for {VIEW_WORDS[owner]}")


def _table_options(parser: argparse.ArgumentParser) -> None:
    """The options of a declared table's metrics (``tables``, and ``report`` with --schema)."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--target", default=None, metavar="COLUMN",
                        help="train-on-synthetic: the column a classifier predicts (default: the schema's "
                        "target, where it declares one)")
    target.add_argument("--no-target", action="store_true",
                        help="no train-on-synthetic, even where the schema declares a target")
    held = parser.add_mutually_exclusive_group()
    held.add_argument("--holdout", default=None, metavar="PATH",
                      help="real records kept out of the synthesizer's training (CSV of the schema), to test on")
    held.add_argument("--split", type=float, default=0.2,
                      help="without --holdout: test on this random share of --real (default 0.2; the release "
                      "likely saw those records, which flatters it)")
    parser.add_argument("--max-triples", type=int, default=DEFAULT_MAX_TRIPLES,
                        help=f"all 3-way marginals up to this many, else a seeded sample of this size "
                        f"(default {DEFAULT_MAX_TRIPLES})")


def _tables_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "tables", help="a declared table: workload error, Wasserstein distances, train-on-synthetic",
        description="AIM's workload error (mean total variation distance of the 1-, 2- and 3-way marginals of "
        "the columns, on the schema's categories and bins), each numeric column's Wasserstein distance within "
        "its bounds (divided by their width), and with --target a gradient-boosted classifier trained on the "
        "release and on real records, both tested on real records held out (AUC, accuracy).")
    t.add_argument("--real", required=True, help="the real table: CSV (plain or .gz), header in the schema's order")
    t.add_argument("--synthetic", required=True, metavar="PATH", help="the release: CSV as generate.py writes it")
    t.add_argument("--schema", required=True, help="the table's declared schema (JSON or YAML)")
    _table_options(t)
    t.add_argument("--limit", type=int, default=None, help="use only the first N real records")
    t.add_argument("--seed", type=int, default=0, help="seed of the sample of triples and the split (default 0)")
    t.add_argument("--out", default=None, metavar="JSON", help="write the results as JSON")


def _check_report_paths(args: argparse.Namespace) -> None:
    """Bad paths fail here, in a fraction of a second, before the data or matplotlib load."""
    from dpgm.quality.inputs import is_named_source

    given = (("--real", args.real), ("--synthetic", args.synthetic), ("--schema", args.schema),
             ("--holdout", args.holdout), ("--privacy", args.privacy))
    for flag, path in given:
        if path is None or (flag == "--real" and is_named_source(path)):
            continue
        if not resolve_data_path(path).is_file():
            hint = "" if Path(path).is_absolute() else f" (also looked in {data_dir()})"
            raise ConfigError(f"{flag} {path}: file not found{hint}")
    check_output(Path(args.out), mkdir=args.mkdir)
    if args.max_shown < 1:
        raise ConfigError(f"--max-shown must be >= 1, got {args.max_shown}")


#: The report's views by the kind of data: a declared table's (``--schema``), or items' (transactions, 0/1, images).
REPORT_VIEWS: Registry[Callable[[argparse.Namespace], str]] = Registry("report view")


@REPORT_VIEWS.register("items", doc="transactions, 0/1 CSV or images: items, pairs, counting queries, samples")
def items_page(args: argparse.Namespace) -> str:
    from dpgm.quality import build_report, compare, load_pair
    from dpgm.quality.inputs import parse_image_shape

    shape = None if args.image_shape is None else parse_image_shape(args.image_shape)
    real, synthetic = load_pair(args.real, args.synthetic, label_column=args.label_column,
                                top_items=args.top_items, limit=args.limit, image_shape=shape)
    comparison = compare(real, synthetic, max_shown=args.max_shown, n_queries=args.queries, seed=args.seed)
    return build_report(comparison, progress=not args.no_progress)


@REPORT_VIEWS.register("table", doc="a declared table (--schema): columns, workload error, train-on-synthetic")
def table_page(args: argparse.Namespace) -> str:
    from dpgm.evaluation.table_metrics import evaluate_table
    from dpgm.quality.page import created_now
    from dpgm.quality.release_privacy import release_privacy
    from dpgm.quality.table_compare import compare_tables
    from dpgm.quality.table_page import build_table_report

    privacy = release_privacy(args.privacy, args.synthetic)
    real, synthetic, holdout = _read_tables(args)
    metrics = evaluate_table(real, synthetic, target=_target(args, real.schema), holdout=holdout, split=args.split,
                             max_triples=args.max_triples, seed=args.seed)
    return build_table_report(compare_tables(real, synthetic, metrics, privacy), created=created_now(),
                              progress=not args.no_progress)


def report(args: argparse.Namespace) -> int:
    view = "items" if args.schema is None else "table"
    view_options(args, view)
    _check_report_paths(args)
    from dpgm.quality import write_report

    write_report(args.out, REPORT_VIEWS.entry(view).factory(args))
    print(f"wrote {args.out} (not private: keep it with the data custodian)")
    return 0


def marginals(args: argparse.Namespace) -> int:
    from dpgm.evaluation.marginal_tvd import marginal_tvd

    real = load_records(resolve_data_path(args.real), top_items=args.top_items, limit=args.limit)
    reasons = _not_private(None)  # its seed draws the triples compared, no noise
    rows = {}
    print(f"{'synthetic':<40} {'1-way':>8} {'2-way':>8} {'3-way':>8} {'length':>8}  (mean TVD)")
    for path in args.synthetic:
        res = marginal_tvd(real, load_synthetic(path, real), max_triples=args.max_triples,
                           rng=np.random.default_rng(args.seed))
        rows[str(path)] = res.to_dict()
        print(f"{path!s:<40} {res.oneway:>8.4f} {res.twoway:>8.4f} {res.threeway:>8.4f} {res.length:>8.4f}")
    if args.json:
        atomic_write_json(args.json, stamped({"real": str(args.real), "seed": args.seed, "top_items": args.top_items,
                                              "limit": args.limit, "marginal_tvd": rows}, reasons))
        print(f"wrote {args.json}")
    return 0


def tables(args: argparse.Namespace) -> int:
    from dpgm.evaluation.table_metrics import evaluate_table

    if args.out:
        check_output(Path(args.out), mkdir=False)
    real, synthetic, holdout = _read_tables(args)
    reasons = _not_private(None)  # its seed draws the triples and the split, no noise
    result = evaluate_table(real, synthetic, target=_target(args, real.schema), holdout=holdout, split=args.split,
                            max_triples=args.max_triples, seed=args.seed)
    for line in metric_lines(result):
        print(line)
    if args.out:
        out = {"real": str(args.real), "synthetic": str(args.synthetic), "schema": str(args.schema),
               "holdout": args.holdout, "limit": args.limit, **result.to_dict()}
        atomic_write_json(args.out, stamped(out, reasons))
        print(f"wrote {args.out}")
    return 0


def _read_tables(args: argparse.Namespace) -> tuple[Table, Table, Table | None]:
    """The real, synthetic and hold-out tables read against --schema (hold-out None without --holdout)."""
    from dpgm.evaluation.table_data import read_table
    from dpgm.tables import table_schema

    schema = table_schema(args.schema)
    if _target(args, schema) is None and args.holdout is not None:
        raise ConfigError("--holdout is for train-on-synthetic: give --target COLUMN too")
    holdout = None if args.holdout is None else read_table(args.holdout, schema)
    return read_table(args.real, schema, limit=args.limit), read_table(args.synthetic, schema), holdout


def _target(args: argparse.Namespace, schema: TableSchema) -> str | None:
    """The column train-on-synthetic predicts: --target, else the schema's declared target (none with --no-target)."""
    return None if args.no_target else args.target if args.target is not None else schema.target


def metric_lines(result: TableMetrics) -> list[str]:
    """The table metrics in a few printed lines."""
    w = result.workload
    lines = [(f"workload error (mean TVD): 1-way {w.oneway:.4f}, 2-way {w.twoway:.4f}, 3-way {w.threeway:.4f} "
              f"({result.triples}); all {w.average:.4f}")]
    if result.wasserstein:
        lines.append("wasserstein distance / bounds' width: " + ", ".join(
            f"{name} {'n/a' if d is None else f'{d:.4f}'}" for name, d in result.wasserstein.items()))
    tos = result.train_on_synthetic
    if tos is not None:
        for side, score in (("synthetic", tos.synthetic), ("real", tos.real)):
            auc = "n/a" if score.auc is None else f"{score.auc:.4f}"
            lines.append(f"trained on {side}: AUC {auc}, accuracy {score.accuracy:.4f} ({tos.target!r}, "
                         f"tested on {tos.n_test} real records)")
    return lines


def _not_private(seed: int | None) -> list[str]:
    """Why an evaluation is not private: exact figures of the real data (and replayable baselines, when seeded).
    Prints the verdict's headline, the first line of its output."""
    reasons = ["real_data"] + (["seeded"] if seed is not None else [])
    print(judge({"not_private": reasons}).headline)
    return reasons


def baseline_settings(assignments: Sequence[str], methods: Sequence[str]) -> dict[str, Any]:
    """``--baseline-option METHOD.NAME=VALUE`` as settings by dotted name; each names a --baseline of the run."""
    out: dict[str, Any] = {}
    for item in assignments:
        key, sep, raw = item.partition("=")
        method, dot, name = key.partition(".")
        if not (sep and dot and name) or method not in methods:
            raise ConfigError(f"--baseline-option {item!r}: expected METHOD.NAME=VALUE, METHOD one of this run's "
                              f"--baseline ({', '.join(methods) or 'none given'})")
        try:
            out[key] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ConfigError(f"--baseline-option {item!r}: cannot read the value") from None
    return out


def counting(args: argparse.Namespace) -> int:
    if not args.synthetic and not args.baseline:
        raise ConfigError("nothing to evaluate: give --synthetic PATH and/or --baseline mwem|marginals")
    if args.baseline and args.epsilon is None:
        raise ConfigError("--baseline needs --epsilon")
    if args.baseline:
        check_epsilon(args.epsilon, "--epsilon")  # before the data are read, as the baselines' options
    settings = {"accounting": args.accounting, "mwem.rounds": args.rounds, "marginals.mechanism": args.mechanism,
                **baseline_settings(args.baseline_option, args.baseline)}
    options = {method: options_among(method, settings) for method in args.baseline}
    real = load_records(resolve_data_path(args.real), top_items=args.top_items, limit=args.limit)
    reasons = _not_private(args.seed)
    seeds = np.random.SeedSequence(args.seed).spawn(1 + len(args.baseline))
    evaluation = start_evaluation(real, args.queries, np.random.default_rng(seeds[0]))
    for path in args.synthetic:
        evaluation.add(str(path), load_synthetic(path, real))
    for method, seed in zip(args.baseline, seeds[1:]):
        synthetic, report = run_baseline(method, real, evaluation.queries, epsilon=args.epsilon, delta=args.delta,
                                         rng=np.random.default_rng(seed), options=options[method])
        evaluation.add(method, synthetic, report)
        pure = "n/a" if report.get("pure_epsilon") is None else f"{report['pure_epsilon']:.4g}"  # zCDP: none
        print(f"{method}: epsilon = {report['epsilon']:.4f} (RDP accountant; pure epsilon {pure}), "
              f"delta = {report['delta']:.3g}, neighbouring = {report['neighbouring']}")
    print(f"{len(evaluation.queries)} queries on {args.real} ({real.n_records} records, {real.n_items} items, "
          f"maxlen {evaluation.queries.maxlen}); mean relative error:")
    print(evaluation.table())
    if args.json:
        out = {"real": str(args.real), "seed": args.seed, "top_items": args.top_items, "limit": args.limit,
               **evaluation.to_dict()}
        atomic_write_json(args.json, stamped(out, reasons))
        print(f"wrote {args.json}")
    return 0


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    commands = {"counting": counting, "marginals": marginals, "tables": tables, "report": report}
    with progress_scope(enabled=not args.no_progress):
        return commands[args.command](args)

