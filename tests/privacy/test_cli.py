"""``python -m dpgm.privacy``: JSON output, agreement with Opacus, ledger reports, exit code 2."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from dpgm.cli import run_cli
from dpgm.privacy.__main__ import main
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import GaussianEvent, Neighbouring, SampledJointGaussianEvent
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger

PLAN = ["--sampling-rate", "0.0017", "--noise-multiplier", "1.0", "--epochs", "20", "--delta", "1e-5"]
ROOT = Path(__file__).resolve().parents[2]


def _run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert run_cli(main, argv) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def test_epsilon_json_equals_opacus(capsys: pytest.CaptureFixture[str]) -> None:
    rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
    alphas = pytest.importorskip("opacus.accountants").RDPAccountant.DEFAULT_ALPHAS
    out = _run_json(capsys, ["epsilon", *PLAN, "--json"])
    assert {"epsilon", "delta", "order"} <= set(out)
    assert out["steps"] == 20 * 589 and out["delta"] == 1e-5
    eps_opacus, _ = rdp.get_privacy_spent(
        orders=alphas, rdp=rdp.compute_rdp(q=0.0017, noise_multiplier=1.0, steps=out["steps"], orders=alphas), delta=1e-5
    )
    assert out["epsilon"] == pytest.approx(eps_opacus, rel=1e-2)
    assert out["epsilon"] < out["epsilon_classical"]


def test_text_output_names_the_assumptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(main, ["epsilon", *PLAN]) == 0
    text = capsys.readouterr().out
    assert "epsilon = 1.1354" in text and "add/remove" in text and "11780 steps" in text


def test_sigma_round_trips_through_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--sampling-rate", "0.0017", "--steps", "11780", "--delta", "1e-5"]
    out = _run_json(capsys, ["sigma", *base, "--target-epsilon", "1.0", "--json"])
    assert {"epsilon", "delta", "order", "sigma"} <= set(out)
    assert out["epsilon"] <= 1.0
    again = _run_json(capsys, ["epsilon", *base, "--noise-multiplier", repr(out["sigma"]), "--json"])
    assert again["epsilon"] == out["epsilon"]


def test_full_paper_plan_and_steps(capsys: pytest.CaptureFixture[str]) -> None:
    plan = [*PLAN, "--histogram-noise-multiplier", "4", "--kmeans-iterations", "20", "--kmeans-noise-multiplier", "40"]
    joint = _run_json(capsys, ["epsilon", *plan, "--json"])
    # dpgm's k-means releases 2 T + 1 Gaussians (the final part sizes); the paper's 2 T give 1.33867
    ledger = PrivacyLedger([
        LedgerEntry("kmeans", GaussianEvent(noise_multiplier=40.0), 2 * 20 + 1),
        LedgerEntry("sgd", SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, 1.0)), 11780),
    ])
    expected = Accountant(ledger, delta=1e-5).spent().epsilon
    assert joint["bound"] == "joint" and joint["epsilon"] == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(1.34211, abs=1e-5)
    steps = _run_json(capsys, ["steps", "-q", "0.0017", "-s", "1", "--delta", "1e-5", "--target-epsilon", "1.1354", "--json"])
    assert steps["steps"] == 11779 and steps["epochs"] == 19 and steps["epsilon"] <= 1.1354


def test_report_of_a_saved_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = PrivacyLedger([
        LedgerEntry("kmeans", GaussianEvent(noise_multiplier=40.0), 40),
        LedgerEntry("sgd", SampledJointGaussianEvent(sampling_rate=0.0017, noise_multipliers=(4.0, 1.0)), 11780),
    ])
    path = tmp_path / "ledger.json"
    ledger.save(path)
    out = _run_json(capsys, ["report", str(path), "--delta", "1e-5", "--json"])
    assert out["epsilon"] == pytest.approx(1.33867, abs=1e-5)
    assert list(out["stage_epsilons"]) == ["kmeans", "sgd"] and out["dependent_bound"] == "joint"
    assert out["releases"] == {"kmeans": 40, "sgd": 11780}
    assert run_cli(main, ["report", str(path), "--delta", "1e-5"]) == 0
    assert "kmeans: epsilon" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["epsilon", "--sampling-rate", "0", "--noise-multiplier", "1", "--steps", "3", "--delta", "1e-5"], "sampling-rate"),
        (["epsilon", "--sampling-rate", "0.1", "--noise-multiplier", "-1", "--steps", "3", "--delta", "1e-5"], "noise-multiplier"),
        (["epsilon", "--sampling-rate", "0.1", "--noise-multiplier", "1", "--delta", "1e-5"], "--steps --epochs"),
        (["epsilon", "--sampling-rate", "0.1", "--noise-multiplier", "1", "--steps", "3", "--epochs", "1", "--delta", "1e-5"], "not allowed"),
        (["epsilon", "--sampling-rate", "0.1", "--noise-multiplier", "1", "--steps", "0", "--delta", "1e-5"], "steps"),
        (["epsilon", "--sampling-rate", "0.1", "--noise-multiplier", "1", "--steps", "3", "--delta", "2"], "delta"),
        (["epsilon", "--sampling-rate", "x", "--noise-multiplier", "1", "--steps", "3", "--delta", "1e-5"], "sampling-rate"),
        (["epsilon", *PLAN, "--kmeans-iterations", "20"], "go together"),
        (["epsilon", *PLAN, "--bound", "holder"], "histogram"),
        (["sigma", "--sampling-rate", "0.1", "--steps", "10", "--delta", "1e-5", "--target-epsilon", "1e-6"], "out of reach"),
        (["report", "/no/such/ledger.json", "--delta", "1e-5"], "no such ledger"),
        (["teleport"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(main, argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("content", ["not json", '{"entries": [{"stage": "x", "count": 1, "event": {"kind": "nope"}}]}'])
def test_malformed_ledgers_exit_2(tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert run_cli(main, ["report", str(path), "--delta", "1e-5"]) == 2
    assert "not a valid privacy ledger" in capsys.readouterr().err


def test_replace_one_ledger_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r1.json"
    PrivacyLedger(neighbouring=Neighbouring.REPLACE_ONE).save(path)
    assert run_cli(main, ["report", str(path), "--delta", "1e-5"]) == 2
    assert "add/remove" in capsys.readouterr().err


def test_module_runs_as_a_program_quickly() -> None:
    """The real entry point, in a fresh interpreter (imports included): the accountant alone, never torch."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "dpgm.privacy", "epsilon", *PLAN, "--json"],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["epsilon"] == pytest.approx(1.13540, abs=1e-5)
    assert " torch" not in proc.stderr  # importing it alone takes seconds
    # CPU seconds of the child, not wall time: a loaded machine must not fail it; typically ~0.5 s
    assert (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) < 2.0
    bad = subprocess.run([sys.executable, "-m", "dpgm.privacy", "epsilon", "--delta", "7"],
                         check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")
