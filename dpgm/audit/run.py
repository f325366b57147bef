"""The audit's experiment: the config it trains and its claim, one run by dpgm's own DP-SGD path,
the scores, guesses and bound (``run_audit``), and its report (``summary``)."""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from dpgm.audit.bounds import AuditOutcome, audit_scores
from dpgm.audit.canaries import (
    GradientCanaries,
    gradient_scores,
    input_weights,
    likelihood_scores,
    make_canaries,
    training_records,
    weight_scores,
)
from dpgm.audit.plan import AUTO_SCORE, AuditPlan, weakened
from dpgm.config import Config, TrainingConfig
from dpgm.data import load_dataset
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.models import build_model
from dpgm.pipeline.plan import public_facts, run_delta, run_magnitude
from dpgm.plan import apply_public_rules
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.privacy.noise_scale import scaled_noise
from dpgm.privacy.verdict import stamped
from dpgm.progress import progress_scope, stage_bar
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import MixtureTrainer, RecordStore


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


def _model_and_records(cfg: Config, base: BinaryDataset, canaries: int, score: str, rng: np.random.Generator,
                       included: np.ndarray, generator: torch.Generator) -> tuple[nn.Module, Any, sp.csr_matrix | None]:
    """The model to train, its records and (record canaries) the canaries: gradient canaries need only
    mark columns that no record holds; record canaries join the records."""
    if score == "gradients":
        probe = build_model(cfg.model, base.n_items + 1, generator=torch.Generator().manual_seed(0))
        marks = GradientCanaries.marks(canaries, input_weights(probe)[0].shape[0])
        records = training_records(base, sp.csr_matrix((0, base.n_items + marks), dtype=np.uint8), included[:0])
        return build_model(cfg.model, base.n_items + marks, generator=generator).to(cfg.device), records, None
    made = make_canaries(base, canaries, rng)
    model = build_model(cfg.model, base.n_items + canaries, generator=generator).to(cfg.device)
    return model, training_records(base, made, included), made


def run_audit(
    cfg: Config,
    plan: AuditPlan,
    *,
    seed: int,
    data: BinaryDataset | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Size the audit to the claim, build canaries, train by the real DP-SGD path (its noise scaled by
    ``plan.noise_scale``, its claim not), score, guess and bound: a JSON-ready dict."""
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
    score = plan.score if plan.score != "auto" else AUTO_SCORE[cfg.model.kind]

    included = rng.random(m) < 0.5
    model, records, canaries = _model_and_records(cfg, base, m, score, rng, included, generator)
    n_expected = base.n_records + m / 2  # public: the realised count is never used
    initial = [w.detach().clone() for w in input_weights(model)]
    trainer = MixtureTrainer(
        [model],
        RecordStore(records, cfg.device),
        np.zeros(records.shape[0], dtype=np.int64),
        np.array([n_expected]),
        cfg.training,
        generator=generator,
        total_steps=steps,
    )
    watch = GradientCanaries(model, base.n_items, included, cfg.training.sampling_rate, rng) \
        if score == "gradients" else None
    if watch is not None:
        trainer.engine.hooks.append(watch)
    accountant = Accountant(delta=delta, bound=cfg.privacy.dependent_bound)
    desc = "audit: DP-SGD" + (f" (NOISE x {plan.noise_scale:g})" if plan.noise_scale != 1 else "")
    with progress_scope(enabled=progress), stage_bar(desc, steps, unit="step") as bar, \
            scaled_noise(plan.noise_scale):
        for _ in range(steps):
            trainer.step(accountant)
            bar.advance()
    released = trainer.released_models()[0]
    if watch is not None:
        scores = gradient_scores(np.stack(watch.observed), cfg.training.sampling_rate)
    elif score == "weights":
        scores = weight_scores(initial, input_weights(released), base.n_items)
    else:
        scores = likelihood_scores(released, canaries, base.n_items, plan.score_draws, score_generator)
    half = size.guesses // 2
    outcome = audit_scores(scores, included, half, half, delta, plan.confidence)
    return _report(cfg, plan, score, base, outcome, accountant, steps, seed, included,
                   time.perf_counter() - start)


def _report(
    cfg: Config,
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
    t = cfg.training
    claimed = accountant.spent().epsilon
    scale = plan.noise_scale
    true = math.inf if scale == 0 else plan_epsilon(  # every noise of the step scaled: the run's true epsilon
        step_event(sampling_rate=t.sampling_rate, noise_multiplier=t.noise_multiplier * scale, clipping=t.clipping,
                   hist_noise_multiplier=t.hist_noise_multiplier * scale),
        steps=steps, delta=outcome.delta, bound=cfg.privacy.dependent_bound)
    return stamped({
        **weakened(scale, true),
        "method": "one-run audit (Steinke, Nasr, Jagielski 2023, Thm 5.2); k = 1",
        "audited": "training",
        "claimed_epsilon": claimed,
        "lower_bound": outcome.epsilon_lower_bound,
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
        "steps": steps,
        "trained": {
            "noise_multiplier": t.noise_multiplier * plan.noise_scale,
            "claimed_noise_multiplier": t.noise_multiplier,
            "clipping": t.clipping,
            "clip_norm": t.clip_norm,
            "sampling_rate": t.sampling_rate,
            "optimizer": t.optimizer,
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
    })


def summary(report: dict[str, Any]) -> str:
    """The claim, and the audited lower bound beside its cap and confidence; first, a weakened run's warning."""
    verdict = "REFUTES the claim" if report["refuted"] else "does not refute the claim"
    warning = f"{report['warning']}\n" if "warning" in report else ""
    how = (f"{report['correct']}/{report['guesses']} guesses correct; m={report['canaries']} canaries, "
           f"{report['guesses_in']} in + {report['guesses_out']} out; {report['score']} scores"
           if "guesses" in report else f"{report['trials']} runs on each of two neighbours")
    return (
        f"{warning}claimed epsilon      {report['claimed_epsilon']:.4g} at delta={report['delta']:g} "
        f"({report['audited']})\n"
        f"audit lower bound    {report['lower_bound']:.4g} "
        f"(cap {report['epsilon_cap']:.4g}) "
        f"at {100 * report['confidence']:g}% confidence, {verdict} ({how})"
    )
