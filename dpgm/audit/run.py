"""The audit's experiment: the config it trains and its claim, one run by dpgm's own DP-SGD path,
the scores, guesses and bound (``run_audit``), and its report (``summary``)."""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch

from dpgm.audit.bounds import AuditOutcome, audit_scores
from dpgm.audit.canaries import (
    input_weights,
    likelihood_scores,
    make_canaries,
    training_records,
    weight_scores,
)
from dpgm.audit.plan import AUTO_SCORE, LEAK_NOISE_MULTIPLIER, AuditPlan
from dpgm.config import Config, TrainingConfig
from dpgm.data import load_dataset
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models import build_model
from dpgm.pipeline.plan import public_facts, run_delta, run_magnitude
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.progress import progress_scope, stage_bar
from dpgm.rules import apply_public_rules
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore


class _Unaccounted:
    """The leak run's stand-in accountant: counts steps, charges nothing (its noise is fake)."""

    def __init__(self) -> None:
        self.steps = 0

    def spend(self, stage: str, *events: DpEvent, count: int = 1) -> None:
        self.steps += count


def _step_event(t: TrainingConfig, noise_multiplier: float) -> DpEvent:
    """One planned DP-SGD step's event at this gradient noise multiplier."""
    return step_event(
        sampling_rate=t.sampling_rate,
        noise_multiplier=noise_multiplier,
        clipping=t.clipping,
        hist_noise_multiplier=t.hist_noise_multiplier,
    )


def audited_config(cfg: Config, base: BinaryDataset) -> tuple[Config, float, int, float]:
    """The config the audit trains (rules applied, default output bias, sigma calibrated to a
    target), its delta, its steps and its claim: the epsilon of exactly those steps."""
    cfg = copy.deepcopy(cfg)
    magnitude = run_magnitude(cfg, base)
    delta = run_delta(cfg, magnitude)  # a training run's delta on the base records
    if cfg.rules == "public":
        apply_public_rules(cfg, public_facts(cfg, base, magnitude, delta), cfg.stated)
    if cfg.model.kind not in AUTO_SCORE:
        ruled = " (chosen by rules: public; state model.kind: vae to audit its DP-SGD)" if cfg.rules == "public" else ""
        raise ConfigError(f"audit: model.kind must be one of {list(AUTO_SCORE)}, got {cfg.model.kind}{ruled}")
    cfg.model.output_bias = "default"  # the noisy-means stage is not audited here
    cfg.model.calibrate = False
    t = cfg.training
    steps = steps_for_epochs(t.epochs, t.sampling_rate)
    if cfg.privacy.target_epsilon is not None:  # training alone gets the whole target
        t.noise_multiplier = sigma_for_epsilon(
            sampling_rate=t.sampling_rate,
            steps=steps,
            delta=delta,
            target_epsilon=cfg.privacy.target_epsilon,
            event_factory=lambda sigma: _step_event(t, sigma),
            bound=cfg.privacy.dependent_bound,
        )
    event = _step_event(t, t.noise_multiplier)
    claim = plan_epsilon(event, steps=steps, delta=delta, bound=cfg.privacy.dependent_bound)
    return cfg, delta, steps, claim


def _trained_config(cfg: Config, leak: bool) -> Config:
    """What actually trains: the plan, or (leak) the plan with the noise off."""
    if not leak:
        return cfg
    trained = copy.deepcopy(cfg)
    trained.training.noise_multiplier = LEAK_NOISE_MULTIPLIER
    trained.training.clipping = "fixed"
    return trained


def run_audit(
    cfg: Config,
    plan: AuditPlan,
    *,
    seed: int,
    data: BinaryDataset | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Size the audit to the claim, build canaries, train by the real DP-SGD path, score, guess
    and bound: a JSON-ready dict."""
    plan.validate()
    start = time.perf_counter()
    base = data if data is not None else load_dataset(cfg.data)
    cfg, delta, steps, planned_claim = audited_config(cfg, base)
    size = plan.size(planned_claim, delta)
    m = size.canaries
    rng = np.random.default_rng(seed)
    generator = torch.Generator()
    generator.manual_seed(int(rng.integers(2**62)))
    score_generator = torch.Generator()
    score_generator.manual_seed(int(rng.integers(2**62)))

    canaries = make_canaries(base, m, rng)
    included = rng.random(m) < 0.5
    records = training_records(base, canaries, included)
    n_expected = base.n_records + m / 2  # public: the realised count is never used
    trained_cfg = _trained_config(cfg, plan.leak)

    model = build_model(cfg.model, base.n_items + m, generator=generator).to(cfg.device)
    initial = [w.detach().clone() for w in input_weights(model)]
    trainer = MixtureTrainer(
        [model],
        RecordStore(records, cfg.device),
        np.zeros(records.shape[0], dtype=np.int64),
        np.array([n_expected]),
        trained_cfg.training,
        generator=generator,
        total_steps=steps,
    )
    accountant = Accountant(delta=delta, bound=cfg.privacy.dependent_bound)
    charged: Accountant | _Unaccounted = _Unaccounted() if plan.leak else accountant
    desc = "audit: DP-SGD" + (" (LEAK: noise off)" if plan.leak else "")
    with progress_scope(enabled=progress), stage_bar(desc, steps, unit="step") as bar:
        for _ in range(steps):
            trainer.step(charged)  # type: ignore[arg-type]
            bar.advance()
    if plan.leak:  # the claim stays that of the configured plan, for exactly the steps trained
        accountant.spend(
            STAGE, _step_event(cfg.training, cfg.training.noise_multiplier), count=steps
        )
    released = trainer.released_models()[0]
    score = plan.score if plan.score != "auto" else AUTO_SCORE[cfg.model.kind]
    if score == "weights":
        scores = weight_scores(initial, input_weights(released), base.n_items)
    else:
        scores = likelihood_scores(
            released, canaries, base.n_items, plan.score_draws, score_generator
        )
    half = size.guesses // 2
    outcome = audit_scores(scores, included, half, half, delta, plan.confidence)
    return _report(
        cfg,
        trained_cfg,
        plan,
        score,
        base,
        outcome,
        accountant,
        steps,
        seed,
        included,
        time.perf_counter() - start,
    )


def _report(
    cfg: Config,
    trained_cfg: Config,
    plan: AuditPlan,
    score: str,
    base: BinaryDataset,
    outcome: AuditOutcome,
    accountant: Accountant,
    steps: int,
    seed: int,
    included: np.ndarray,
    wall: float,
) -> dict[str, Any]:
    t = trained_cfg.training
    claimed = accountant.spent().epsilon
    return {
        "method": "one-run audit (Steinke, Nasr, Jagielski 2023, Thm 5.2); mark canaries; k = 1",
        "claimed_epsilon": claimed,
        "epsilon_lower_bound": outcome.epsilon_lower_bound,
        "epsilon_cap": outcome.epsilon_cap,
        "refuted": outcome.epsilon_lower_bound > claimed,
        "delta": outcome.delta,
        "confidence": outcome.confidence,
        "margin": plan.margin,
        "score": score,
        "canaries": outcome.m,
        "canaries_included": int(included.sum()),
        "guesses": outcome.guesses,
        "guesses_in": outcome.guesses_in,
        "guesses_out": outcome.guesses_out,
        "correct": outcome.correct,
        "leak": plan.leak,
        "steps": steps,
        "trained": {
            "noise_multiplier": t.noise_multiplier,
            "clipping": t.clipping,
            "clip_norm": t.clip_norm,
            "sampling_rate": t.sampling_rate,
            "model": cfg.model.kind,
        },
        "base_records": base.n_records,
        "base_items": base.n_items,
        "dataset": base.name,
        "seed": seed,
        "score_draws": plan.score_draws,
        "privacy_report": accountant.report(),
        "config": cfg.to_dict(),
        "torch_threads": torch.get_num_threads(),
        "wall_s": wall,
    }


def summary(report: dict[str, Any]) -> str:
    """Two human lines: the claim, and the audited lower bound beside its cap and confidence."""
    leak = "  [LEAK TEST: trained with the noise off]" if report["leak"] else ""
    verdict = "REFUTES the claim" if report["refuted"] else "does not refute the claim"
    return (
        f"claimed epsilon      {report['claimed_epsilon']:.4g} at delta={report['delta']:g} "
        f"(RDP accountant, {report['steps']} DP-SGD steps){leak}\n"
        f"audit lower bound    {report['epsilon_lower_bound']:.4g} "
        f"(cap {report['epsilon_cap']:.4g}) "
        f"at {100 * report['confidence']:g}% confidence, {verdict} "
        f"({report['correct']}/{report['guesses']} guesses correct; m={report['canaries']} "
        f"canaries, {report['guesses_in']} in + {report['guesses_out']} out; "
        f"{report['score']} scores)"
    )
