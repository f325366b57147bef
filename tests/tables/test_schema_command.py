"""``dpgm schema``: a draft read off a CSV table, labelled so in its first line and in the draft itself."""

from __future__ import annotations

import json
from pathlib import Path

from dpgm.commands.main import main
from dpgm.tables import table_schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_draft_says_first_that_it_was_read_off_the_data(tmp_path: Path, capsys) -> None:
    out = tmp_path / "draft.json"
    assert main(["schema", str(ROOT / "examples" / "table.csv"), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("DRAFT READ OFF THE DATA") and "public only when the owner" in lines[0]
    draft = json.loads(out.read_text())
    assert next(iter(draft)) == "read_off_the_data" and draft["read_off_the_data"] == lines[0]
    kinds = {c["name"]: c["kind"] for c in draft["columns"]}
    assert kinds == {"age": "integer", "weight": "float", "region": "categorical", "smoker": "binary",
                     "visit": "datetime"}
    assert [c["missing"] for c in draft["columns"]] == [False, True, False, False, False]
    assert table_schema(out).names == list(kinds)  # the owner may declare it as it is (after review)


def test_without_out_the_draft_is_printed_after_its_warning(capsys) -> None:
    assert main(["schema", str(ROOT / "examples" / "table.csv")]) == 0
    first, rest = capsys.readouterr().out.split("\n", 1)
    assert first.startswith("DRAFT READ OFF THE DATA") and json.loads(rest)["read_off_the_data"] == first


def test_a_missing_file_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["schema", str(tmp_path / "absent.csv")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
