"""``dpgm plan``: what a run of the generic config would choose for some public facts, and why, before any data
are read; pinned for five settings (tests/plan_cli_pinned.json) and equal to what a real run with the same public
facts chooses and says (its ruled settings and its privacy report's words)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.commands.main import main as dpgm
from dpgm.config import load_config
from dpgm.data.dataset import BinaryDataset
from dpgm.pipeline.run import TrainingRun
from tests.test_rules_pinned import _same

PINNED = Path(__file__).with_name("plan_cli_pinned.json")
#: (arguments, records of the run's synthetic data, declared N): five settings of public facts.
SETTINGS = {
    "msnbc-like": (["--records", "1e5", "--items", "17", "--epsilon", "1"], 2_000, 100_000),
    "hundred items": (["--records", "100000", "--items", "100", "--epsilon", "1"], 2_000, 100_000),
    "small": (["--records", "3000", "--items", "17", "--epsilon", "1", "--min-items", "1"], 3_000, None),
    "wide": (["--records", "30000", "--items", "1500", "--epsilon", "4"], 2_000, 10_000),
    "table": (["--records", "3000", "--items", "75", "--epsilon", "4", "--attributes", "37",
               "--delta", "1e-6"], 3_000, None),
}


def _planned(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert dpgm(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _data(n: int, items: int, attributes: int | None) -> BinaryDataset:
    """n records over ``items`` items; a table's records hold one item of each of its attributes' pair of values."""
    rng = np.random.default_rng(0)
    if attributes is None:
        x = (rng.random((n, items)) < 0.2).astype(np.uint8)
        x[:, 0] = 1  # no record is empty (data.min_items 1 drops none)
    else:
        x = np.zeros((n, items), dtype=np.uint8)
        x[np.arange(n)[:, None], 2 * np.arange(attributes) + rng.integers(0, 2, (n, attributes))] = 1
    return BinaryDataset(records=sp.csr_matrix(x), item_names=[str(j) for j in range(items)], name="synthetic")


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_dpgm_plan_prints_what_it_was_pinned_to(name: str, capsys) -> None:
    _same(_planned(SETTINGS[name][0], capsys), json.loads(PINNED.read_text())[name], name)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_dpgm_plan_says_what_a_run_with_the_same_facts_and_noisy_count_does(name: str, capsys, tmp_path) -> None:
    args, n, magnitude = SETTINGS[name]
    facts = _planned(args, capsys)["facts"]
    sets = [f"privacy.target_epsilon={facts['epsilon']}", f"privacy.delta={facts['delta']}",
            f"data.min_items={facts['min_items']}", f"runs_dir={json.dumps(str(tmp_path))}"]
    sets += [f"data.records_magnitude={magnitude}"] if magnitude else []
    sets += [f"data.attributes={facts['attributes']}"] if facts["attributes"] else []
    cfg = load_config("transactions", sets)
    run = TrainingRun(cfg, tmp_path / "r", data=_data(n, facts["items"], facts["attributes"]), progress=False)
    assert abs(run.records - n) < 10 * 75 and run.accountant.ledger.stages() == ["record_count"]  # drawn, charged
    told = [*args[:args.index("--records")], "--records", repr(run.records), *args[args.index("--records") + 2:]]
    planned = _planned(told + ["--delta", repr(facts["delta"])], capsys)  # the run's delta, whatever n's power
    _same(run.ruled, {key: s["value"] for key, s in planned["settings"].items()}, name)
    assert run.rules_why == planned["rules"]


def test_dpgm_plan_prints_words_and_every_setting_beside_its_reason(capsys) -> None:
    assert dpgm(["plan", "--records", "1e5", "--items", "100", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("n = 100,000, 100 items, epsilon = 1, delta = 1e-07\n\nThe rules chose a tree")
    assert 'model.kind' in out and '"tree"' in out and "in DP-SGD's place" in out


@pytest.mark.parametrize("args, message", [
    (["--records", "0", "--items", "3", "--epsilon", "1"], "at least 1"),
    (["--records", "1e5", "--items", "3", "--epsilon", "1", "--delta", "0.5"], "above 1/N"),
    (["--records", "1e5", "--items", "3", "--epsilon", "1", "--config", "digits"], "rules: public"),
    (["--records", "1e5", "--items", "13", "--epsilon", "1", "--attribute-sizes", "2", "4", "6"], "add up to 12"),
])
def test_bad_facts_are_one_line_and_exit_2(args: list[str], message: str, capsys) -> None:
    assert dpgm(["plan", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_declared_schema_is_a_fact_the_plan_reads_as_a_run_does(capsys, tmp_path) -> None:
    """--attribute-sizes: the tree over a wide table's attributes where --attributes alone plans DP-SGD (its items
    above the cap on a tree of items), as a run of the same declared schema rules."""
    sizes = [57] * 47 + [54]
    facts = ["--records", "50883", "--items", str(sum(sizes)), "--epsilon", "1"]
    counted = _planned([*facts, "--attributes", str(len(sizes))], capsys)["settings"]
    schema = _planned([*facts, "--attribute-sizes", *map(str, sizes)], capsys)
    declared = schema["settings"]
    assert counted["model.kind"]["value"] == "vae" and declared["model.kind"]["value"] == "tree"
    assert declared["model.options"]["value"]["by_attribute"] is True
    assert schema["rules"].startswith("The rules chose a tree over the table's attributes per group")
    small = [2, 4, 6]
    args = ["--records", "3000", "--items", "12", "--epsilon", "4", "--attribute-sizes", *map(str, small)]
    planned = _planned(args, capsys)
    rng = np.random.default_rng(0)
    x = np.zeros((3000, 12), dtype=np.uint8)
    starts = np.cumsum([0, *small[:-1]])
    x[np.arange(3000)[:, None], starts + rng.integers(0, small, (3000, len(small)))] = 1
    cfg = load_config("transactions", ["privacy.target_epsilon=4", f"privacy.delta={planned['facts']['delta']}",
                                       f"data.attribute_sizes={small}", f"runs_dir={json.dumps(str(tmp_path))}"])
    data = BinaryDataset(records=sp.csr_matrix(x), item_names=[str(j) for j in range(12)], name="table")
    run = TrainingRun(cfg, tmp_path / "r", data=data, progress=False)
    told = [*args[:1], repr(run.records), *args[2:], "--delta", repr(planned["facts"]["delta"])]
    again = _planned(told, capsys)
    _same(run.ruled, {key: s["value"] for key, s in again["settings"].items()}, "schema")
    assert run.rules_why == again["rules"]


def main() -> int:
    """Write tests/plan_cli_pinned.json from ``dpgm plan`` as it is."""
    from contextlib import redirect_stdout
    from io import StringIO

    out = {}
    for name, (args, _, _) in SETTINGS.items():
        buffer = StringIO()
        with redirect_stdout(buffer):
            dpgm(["plan", *args, "--json"])
        out[name] = json.loads(buffer.getvalue())
    PINNED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
