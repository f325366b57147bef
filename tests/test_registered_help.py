"""Every help text and page that names components lists every registered one: the options' help
reads the registries (partitioners, model kinds, baselines), and the guides' tables are checked
against them, so a new component cannot be left out."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dpgm.clustering import PARTITIONERS
from dpgm.commands.main import components, main
from dpgm.config import describe
from dpgm.evaluation.baselines import BASELINES
from dpgm.models import MODELS
from dpgm.stages import STAGES
from tests._forked import run_script
from tests.test_docs import generator

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = {"partition.method": PARTITIONERS, "model.kind": MODELS}


def option_line(lines: list[str], key: str) -> str:
    [line] = [line for line in lines if line.strip().startswith(f"{key} = ")]
    return line


def table_names(page: str, header: str) -> set[str]:
    """The backquoted names in the first column of the table under ``header`` in ``page``."""
    text = (ROOT / "docs" / page).read_text()
    rows = text.split(f"| {header} |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


@pytest.mark.parametrize("key", sorted(REGISTRIES))
def test_the_config_help_lists_every_registered_component(key: str, capsys) -> None:
    assert main(["config"]) == 0
    line = option_line(capsys.readouterr().out.splitlines(), key)
    for name in REGISTRIES[key].names():
        assert f" {name}: {REGISTRIES[key].entries[name].doc}" in line, name
    rows = {row[0]: row[3] for _, _, section in generator().sections() for row in section}
    assert all(f"{name}: " in rows[key] for name in REGISTRIES[key].names())


def test_python_m_dpgm_config_prints_the_same_help(tmp_path: Path) -> None:
    done = run_script(ROOT / "dpgm" / "config" / "__main__.py", [], cwd=ROOT, env=dict(os.environ), timeout=120,
                      folder=tmp_path)  # ``python -m dpgm.config``, forked from a server that imported dpgm
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert option_line(out.splitlines(), "partition.method") == option_line(
        describe(registered=components()), "partition.method")
    assert "lsh_tree: " in option_line(out.splitlines(), "partition.method")


def test_a_component_registered_from_outside_is_in_the_help() -> None:
    PARTITIONERS.register("halves", doc="a toy")(lambda cfg, options, public: None)
    try:
        assert "halves: a toy" in option_line(describe(registered=components()), "partition.method")
    finally:
        PARTITIONERS.unregister("halves")
    assert "halves" not in option_line(describe(registered=components()), "partition.method")


def test_the_evaluate_help_lists_every_baseline(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["evaluate", "counting", "--help"])
    usage = capsys.readouterr().out
    assert f"--baseline {{{','.join(BASELINES)}}}" in " ".join(usage.split())


def test_the_guides_tables_name_every_registered_component() -> None:
    assert table_names("guide/partitioners.md", "`partition.method`") == set(PARTITIONERS.names())
    assert table_names("guide/python.md", "`method`") == set(BASELINES)


def test_the_module_map_names_every_registered_stage() -> None:
    [row] = [line for line in (ROOT / "docs" / "development.md").read_text().splitlines()
             if line.startswith("| `dpgm/stages/` |")]
    assert all(re.search(rf"\b{name}\b", row) for name in STAGES), row
