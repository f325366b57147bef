"""The one-run audit (dpgm.audit) on a small real configuration: the guesses follow the claim, the
bound stays below the claim with the noise on, and training whose noise is secretly cut tenfold, or
off, is caught, with Adam and with SGD."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm.audit.bounds import audit_size
from dpgm.audit.canaries import input_weights, make_canaries, training_records, weight_scores
from dpgm.audit.cli import main
from dpgm.audit.plan import AuditPlan
from dpgm.audit.run import audited_config, run_audit, summary
from dpgm.config import config_from_dict
from dpgm.data import load_digits
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models import build_model

#: 300 digits, 100 DP-SGD steps at q = 0.1, the noise calibrated to epsilon 1 (fixed clipping).
SMALL = [
    "data.limit=300",
    "model.options={hidden: [32]}",
    "training.sampling_rate=0.1",
    "training.epochs=10",
    "privacy.target_epsilon=1.0",
    "training.clipping=fixed",
    "training.learning_rate=0.01",
]
PLAN = AuditPlan(min_guesses=50)


#: (optimizer, noise scale) of the audited runs: honest, noise cut tenfold, noise off.
RUNS = [(opt, scale) for opt in ("adam", "sgd") for scale in (1.0, 0.1, 0.0)]


@pytest.fixture(scope="module")
def audits() -> dict[tuple[str, float], dict]:
    torch.set_num_threads(1)
    data = load_digits(limit=300)
    return {
        (opt, scale): run_audit(config_from_dict({}, [*SMALL, f"training.optimizer={opt}"]),
                                AuditPlan(min_guesses=50, noise_scale=scale), seed=0, data=data, progress=False)
        for opt, scale in RUNS
    }


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_noise_on_lower_bound_stays_below_the_claim(audits: dict, optimizer: str) -> None:
    report = audits[optimizer, 1.0]
    assert report["claimed_epsilon"] == pytest.approx(1.0, abs=1e-3)
    assert report["claimed_epsilon"] <= 1.0  # calibration never overshoots the target
    assert report["lower_bound"] <= report["claimed_epsilon"] and not report["refuted"]
    assert report["trained"]["noise_multiplier"] > 1.0 and report["not_private"] == [] and "warning" not in report
    assert report["privacy_report"]["stage_epsilons"] == {"training": report["claimed_epsilon"]}


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("scale", [0.1, 0.0])
def test_a_run_whose_noise_is_cut_is_caught(audits: dict, optimizer: str, scale: float) -> None:
    on, cut = audits[optimizer, 1.0], audits[optimizer, scale]
    assert cut["claimed_epsilon"] == pytest.approx(on["claimed_epsilon"], rel=1e-12)  # the claim stays
    assert cut["trained"]["noise_multiplier"] == pytest.approx(scale * on["trained"]["noise_multiplier"])
    assert cut["correct"] == cut["guesses"] and cut["lower_bound"] == pytest.approx(cut["epsilon_cap"])
    assert cut["lower_bound"] > cut["claimed_epsilon"] + 1.0 and cut["refuted"]
    assert cut["noise_scale"] == scale and cut["not_private"] == ["weakened"]
    assert next(iter(cut)) == "warning" and cut["warning"].startswith("NOT DIFFERENTIALLY PRIVATE")
    assert summary(cut).startswith("NOT DIFFERENTIALLY PRIVATE") and "REFUTES" in summary(cut)


def test_the_guesses_follow_the_claim(audits: dict) -> None:
    report = audits["adam", 1.0]
    size = audit_size(report["claimed_epsilon"], report["delta"], 0.95, 1.0, min_guesses=50)
    assert report["guesses"] == size.guesses and report["canaries"] == size.canaries
    assert report["epsilon_cap"] == pytest.approx(size.cap)
    assert report["epsilon_cap"] >= report["claimed_epsilon"] + report["margin"]
    assert report["guesses_in"] == report["guesses_out"] == report["guesses"] // 2
    # a larger claim needs more guesses (100 would cap the bound at 3.49, below 5.71)
    assert PLAN.size(5.71, 1e-5).guesses > 2000 and PLAN.size(5.71, 1e-5).cap >= 6.71


def test_report_names_the_setting(audits: dict) -> None:
    report = audits["adam", 1.0]
    assert report["confidence"] == 0.95 and report["delta"] == 1e-4  # 1/(100 N), N = 100
    assert report["steps"] == 100 and report["base_items"] == 64 and report["score"] == "gradients"
    json.dumps(report)  # JSON-ready


def test_the_claim_is_the_epsilon_of_the_plan_audited(audits: dict) -> None:
    data = load_digits(limit=300)
    _, delta, _, planned = audited_config(config_from_dict({}, SMALL), data)
    assert planned == pytest.approx(audits["adam", 1.0]["claimed_epsilon"], rel=1e-9)  # the ledger's
    assert delta == audits["adam", 1.0]["delta"]
    fixed = config_from_dict({}, [*SMALL[:-3], "training.noise_multiplier=2.0"])
    _, _, steps, claim = audited_config(fixed, data)
    fewer = config_from_dict(
        {}, [*SMALL[:-4], "training.epochs=5", "training.noise_multiplier=2.0"]
    )
    _, _, fewer_steps, fewer_claim = audited_config(fewer, data)
    assert (steps, fewer_steps) == (100, 50) and fewer_claim < claim


def test_rules_public_configs_are_audited_with_their_rules() -> None:
    base = BinaryDataset(
        np.eye(10, dtype=np.uint8)[np.arange(20_000) % 10], [f"i{j}" for j in range(10)]
    )
    ruled = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0}})
    with pytest.raises(ConfigError, match="chosen by rules: public; state model.kind: vae"):
        audited_config(ruled, base)  # the rules fit a tree: nothing trained to audit
    cfg = config_from_dict({"rules": "public", "privacy": {"target_epsilon": 1.0}, "model": {"kind": "vae"}})
    audited, delta, steps, claim = audited_config(cfg, base)
    assert audited.model.kind == "vae" and audited.model.options == {"hidden": [128], "latent": 8}
    assert audited.training.clipping == "fixed" and audited.training.clip_norm == 30.0
    assert audited.model.output_bias == "default" and delta == 1e-6 and steps == 205
    assert claim == pytest.approx(1.0, abs=1e-3) and claim <= 1.0


def test_models_without_plain_inputs_are_refused() -> None:
    data = load_digits(limit=50)
    with pytest.raises(ConfigError, match="model.kind"):
        audited_config(config_from_dict({}, ["model.kind=independent"]), data)


def test_plans_are_checked() -> None:
    for bad in (AuditPlan(guesses=7), AuditPlan(guesses=20, canaries=10), AuditPlan(margin=-1.0),
                AuditPlan(noise_scale=-0.5), AuditPlan(noise_scale=float("nan")), AuditPlan(score="other")):
        with pytest.raises(ConfigError):
            bad.validate()
    with pytest.raises(ConfigError, match="cannot be refuted"):
        AuditPlan().size(7.0, 1e-4)
    fixed = AuditPlan(guesses=100).size(5.71, 1e-5)  # fixed by the auditor: its cap is reported
    assert fixed.guesses == 100 and fixed.cap < 3.5


def test_weight_scores_measure_how_far_each_mark_column_moved() -> None:
    model = build_model(config_from_dict({}, ["model.options={hidden: [8]}"]).model, 4 + 3)
    initial = [w.detach().clone() for w in input_weights(model)]
    assert [tuple(w.shape) for w in initial] == [(8, 7)]  # the encoder's first layer only
    with torch.no_grad():
        input_weights(model)[0][:, 5] += 0.5
        input_weights(model)[0][:, 0] += 9.0  # a base item's column: no canary's score
    scores = weight_scores(initial, input_weights(model), 4)
    np.testing.assert_allclose(scores, [0.0, 8 * 0.25, 0.0])


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


def test_cli_prints_claim_bound_and_cap_and_writes_json(tmp_path, capsys) -> None:
    out = tmp_path / "audit.json"
    sets = [
        a
        for kv in ["data.limit=100", "model.options={hidden: [16]}", "training.epochs=1"]
        for a in ("--set", kv)
    ]
    code = main(
        [*sets, "--min-guesses", "20", "--no-progress", "--threads", "1", "--json", str(out)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "claimed epsilon" in text and "audit lower bound" in text and "(cap " in text
    report = json.loads(out.read_text())
    assert {"claimed_epsilon", "lower_bound", "refuted"} <= set(report)
    assert report["epsilon_cap"] >= report["claimed_epsilon"] + 1.0
    assert report["guesses"] >= 20 and report["torch_threads"] == 1


def test_rbm_free_energy_scores_see_the_noise_off_run() -> None:
    """RBM canaries are scored by free-energy differences (exact log-likelihood ratios). Its
    Gibbs chains move every mark's weights, so a no-noise RBM is harder to catch: the bound
    still rejects epsilon 0, i.e. the scores carry the canaries' presence."""
    torch.set_num_threads(1)
    sets = [
        "data.limit=200",
        "model.kind=rbm",
        "model.options={hidden: 32}",
        "training.epochs=20",
        "training.sampling_rate=0.1",
        "training.clipping=fixed",
        "training.noise_multiplier=3.0",
        "training.learning_rate=0.05",
    ]
    plan = AuditPlan(min_guesses=50, noise_scale=0.0)
    report = run_audit(
        config_from_dict({}, sets), plan, seed=0, data=load_digits(limit=200), progress=False
    )
    assert report["score"] == "likelihood"
    assert report["correct"] > 0.75 * report["guesses"] and report["lower_bound"] > 0.5
