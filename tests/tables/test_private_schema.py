"""The private route to a schema: parts marked private come from DP releases on one ledger within the budget,
and a value held by one record never shows, in the schema, its report, or any message."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import opendp.prelude as dp
import pytest

from dpgm.commands.main import main
from dpgm.commands.schema import report_path
from dpgm.data.private_schema import plan, release_schema, threshold_for
from dpgm.data.table import load_table
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant, event_delta
from dpgm.privacy.rdp import threshold_delta
from dpgm.tables import MISSING, table_schema
from dpgm.tables.private import GRID_POINTS, ordered_bounds, resolved, unknowns

dp.enable_features("contrib")
CANARY_TEXT, CANARY_NUMBER = "CANARY_7f3a", "987654.321"
DECLARED = {"columns": [
    {"name": "age", "kind": "integer", "lower": "private", "upper": "private", "range": [0, 1000000]},
    {"name": "region", "kind": "categorical", "categories": "private", "missing": "private"},
    {"name": "smoker", "kind": "binary", "categories": ["no", "yes"]},
]}


def _table(tmp_path: Path, rows: int = 4000) -> Path:
    """A CSV of ``rows`` records; one holds a rare category and an extreme number (the canaries)."""
    rng = np.random.default_rng(0)
    ages = rng.integers(20, 80, rows).astype(object)
    regions = rng.choice(["east", "north", "south"], rows).astype(object)
    regions[:200] = ""  # missing values, 200 of them
    ages[-1], regions[-1] = CANARY_NUMBER, CANARY_TEXT
    lines = ["age,region,smoker"] + [f"{a},{r},{'yes' if j % 3 else 'no'}"
                                     for j, (a, r) in enumerate(zip(ages, regions))]
    path = tmp_path / "data.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], declared: object = DECLARED,
         *extra: str) -> tuple[int, str, str]:
    decl = tmp_path / "declared.json"
    decl.write_text(json.dumps(declared))
    code = main(["schema", str(_table(tmp_path)), "--private", str(decl), "--out", str(tmp_path / "s.json"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_private_parts_are_released_within_the_budget_and_no_canary_shows(tmp_path: Path, capsys) -> None:
    code, out, err = _run(tmp_path, capsys, DECLARED, "--epsilon", "2", "--delta", "1e-6")
    assert code == 0 and err == ""
    schema_text, report_text = (tmp_path / "s.json").read_text(), report_path(tmp_path / "s.json").read_text()
    for text in (schema_text, report_text, out):
        assert CANARY_TEXT not in text and CANARY_NUMBER not in text
    schema = table_schema(tmp_path / "s.json")
    age, region, smoker = (codec.declaration() for codec in schema.codecs)
    assert region["categories"] == ["east", "north", "south"] and region["missing"] is True
    assert region["other"] is True and region["other_label"] == "other" and "other" not in smoker
    assert 0 <= age["lower"] <= age["upper"] <= 1000000 and smoker["categories"] == ["no", "yes"]
    report = json.loads(report_text)
    assert report["not_private"] == [] and report["delta"] == 1e-6 and report["epsilon"] <= 2.0
    kinds = {e["event"]["kind"]: e["count"] for e in report["ledger"]["entries"]}
    assert kinds == {"exponential": 2, "threshold_gaussian": 2}  # two bounds; categories and missing
    assert out.startswith("wrote the schema of 3 columns") and f"epsilon = {report['epsilon']:.4g}" in out


def test_the_schema_records_its_release_and_a_run_lists_it(tmp_path: Path, capsys) -> None:
    from dpgm.tables import public_input

    code, _, err = _run(tmp_path, capsys, DECLARED, "--epsilon", "2", "--delta", "1e-6")
    assert code == 0, err
    report = json.loads(report_path(tmp_path / "s.json").read_text())
    released = json.loads((tmp_path / "s.json").read_text())["released"]
    assert released == {"epsilon": report["epsilon"], "delta": 1e-6, "parts": ["age: bounds",
                         "region: categories, missing"], "report": "s.privacy.json"}
    assert report["measured"] == released["parts"]
    listed = public_input(table_schema(tmp_path / "s.json"))
    assert listed["released"] == released and f"epsilon = {report['epsilon']:.4g}, delta = 1e-06" in listed["why"]
    assert "its privacy report: s.privacy.json" in listed["why"]


def test_the_ledger_epsilon_is_opendps_for_the_same_releases() -> None:
    """Two quantiles and one thresholded histogram at epsilon 1, delta 1e-6: the plan's ledger composed by OpenDP
    (zCDP: rho = epsilon_q^2 / 8 per quantile, 1 / (2 sigma^2) per histogram; converted at delta - delta_0)."""
    chosen = plan(2, 1, 1.0, 1e-6)
    events = chosen.events(2, 1)
    accountant = Accountant(delta=1e-6)
    accountant.spend("schema", *events)
    rho = 2 * chosen.quantile_epsilon**2 / 8 + 1 / (2 * chosen.noise_multiplier**2)
    gaussian = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                                  scale=1 / math.sqrt(2 * rho))
    theirs = dp.c.make_zCDP_to_approxDP(gaussian).map(1.0).epsilon(1e-6 - event_delta(events[-1]))
    assert accountant.spent().epsilon == pytest.approx(theirs, rel=1e-3)
    assert 0.95 < accountant.spent().epsilon <= 1.0
    assert threshold_delta(chosen.noise_multiplier, chosen.threshold) <= 0.5 * 1e-6


def test_the_threshold_is_the_smallest_that_keeps_delta_0_within_its_share() -> None:
    for sigma, target in ((3.0, 1e-6), (11.0, 1e-9), (0.7, 1e-3)):
        t = threshold_for(sigma, target)
        assert threshold_delta(sigma, t) <= target and (t == 2 or threshold_delta(sigma, t - 1) > target)


def test_a_declaration_lists_its_unknowns_and_takes_the_released_values() -> None:
    spec = {"columns": [{"name": "n", "kind": "integer", "lower": "private", "upper": "private", "range": [0, 10]},
                        {"name": "x", "kind": "float", "lower": "private", "upper": "private",
                         "candidates": [0.5, 1.0, 2.0]},
                        {"name": "c", "kind": "categorical", "categories": "private"}]}
    n, x, c = unknowns(spec)
    assert n.grid.tolist() == list(range(11)) and x.grid.tolist() == [0.5, 1.0, 2.0] and c.categories
    wide = unknowns({"columns": [{"name": "f", "kind": "float", "lower": "private", "upper": "private",
                                  "range": [0, 1]}]})[0]
    assert len(wide.grid) == GRID_POINTS
    assert ordered_bounds(x, [2.0, 0.5]) == (0.5, 2.0) and ordered_bounds(x, [2.0, 2.0]) == (1.0, 2.0)
    assert ordered_bounds(n, [4.0, 4.0]) == (4, 4)  # an integer column may be one value wide
    schema = resolved(spec, {"n": {"lower": 1, "upper": 9}, "x": {"lower": 0.5, "upper": 2.0},
                             "c": {"categories": ["b", "10", "a"]}})
    assert table_schema(schema).values[2] == ["10", "a", "b", "other"] and "target" not in schema
    assert resolved({**spec, "target": "c"}, {"c": {"categories": ["a"]}})["target"] == "c"


@pytest.mark.parametrize(("declared", "extra", "words"), [
    (DECLARED, ("--epsilon", "1"), "needs --out, --epsilon and --delta"),
    ({"columns": [{"name": "age", "kind": "integer", "lower": "private", "upper": "private"},
                  {"name": "region", "kind": "categorical", "categories": ["x"]},
                  {"name": "smoker", "kind": "binary"}]}, ("--epsilon", "1", "--delta", "1e-6"), "public range"),
    ({"columns": [{"name": "age", "kind": "integer", "lower": "private", "upper": 5, "range": [0, 9]},
                  {"name": "region", "kind": "categorical", "categories": ["x"]},
                  {"name": "smoker", "kind": "binary"}]}, ("--epsilon", "1", "--delta", "1e-6"), "together"),
    ({"columns": [{"name": "age", "kind": "integer", "lower": 0, "upper": 9},
                  {"name": "region", "kind": "categorical", "categories": ["x"]},
                  {"name": "smoker", "kind": "binary", "categories": "private"}]},
     ("--epsilon", "1", "--delta", "1e-6"), "categorical columns"),
    ({"columns": [{"name": "age", "kind": "integer", "lower": "private", "upper": "private", "range": [0, 9]},
                  {"name": "smoker", "kind": "binary"}]}, ("--epsilon", "1", "--delta", "1e-6"), "header"),
    (DECLARED, ("--epsilon", "1e-9", "--delta", "1e-6"), "too small"),
    (DECLARED, ("--epsilon", "1", "--delta", "2"), "delta in (0, 1)"),
])
def test_bad_input_is_one_line_exit_2_without_a_value(tmp_path: Path, capsys, declared: object,
                                                      extra: tuple[str, ...], words: str) -> None:
    code, out, err = _run(tmp_path, capsys, declared, *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err
    assert CANARY_TEXT not in err + out and CANARY_NUMBER not in err + out
    assert not (tmp_path / "s.json").exists()


def test_a_cell_that_is_not_a_number_is_refused_without_showing_it(tmp_path: Path) -> None:
    header, cells = ["age"], np.array([["12"], ["SECRET_AGE"]], dtype=object)
    spec = [{"name": "age", "kind": "integer", "lower": "private", "upper": "private", "range": [0, 99]}]
    with pytest.raises(DataError, match="not a number") as caught:
        release_schema(spec, header, cells, epsilon=1.0, delta=1e-6)
    assert "SECRET_AGE" not in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_nothing_private_is_refused() -> None:
    with pytest.raises(ConfigError, match="no column marks"):
        release_schema([{"name": "a", "kind": "binary"}], ["a"], np.array([["0"]], dtype=object), epsilon=1.0,
                       delta=1e-6)


def test_a_value_under_the_threshold_trains_as_the_other_value_and_never_shows(tmp_path: Path, capsys) -> None:
    code, _, err = _run(tmp_path, capsys, DECLARED, "--epsilon", "2", "--delta", "1e-6")
    assert code == 0, err
    dataset = load_table(tmp_path / "data.csv", table_schema(tmp_path / "s.json"))  # the loader training uses
    counts = np.asarray(dataset.records.sum(axis=0)).ravel()
    region = [name for name, count in zip(dataset.item_names, counts) if name.startswith("region=") and count]
    assert region == ["region=east", "region=north", "region=south", "region=other", f"region={MISSING}"]
    assert all(CANARY_TEXT not in name for name in dataset.item_names)


def test_the_other_label_differs_from_every_released_category() -> None:
    spec = [{"name": "c", "kind": "categorical", "categories": "private"}]
    assert resolved(spec, {"c": {"categories": ["other", "<other>", "a"]}})["columns"][0]["other_label"] == "<<other>>"
    declared = [{**spec[0], "other_label": "rest"}]
    assert resolved(declared, {"c": {"categories": ["a"]}})["columns"][0]["other_label"] == "rest"
    assert resolved([{**spec[0], "other": False}], {"c": {"categories": ["a"]}})["columns"][0]["other"] is False
