"""Empirical privacy audit of DP-SGD in one training run (Steinke, Nasr, Jagielski, NeurIPS 2023).

m canaries are built from the base data: canary i is a random base record plus one extra item
("mark") that only canary i has. Each canary joins the training set independently with
probability 1/2 (auditor's seeded generator). One model (k = 1 part) is trained by dpgm's own
DP-SGD path (MixtureTrainer, DPSGD, Poisson batches, the RDP accountant charging every step).
The auditor guesses "in" for the highest canary scores and "out" for the lowest, and
dpgm.privacy.one_run_audit turns the count of correct guesses into a lower bound on epsilon
(their Theorem 5.2) at the run's delta, to set against the accountant's claimed epsilon.

The claim is known before training (the plan's epsilon), so the number of guesses follows it:
the fewest whose cap (the bound if every guess is right) is at least claim + margin. With too
few guesses no run, however leaky, could refute the claim. Scores ("weights", default): the
squared movement, from initialisation to release, of the weights that read the canary's mark
(the input column of every linear layer over the record). Only canary i's own gradient reaches
its column, so with the noise off an excluded canary's column stays where it started; with the
noise on every column moves by the same noise. The initial weights are data-independent, and
DP-SGD is private for any initialisation, so using them leaves Thm 5.2 valid. "likelihood"
(black-box): log p(canary) - log p(canary without its mark) under the released model.

Only the training stage is audited: no partition (one part), no noisy part means (the output
bias keeps its default initialisation), no private item choice (data.top_items is ignored);
``rules: public`` configs get their rules from the base data. A target epsilon, if set,
calibrates the training noise alone, so the claim is the epsilon of exactly the run audited.
delta is that of a training run on the base records; the expected batch size uses
the public size n_base + m/2, not a released count. ``leak=True`` is a test switch: training
runs with the noise off (multiplier LEAK_NOISE_MULTIPLIER, fixed clipping) while the claim is
still the plan's epsilon, so the audit must catch it.

The audit's output is NOT a differentially private release: it tests the implementation, on
data the auditor may look at (public or synthetic data, or a custodian's own check).

    python -m dpgm.audit --config configs/digits.yaml --json audit.json
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from dpgm.cli import run_cli
from dpgm.config import Config, TrainingConfig, config_from_dict, load_config
from dpgm.data import load_dataset
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.io import atomic_write_json
from dpgm.models import build_model
from dpgm.pipeline.plan import run_delta, run_magnitude
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import plan_epsilon, sigma_for_epsilon, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.privacy.one_run_audit import (
    AuditOutcome,
    AuditSize,
    audit_scores,
    audit_size,
    canaries_for_guesses,
    epsilon_cap,
)
from dpgm.progress import progress_scope, stage_bar
from dpgm.rules import PublicFacts, apply_public_rules
from dpgm.threads import set_threads
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore

#: Gradient noise multiplier of the ``leak`` test switch: the noise is off in all but name
#: (it must stay far below Adam's epsilon 1e-8 times the expected batch size, or Adam would
#: scale it up to steps of the learning rate's size in every coordinate).
LEAK_NOISE_MULTIPLIER = 1e-12
#: Models the audit can train (the mark items must be plain extra inputs) and their "auto" score.
AUTO_SCORE = {"vae": "weights", "rbm": "likelihood"}


@dataclass(frozen=True)
class AuditPlan:
    """What the auditor chooses before training: guesses, canaries, score and the test switch.

    ``guesses`` None (default): the fewest whose cap (the bound if every guess is right) is at
    least the claim + ``margin``, and at least ``min_guesses`` (audit_size); half are "in",
    half "out". ``canaries`` None: enough that both halves can be right (canaries_for_guesses).
    ``score``: "weights" (white-box) or "likelihood" (black-box), see ``weight_scores`` and
    ``likelihood_scores``; "auto": weights for a VAE, likelihood for an RBM (its negative phase
    moves every mark's weights, canary or not).
    """

    canaries: int | None = None
    guesses: int | None = None
    confidence: float = 0.95
    margin: float = 1.0
    min_guesses: int = 200
    score: Literal["auto", "weights", "likelihood"] = "auto"
    score_draws: int = 16
    leak: bool = False

    def validate(self) -> None:
        if self.canaries is not None and self.canaries < 1:
            raise ConfigError(f"audit: canaries must be >= 1, got {self.canaries}")
        if self.guesses is not None and not (
            2 <= self.guesses
            and self.guesses % 2 == 0
            and (self.canaries is None or self.guesses <= self.canaries)
        ):
            raise ConfigError(
                f"audit: guesses must be even, >= 2 and <= canaries, got {self.guesses}"
            )
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit: confidence must be in (0, 1), got {self.confidence}")
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ConfigError(f"audit: margin must be >= 0, got {self.margin}")
        if self.min_guesses < 2:
            raise ConfigError(f"audit: min_guesses must be >= 2, got {self.min_guesses}")
        if self.score not in ("auto", "weights", "likelihood"):
            raise ConfigError(
                f"audit: score must be auto, weights or likelihood, got {self.score!r}"
            )
        if self.score_draws < 1:
            raise ConfigError(f"audit: score_draws must be >= 1, got {self.score_draws}")

    def size(self, claim: float, delta: float) -> AuditSize:
        """Guesses, canaries and cap for this claim (audit_size, unless the plan fixes them)."""
        r = self.guesses
        if r is None:
            try:
                r = audit_size(claim, delta, self.confidence, self.margin, self.min_guesses).guesses
            except ValueError as exc:
                raise ConfigError(f"audit: claim {claim:.4g} cannot be refuted: {exc}") from exc
        m = self.canaries if self.canaries is not None else canaries_for_guesses(r)
        if r > m:
            raise ConfigError(f"audit: {r} guesses need at least as many canaries, got {m}")
        return AuditSize(guesses=r, canaries=m, cap=epsilon_cap(m, r, delta, self.confidence))


class _Unaccounted:
    """The leak run's stand-in accountant: counts steps, charges nothing (its noise is fake)."""

    def __init__(self) -> None:
        self.steps = 0

    def spend(self, stage: str, *events: DpEvent, count: int = 1) -> None:
        self.steps += count


# ------------------------------------------------------------------ canaries and data
def make_canaries(base: BinaryDataset, m: int, rng: np.random.Generator) -> sp.csr_matrix:
    """m canaries over base.n_items + m items: a random base record plus mark item n_items + i."""
    rows = rng.integers(0, base.n_records, size=m)
    body = sp.csr_matrix(base.records[rows])
    marks = sp.identity(m, dtype=np.uint8, format="csr")
    return sp.hstack([body, marks], format="csr", dtype=np.uint8)


def training_records(
    base: BinaryDataset, canaries: sp.csr_matrix, included: np.ndarray
) -> np.ndarray | sp.csr_matrix:
    """The base records (marks all 0), then the included canaries; dense if the base is dense."""
    m = canaries.shape[1] - base.n_items
    padded = sp.hstack(
        [sp.csr_matrix(base.records), sp.csr_matrix((base.n_records, m), dtype=np.uint8)],
        format="csr",
    )
    records = sp.vstack([padded, canaries[np.flatnonzero(included)]], format="csr", dtype=np.uint8)
    return records if base.is_sparse else records.toarray()


# ------------------------------------------------------------------ scores
def input_weights(model: nn.Module) -> list[torch.Tensor]:
    """Weights [out, n_items] of the linear layers that read the record (VAE: the encoder's
    first layer; RBM: W and the visible bias): column j multiplies item j and nothing else."""
    n_items = int(model.n_items)  # type: ignore[arg-type]
    return [
        layer.weight
        for layer in model.modules()
        if isinstance(layer, nn.Linear) and layer.in_features == n_items
    ]


@torch.no_grad()
def weight_scores(
    initial: Sequence[torch.Tensor], released: Sequence[torch.Tensor], n_base_items: int
) -> np.ndarray:
    """White-box: how far each canary's mark columns of the input weights (``input_weights``)
    moved from ``initial`` to ``released``, squared. Only the canary's own gradient and the
    step noise reach its column: with the noise off an excluded canary's column never moves.
    Built to catch a broken run: with the noise on (and Adam) the noise sets how far every
    column moves, an included one no further (its canary's loss pulls it back), so the bound
    stays near 0 rather than tight."""
    total = torch.zeros(released[0].shape[1] - n_base_items, dtype=torch.float64)
    for start, end in zip(initial, released):
        moved = end[:, n_base_items:].double().cpu() - start[:, n_base_items:].double().cpu()
        total += moved.pow(2).sum(dim=0)
    return total.numpy()


@torch.no_grad()
def likelihood_scores(
    model: nn.Module,
    canaries: sp.csr_matrix,
    n_base_items: int,
    draws: int,
    generator: torch.Generator,
) -> np.ndarray:
    """Black-box: log p(canary) - log p(canary without its mark) from per-record losses (higher:
    the mark was learnt). Both losses use the same reparameterisation draws, ``draws`` times."""
    model.eval()
    p = next(model.parameters())
    with_mark = torch.as_tensor(canaries.toarray(), dtype=p.dtype, device=p.device)
    without = with_mark.clone()
    without[:, n_base_items:] = 0
    total = torch.zeros(with_mark.shape[0], dtype=torch.float64, device=p.device)
    for _ in range(draws):
        state = generator.get_state()
        loss_with = model.loss_per_record(with_mark, generator)
        generator.set_state(state)
        loss_without = model.loss_per_record(without, generator)
        total += (loss_without - loss_with).double()
    return (total / draws).cpu().numpy()


# ------------------------------------------------------------------ the experiment
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
        facts = PublicFacts(
            n_items=base.n_items,
            records_magnitude=magnitude,
            epsilon=float(cfg.privacy.target_epsilon),  # type: ignore[arg-type]
            delta=delta,
            min_items=cfg.data.min_items,
        )
        apply_public_rules(cfg, facts, cfg.stated)
    if cfg.model.kind not in AUTO_SCORE:
        raise ConfigError(
            f"audit: model.kind must be one of {list(AUTO_SCORE)}, got {cfg.model.kind}"
        )
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


# ------------------------------------------------------------------ command line
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpgm.audit",
        description=(
            "Empirical privacy audit of dpgm's DP-SGD training in ONE run (Steinke, Nasr and "
            "Jagielski, NeurIPS 2023). Inserts m canaries (each a base record plus an item only "
            "it has), each included with probability 1/2, trains one model (k = 1 part) through "
            "the real DP-SGD path, scores every canary (default: how far the weights reading its "
            "item moved from their initial values), guesses 'in' for the highest and 'out' for "
            "the lowest scores, and prints the accountant's claimed epsilon beside the audit's "
            "lower bound (Thm 5.2) at the run's delta and its cap, the bound if every guess were "
            "right. The number of guesses follows the claim so that the cap clears it by "
            "--margin. A lower bound above the claim means the implementation leaks more than "
            "it claims."
        ),
        epilog="Example: python -m dpgm.audit --config configs/digits.yaml "
        "--set training.epochs=5 --json audit.json",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="run config (YAML); its data, model, training and privacy.delta "
        "are used (default: the built-in defaults, digits data)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. training.epochs=5 (repeatable)",
    )
    p.add_argument(
        "--guesses",
        type=int,
        help="guesses, half 'in' and half 'out' (default: the fewest whose cap is "
        "the claim + margin, at least --min-guesses)",
    )
    p.add_argument(
        "--canaries",
        type=int,
        help="m: number of canaries (default: enough that every guess can be right)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=AuditPlan.margin,
        help="the cap must reach claim + margin (default 1)",
    )
    p.add_argument(
        "--min-guesses",
        type=int,
        default=AuditPlan.min_guesses,
        help=f"fewest guesses (default {AuditPlan.min_guesses})",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=AuditPlan.confidence,
        help="confidence level (default 0.95)",
    )
    p.add_argument(
        "--score",
        choices=("auto", "weights", "likelihood"),
        default=AuditPlan.score,
        help="weights: movement of the weights reading the canary's item (white-box); "
        "likelihood: log p(canary) - log p(canary without it) (black-box); auto "
        "(default): weights for a VAE, likelihood for an RBM",
    )
    p.add_argument(
        "--score-draws",
        type=int,
        default=AuditPlan.score_draws,
        help="reparameterisation draws per likelihood score (VAE; default 16)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the auditor's generator (default 0)"
    )
    p.add_argument(
        "--leak",
        action="store_true",
        help=f"TEST SWITCH: train with the noise off (multiplier "
        f"{LEAK_NOISE_MULTIPLIER:g}, fixed clipping) while claiming the plan's "
        "epsilon; the audit should catch it",
    )
    p.add_argument(
        "--threads", type=int, help="torch and BLAS threads (default: the cores available)"
    )
    p.add_argument("--json", type=Path, help="write the full report to this JSON file")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = (
        load_config(args.config, args.overrides)
        if args.config
        else config_from_dict({}, args.overrides)
    )
    plan = AuditPlan(
        canaries=args.canaries,
        guesses=args.guesses,
        confidence=args.confidence,
        margin=args.margin,
        min_guesses=args.min_guesses,
        score=args.score,
        score_draws=args.score_draws,
        leak=args.leak,
    )
    set_threads(args.threads)
    report = run_audit(cfg, plan, seed=args.seed, progress=not args.no_progress)
    print(summary(report))
    if args.json:
        atomic_write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_cli(main))
