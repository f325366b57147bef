"""``dpgm``: the console script, one subcommand per command-line front (``python -m dpgm`` too).

    dpgm train --config digits                                  # a shipped config, by name
    dpgm generate --run runs/digits --n 1000 --out synthetic.csv
    dpgm evaluate counting --real msnbc/msnbc.txt.gz --synthetic synthetic.csv
    dpgm audit --config digits
    dpgm sketch spec --items 64 --seed 7 -o spec.json
    dpgm config                                                 # every option, default, meaning
    dpgm plan --records 1e5 --items 100 --epsilon 1             # what rules: public would do, and why
    dpgm schema data.csv --out data.schema.json                 # a draft schema for the owner to review
    dpgm schema data.csv --private declared.json --epsilon 1 --delta 1e-7 --out data.schema.json

A command's module is imported only when it runs: ``dpgm generate`` with a bad path fails
before torch loads. Errors are one line and exit code 2 (``dpgm.cli.run_cli``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from dpgm import __version__
from dpgm.cli import EXIT_USAGE, run_cli
from dpgm.errors import ConfigError

Command = Callable[[Sequence[str]], int]


def _train(argv: Sequence[str]) -> int:
    from dpgm.commands.train import main

    return main(argv, prog="dpgm train")


def _generate(argv: Sequence[str]) -> int:
    from dpgm.commands.generate import main

    return main(argv, prog="dpgm generate")


def _evaluate(argv: Sequence[str]) -> int:
    from dpgm.commands.evaluate import main

    return main(argv, prog="dpgm evaluate")


def _audit(argv: Sequence[str]) -> int:
    from dpgm.audit.cli import main  # torch loads here

    return main(argv)


def _sketch(argv: Sequence[str]) -> int:
    from dpgm.commands.sketch import main

    return main(argv, prog="dpgm sketch")


def _plan(argv: Sequence[str]) -> int:
    from dpgm.commands.plan import main

    return main(argv, prog="dpgm plan")


def _schema(argv: Sequence[str]) -> int:
    from dpgm.commands.schema import main

    return main(argv, prog="dpgm schema")


def components() -> dict[str, str]:
    """The components registered for each config key that names one (partitioners, models), in words:
    what the options' help lists, read from the registries so that it cannot drift from them."""
    from dpgm.clustering import PARTITIONERS
    from dpgm.models import MODELS

    return {registry.key: registry.listing() for registry in (PARTITIONERS, MODELS)}


def component_options() -> dict[str, dict[str, type]]:
    """Each registered model kind's options dataclass, under ``model.options`` (what the help lists of it)."""
    from dpgm.models import MODELS

    return {"model.options": {name: entry.options for name, entry in MODELS.entries.items() if entry.options}}


def _config(argv: Sequence[str]) -> int:
    from dpgm.config import describe, shipped_config_names

    if argv:
        raise ConfigError(f"dpgm config takes no arguments, got {' '.join(argv)}")
    print("\n".join(describe(registered=components(), kinds=component_options())))
    print(f"\nshipped configs (dpgm train --config NAME): {', '.join(shipped_config_names())}")
    return 0


#: name -> (function, one line of help)
COMMANDS: dict[str, tuple[Command, str]] = {
    "train": (_train, "train a run: DP partition, one model per part by DP-SGD, privacy report"),
    "generate": (_generate, "draw synthetic records from a run's release (post-processing)"),
    "evaluate": (_evaluate, "compare synthetic with real data: counting, marginals, report (not private)"),
    "audit": (_audit, "empirical privacy audit of the DP-SGD training in one run"),
    "sketch": (_sketch, "compressive k-means over data held by several parties"),
    "config": (_config, "print every config option, its default and its meaning"),
    "schema": (_schema, ("draft a table's schema from a CSV file for its owner to review (read off the data), "
                         "or measure a declaration's private parts by DP releases (--private)")),
    "plan": (_plan, "print what rules: public would choose for some public facts, and why (no data read)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: dpgm {{{','.join(COMMANDS)}}} ...", "",
             "Differentially private synthetic data from a mixture of deep generative models.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "dpgm COMMAND --help: that command's options. dpgm --version: the version."]
    return "\n".join(lines)


def dispatch(argv: Sequence[str] | None = None) -> int:
    """Run ``dpgm COMMAND ARGS...`` (``argv`` without the program name; default: ``sys.argv[1:]``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(usage(), file=sys.stderr)
        return EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name in ("-h", "--help"):
        print(usage())
        return 0
    if name in ("-V", "--version"):
        print(f"dpgm {__version__}")
        return 0
    if name not in COMMANDS:
        raise ConfigError(f"dpgm: unknown command {name!r} (choose from {', '.join(COMMANDS)})")
    return COMMANDS[name][0](rest)


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``dpgm``: errors as one line and exit code 2."""
    return run_cli(dispatch, argv)
