"""The package's layers: imports only go down, and no two parts import each other (no cycles).

privacy <- data/features/models <- clustering/evaluation <- artifact <- training <- stages/release <- pipeline <- CLIs
(docs/development.md). A new part must be given a layer here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("module_graph", ROOT / "benchmarks" / "module_graph.py")
module_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(module_graph)

LAYER = {
    "dpgm": 0, "errors": 0, "threads": 0,
    "report": 2.5,  # report.py: privacy_report.md in words, its first line the verdict (privacy/verdict.py)
    "streams": 0,  # draws from a torch generator on its own device (a GPU run keeps the CPU stream)
    "typed": 0.75,  # typed.py: a dataclass built from a mapping, each value checked against its annotation
    "registry": 1,
    "locations": 0.5,  # locations.py: the data directory and paths relative to it
    "tables": 1.1,  # declared tables: the schema, codecs by column kind, the table as attribute=value items
    "config_fields": 1,  # a documented option, its check, the words of a noise option's release
    "config_data": 1.25,  # the data section of a run's config (where the records come from, declared facts)
    "config_sections": 1.5,  # the typed sections of a run's config (dataclasses, their docs and checks)  # components by name (partitioners, models) and their typed options
    "io": 1,  # atomic writes and output-path checks (raise DpgmError)
    "progress": 1,  # progress.py: the stage bar (public totals, epsilon spent so far) every stage uses
    "privacy": 2, "config": 2,
    "cli": 2,  # cli.py: one-line errors and exit codes for every command-line front
    "rules": 3, "data": 3, "features": 3, "models": 3,
    "plan": 3.5,  # plan.py: the rules' settings beside their reasons (the decision table), for the report and dpgm plan
    "clustering": 4, "evaluation": 4,
    "artifact": 5, "imaging": 5,
    "training": 6,
    "quality": 6,  # the HTML quality report: evaluation statistics drawn with imaging's grids
    "stages": 7,  # the run's stages (dpgm/stages/): statistics releases and DP-SGD
    "mixture_draws": 6,  # mixture_draws.py: a part by its noisy share, then a record of its model (below release)
    "release_writers": 6,  # release_writers.py: the release's file formats (CSV, transactions, PNG), below release
    "release": 7,
    "pipeline": 8,  # a run: its plan and the loop over its stages
    "audit": 9, "sketch": 9, "api": 9,
    "commands": 10,  # dpgm/commands: the console script dpgm and its subcommands (train.py & co. call them)
    "main": 11,  # every __main__.py: the command-line fronts (python -m dpgm runs dpgm.commands)
}


def test_every_part_has_a_layer_and_imports_only_go_down() -> None:
    edges = module_graph.graph(ROOT / "dpgm")
    unknown = sorted(set(edges) - set(LAYER))
    assert unknown == [], f"give these parts a layer in tests/test_layers.py: {unknown}"
    upward = [f"{src} -> {dst}" for src, dsts in edges.items() for dst in dsts if LAYER[dst] >= LAYER[src]]
    assert upward == []


def test_no_import_cycles() -> None:
    assert module_graph.cycles(module_graph.graph(ROOT / "dpgm")) == []


def test_the_checker_sees_a_cycle_and_an_upward_import() -> None:
    edges = {"release": {"training"}, "training": {"release", "privacy"}, "privacy": set()}
    assert module_graph.cycles(edges) == [["release", "training"]]
    assert LAYER["training"] < LAYER["release"]
