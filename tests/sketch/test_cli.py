"""python -m dpgm.sketch: spec, holders' sums, one release, decode, assign; mismatches exit 2."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from dpgm.cli import run_cli
from dpgm.privacy.ledger import PrivacyLedger
from dpgm.privacy.verdict import WEAK
from dpgm.sketch import commands
from dpgm.sketch.__main__ import main

ITEMS = 12


def write_csv(path: Path, records: np.ndarray) -> str:
    header = ",".join(f"i{j}" for j in range(records.shape[1]))
    path.write_text(header + "\n" + "\n".join(",".join(map(str, row)) for row in records) + "\n")
    return str(path)


def holders(tmp_path: Path, n: int = 90) -> tuple[list[str], str, np.ndarray]:
    """Three holders' CSV files of 3-block records, the file of all records, and the labels."""
    rng = np.random.default_rng(0)
    labels = rng.integers(3, size=3 * n)
    blocks = np.arange(ITEMS)[None, :] // 4 == labels[:, None]
    records = (rng.random(blocks.shape) < np.where(blocks, 0.9, 0.05)).astype(int)
    files = [write_csv(tmp_path / f"h{i}.csv", part) for i, part in enumerate(np.split(records, 3))]
    return files, write_csv(tmp_path / "all.csv", records), labels


def sketch(*argv: object) -> int:
    return run_cli(main, [str(a) for a in argv])


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_round_trip_three_holders_equal_the_whole_data_released_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(commands, "noise_generator", lambda: np.random.default_rng(3))  # the same noise twice
    files, whole, labels = holders(tmp_path)
    spec = tmp_path / "spec.json"
    assert sketch("spec", "--items", ITEMS, "--seed", 7, "--size", 120, "--projection", "none", "-o", spec) == 0
    sums = [tmp_path / f"h{i}.sum.json" for i in range(3)]
    for data, out in [*zip(files, sums), (whole, tmp_path / "all.sum.json")]:
        assert sketch("sum", "--spec", spec, data, "-o", out) == 0
        assert mode(out) == 0o600  # exact sums are private: owner-only
    release = ["--epsilon", 2, "--delta", 1e-6]
    assert sketch("release", *sums, "--spec", spec, *release, "-o", tmp_path / "rel") == 0
    assert sketch("release", tmp_path / "all.sum.json", *release, "-o", tmp_path / "one") == 0
    merged, one = (json.loads((tmp_path / d / "sketch.json").read_text()) for d in ("rel", "one"))
    # equal up to the float32 phases of the streaming sum (noise std here: tens)
    np.testing.assert_allclose(merged["re"], one["re"], atol=1e-3)
    np.testing.assert_allclose(merged["im"], one["im"], atol=1e-3)
    assert merged["count"] == pytest.approx(one["count"]) and merged["holders"] == 3
    report = json.loads((tmp_path / "rel" / "privacy_report.json").read_text())
    assert report["epsilon"] == pytest.approx(2.0, rel=1e-4) and report["holders"] == 3
    assert len(PrivacyLedger.load(tmp_path / "rel" / "ledger.json").entries) == 2  # sketch + count
    centres = tmp_path / "centres.json"
    assert sketch("decode", tmp_path / "rel" / "sketch.json", "--k", 3, "--seed", 1, "-o", centres) == 0
    assert np.shape(json.loads(centres.read_text())["centres"]) == (3, ITEMS)
    parts = tmp_path / "h0.parts"
    assert sketch("assign", centres, files[0], "-o", parts) == 0
    assigned = np.array(parts.read_text().split(), dtype=int)
    assert mode(parts) == 0o600 and assigned.shape == (90,)
    contingency = np.zeros((3, 3))
    np.add.at(contingency, (assigned, labels[:90]), 1)
    assert contingency.max(axis=0).sum() / 90 > 0.9  # each block lands (almost) in one part
    assert "error" not in capsys.readouterr().err


def test_sums_of_another_spec_are_refused_with_one_line(tmp_path, capsys):
    files, _, _ = holders(tmp_path, n=10)
    for seed, name in ((7, "a"), (8, "b")):
        sketch("spec", "--items", ITEMS, "--seed", seed, "--size", 16, "-o", tmp_path / f"{name}.json")
        sketch("sum", "--spec", tmp_path / f"{name}.json", files[0], "-o", tmp_path / f"{name}.sum.json")
    capsys.readouterr()
    code = sketch("release", tmp_path / "a.sum.json", tmp_path / "b.sum.json", "--epsilon", 1, "-o", tmp_path / "r")
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "b.sum.json: made with a different sketch operator" in err and "seed 8 != 7" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()  # nothing charged or written
    body = json.loads((tmp_path / "b.sum.json").read_text())
    assert not any(f"{v:.6g}" in err for v in body["re"][:4])  # no data value in the message


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["release", "h.sum.json", "h.sum.json", "--epsilon", "1", "-o", "r"], "given twice"),
        (["release", "h.sum.json", "-o", "r"], "--epsilon --noise-multiplier is required"),
        (["sum", "--spec", "missing.json", "h.csv", "-o", "s"], "missing.json: no such file"),
        (["spec", "--items", "0", "--seed", "1", "-o", "s"], "items: must be > 0"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(tmp_path)
    assert run_cli(main, argv) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1


def test_help_explains_the_workflow(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert all(word in out for word in ("spec", "sum", "release", "decode", "assign", "ONCE"))


def test_combine_merges_releases_made_separately(tmp_path, capsys):
    files, _, _ = holders(tmp_path, n=30)
    for seed in (7, 8):
        sketch("spec", "--items", ITEMS, "--seed", seed, "--size", 40, "-o", tmp_path / f"s{seed}.json")
    for i, seed in enumerate((7, 7, 8)):  # holders 0 and 1 share a spec, holder 2 does not
        sketch("sum", "--spec", tmp_path / f"s{seed}.json", files[i], "-o", tmp_path / f"h{i}.sum.json")
        sketch("release", tmp_path / f"h{i}.sum.json", "--epsilon", 1, "-o", tmp_path / f"r{i}")
    r0, r1, r2 = (tmp_path / f"r{i}" / "sketch.json" for i in range(3))
    assert sketch("combine", r0, r1, "-o", tmp_path / "m.json") == 0
    parts = [json.loads(r.read_text()) for r in (r0, r1)]
    merged = json.loads((tmp_path / "m.json").read_text())
    np.testing.assert_allclose(merged["re"], np.add(parts[0]["re"], parts[1]["re"]))
    assert merged["count"] == pytest.approx(parts[0]["count"] + parts[1]["count"]) and merged["holders"] == 2
    assert sketch("decode", tmp_path / "m.json", "--k", 2, "--decodes", 1, "-o", tmp_path / "c.json") == 0
    capsys.readouterr()
    assert sketch("combine", r0, r2, "-o", tmp_path / "x.json") == 2
    err = capsys.readouterr().err
    assert "r2/sketch.json: made with a different sketch operator" in err and len(err.splitlines()) == 1


def one_sum(tmp_path: Path) -> Path:
    """The exact sum of one holder's file, under a small spec."""
    files, _, _ = holders(tmp_path, n=10)
    sketch("spec", "--items", ITEMS, "--seed", 7, "--size", 16, "-o", tmp_path / "spec.json")
    sketch("sum", "--spec", tmp_path / "spec.json", files[0], "-o", tmp_path / "h.sum.json")
    return tmp_path / "h.sum.json"


def test_a_release_cannot_be_seeded_so_its_noise_cannot_be_replayed(tmp_path, capsys):
    """A seeded release of an all-zero sum would be its noise alone: the noise comes from fresh entropy only."""
    total = one_sum(tmp_path)
    capsys.readouterr()
    assert sketch("release", total, "--epsilon", 1, "--seed", 0, "-o", tmp_path / "r") == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --seed" in err and len(err.splitlines()) == 1 and not (tmp_path / "r").exists()
    for name in ("a", "b"):
        assert sketch("release", total, "--epsilon", 1, "-o", tmp_path / name) == 0
    first, second = (json.loads((tmp_path / name / "sketch.json").read_text())["re"] for name in ("a", "b"))
    assert not np.allclose(first, second)


def test_a_weak_release_says_so_first(tmp_path, capsys):
    total = one_sum(tmp_path)
    capsys.readouterr()
    assert sketch("release", total, "--epsilon", 20, "-o", tmp_path / "r") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{WEAK}: epsilon = 20") and "epsilon = 20" in out[1]
    report = json.loads((tmp_path / "r" / "privacy_report.json").read_text())
    assert next(iter(report)) == "warning" and report["warning"] == out[0] and report["not_private"] == []
    released = json.loads((tmp_path / "r" / "sketch.json").read_text())
    assert next(iter(released)) == "warning" and released["warning"] == out[0]
    assert sketch("release", total, "--epsilon", 1, "-o", tmp_path / "strong") == 0
    assert "warning" not in json.loads((tmp_path / "strong" / "sketch.json").read_text())
    assert sketch("combine", tmp_path / "strong" / "sketch.json", tmp_path / "r" / "sketch.json",
                  "-o", tmp_path / "m.json") == 0  # the weakest part's guarantee is the combined one's
    assert json.loads((tmp_path / "m.json").read_text())["warning"].startswith(f"{WEAK}: epsilon = 20")


def test_centres_decoded_from_a_weak_release_say_so_first(tmp_path, capsys):
    total = one_sum(tmp_path)
    assert sketch("release", total, "--epsilon", 20, "-o", tmp_path / "r") == 0
    capsys.readouterr()
    assert sketch("decode", tmp_path / "r" / "sketch.json", "--k", 2, "-o", tmp_path / "c.json") == 0
    out = capsys.readouterr().out.splitlines()
    centres = json.loads((tmp_path / "c.json").read_text())
    assert out[0].startswith(f"{WEAK}: epsilon = 20") and next(iter(centres)) == "warning"
    assert centres["warning"] == out[0] and centres["epsilon"] == pytest.approx(20, rel=1e-5)
