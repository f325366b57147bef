"""The one-run audit (dpgm.audit) on a small real configuration: the bound stays below the claim
with the noise on, and catches training with the noise off (the test switch)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.audit import AuditPlan, main, make_canaries, run_audit, training_records
from dpgm.config import config_from_dict
from dpgm.data import load_digits

#: 300 digits + 200 canaries (about 100 in), 300 DP-SGD steps at q = 0.1; DPNorm clipping.
SMALL = [
    "data.limit=300",
    "model.hidden=[64]",
    "training.sampling_rate=0.1",
    "training.epochs=30",
    "training.noise_multiplier=8.0",
    "training.clipping=adaptive",
    "training.hist_noise_multiplier=10.0",
    "training.hist_bins=50",
    "training.learning_rate=0.01",
]
PLAN = {"canaries": 200, "guesses_in": 50, "guesses_out": 50}


@pytest.fixture(scope="module")
def audits() -> dict[bool, dict]:
    torch.set_num_threads(1)
    data = load_digits(limit=300)
    cfg = config_from_dict({}, SMALL)
    return {
        leak: run_audit(cfg, AuditPlan(**PLAN, leak=leak), seed=0, data=data, progress=False)
        for leak in (False, True)
    }


def test_noise_on_lower_bound_is_below_the_claim(audits: dict[bool, dict]) -> None:
    report = audits[False]
    assert 0.5 < report["claimed_epsilon"] < 1.5
    assert report["epsilon_lower_bound"] <= report["claimed_epsilon"]
    assert report["trained"]["noise_multiplier"] == 8.0
    assert report["privacy_report"]["stage_epsilons"] == {"training": report["claimed_epsilon"]}


def test_noise_off_is_caught(audits: dict[bool, dict]) -> None:
    on, off = audits[False], audits[True]
    assert off["claimed_epsilon"] == pytest.approx(on["claimed_epsilon"], rel=1e-12)
    assert off["trained"]["noise_multiplier"] < 1e-3 and off["trained"]["clipping"] == "fixed"
    assert off["epsilon_lower_bound"] > 2 * off["claimed_epsilon"]
    assert off["correct"] >= 95  # of 100 guesses


def test_report_names_the_setting(audits: dict[bool, dict]) -> None:
    report = audits[False]
    assert report["canaries"] == 200 and report["guesses_in"] == report["guesses_out"] == 50
    assert report["confidence"] == 0.95 and report["delta"] == 1e-4  # 1/(10 n), n ~ 400
    assert report["steps"] == 300 and report["base_items"] == 64
    json.dumps(report)  # JSON-ready


def test_canaries_carry_their_own_mark_and_only_included_ones_train() -> None:
    data = load_digits(limit=20)
    rng = np.random.default_rng(1)
    canaries = make_canaries(data, 5, rng)
    assert canaries.shape == (5, 64 + 5)
    np.testing.assert_array_equal(canaries[:, 64:].toarray(), np.eye(5))
    included = np.array([True, False, True, False, False])
    records = training_records(data, canaries, included)
    assert isinstance(records, np.ndarray) and records.shape == (22, 69)
    assert records[:20, 64:].sum() == 0
    np.testing.assert_array_equal(records[20:], canaries[[0, 2]].toarray())
    assert not sp.issparse(records)


def test_cli_prints_claim_and_bound_and_writes_json(tmp_path, capsys) -> None:
    out = tmp_path / "audit.json"
    sets = [
        a
        for kv in ["data.limit=100", "model.hidden=[16]", "training.epochs=1"]
        for a in ("--set", kv)
    ]
    code = main([*sets, "--canaries", "20", "--no-progress", "--threads", "1", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "claimed epsilon" in text and "audit lower bound" in text and "95% confidence" in text
    report = json.loads(out.read_text())
    assert report["canaries"] == 20 and report["guesses_in"] == 2 and report["torch_threads"] == 1


def test_rbm_free_energy_scores_catch_the_leak_too() -> None:
    """RBM canaries are scored by free-energy differences (exact log-likelihood ratios)."""
    torch.set_num_threads(1)
    sets = [
        "data.limit=200",
        "model.kind=rbm",
        "model.rbm_hidden=32",
        "training.epochs=20",
        "training.sampling_rate=0.1",
        "training.clipping=fixed",
        "training.learning_rate=0.05",
    ]
    plan = AuditPlan(canaries=100, guesses_in=10, guesses_out=10, leak=True)
    report = run_audit(
        config_from_dict({}, sets), plan, seed=0, data=load_digits(limit=200), progress=False
    )
    assert report["correct"] == 20
    assert report["epsilon_lower_bound"] > 1.5
