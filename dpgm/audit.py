"""Empirical privacy audit of DP-SGD in one training run (Steinke, Nasr, Jagielski, NeurIPS 2023).

m canaries are built from the base data: canary i is a random base record plus one extra item
("mark") that only canary i has. Each canary joins the training set independently with
probability 1/2 (auditor's seeded generator). One model (k = 1 part) is trained by dpgm's own
DP-SGD path (MixtureTrainer, DPSGD, Poisson batches, the RDP accountant charging every step).
Each canary's score is log p(canary) - log p(canary without its mark) under the released model
(negative ELBO differences for a VAE, free-energy differences for an RBM): a model that learnt
the mark scores high. The auditor guesses "in" for the highest scores and "out" for the lowest
and dpgm.privacy.one_run_audit turns the count of correct guesses into a lower bound on epsilon
(their Theorem 5.2) at the run's delta, to set against the accountant's claimed epsilon.

Only the training stage is audited: no partition (one part), no noisy part means (the
output bias keeps its default initialisation), no private item choice (data.top_items is
ignored). A target epsilon, if set, calibrates the training noise alone. The expected batch
size uses the public size n_base + m/2, not a released count. ``leak=True`` is a test
switch: training runs with the noise effectively off (multiplier LEAK_NOISE_MULTIPLIER,
fixed clipping) while the claim is still the configured plan's epsilon, so the audit must
catch it.

The audit's output is NOT a differentially private release: it tests the implementation, on
data the auditor may look at (public or synthetic data, or a custodian's own check).

    python -m dpgm.audit --set training.epochs=5 --canaries 500 --json audit.json
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from dpgm.cli import run_cli
from dpgm.config import Config, config_from_dict, load_config
from dpgm.data import load_dataset
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.io import atomic_write_json
from dpgm.models import build_model
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import default_delta, sigma_for_epsilon, steps_for_epochs
from dpgm.privacy.events import DpEvent
from dpgm.privacy.one_run_audit import AuditOutcome, audit_scores
from dpgm.progress import progress_scope, stage_bar
from dpgm.threads import set_threads
from dpgm.training.dpsgd import step_event
from dpgm.training.mixture import STAGE, MixtureTrainer, RecordStore

#: Gradient noise multiplier of the ``leak`` test switch (noise effectively off).
LEAK_NOISE_MULTIPLIER = 1e-6


@dataclass(frozen=True)
class AuditPlan:
    """What the auditor chooses before training: canaries, guesses, confidence, the test switch.

    ``guesses_in`` / ``guesses_out`` default to m // 10 each (fixed in advance, as Thm 5.2 needs).
    """

    canaries: int = 500
    guesses_in: int | None = None
    guesses_out: int | None = None
    confidence: float = 0.95
    score_draws: int = 16
    leak: bool = False

    def guesses(self) -> tuple[int, int]:
        k_in = self.canaries // 10 if self.guesses_in is None else self.guesses_in
        k_out = self.canaries // 10 if self.guesses_out is None else self.guesses_out
        return k_in, k_out

    def validate(self) -> None:
        k_in, k_out = self.guesses()
        if self.canaries < 1:
            raise ConfigError(f"audit: canaries must be >= 1, got {self.canaries}")
        if k_in < 0 or k_out < 0 or k_in + k_out < 1 or k_in + k_out > self.canaries:
            raise ConfigError(
                f"audit: need 1 <= guesses_in + guesses_out <= canaries, got {k_in} + {k_out}"
            )
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit: confidence must be in (0, 1), got {self.confidence}")
        if self.score_draws < 1:
            raise ConfigError(f"audit: score_draws must be >= 1, got {self.score_draws}")


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


@torch.no_grad()
def canary_scores(
    model: nn.Module,
    canaries: sp.csr_matrix,
    n_base_items: int,
    draws: int,
    generator: torch.Generator,
) -> np.ndarray:
    """log p(canary) - log p(canary without its mark) from per-record losses (higher: learnt).

    Both losses use the same reparameterisation draws (common random numbers), ``draws`` times.
    """
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
def _plan_event(cfg: Config) -> DpEvent:
    t = cfg.training
    return step_event(
        sampling_rate=t.sampling_rate,
        noise_multiplier=t.noise_multiplier,
        clipping=t.clipping,
        hist_noise_multiplier=t.hist_noise_multiplier,
    )


def _resolve(cfg: Config, n_expected: float, steps: int) -> tuple[Config, float]:
    """The audited config (default output bias; sigma calibrated if a target is set) and delta."""
    cfg = copy.deepcopy(cfg)
    cfg.model.output_bias = "default"  # the noisy-means stage is not audited here
    cfg.model.calibrate = False
    delta = cfg.privacy.delta or default_delta(math.floor(n_expected))
    if cfg.privacy.target_epsilon is not None:  # training alone gets the whole target
        t = cfg.training
        t.noise_multiplier = sigma_for_epsilon(
            sampling_rate=t.sampling_rate,
            steps=steps,
            delta=delta,
            target_epsilon=cfg.privacy.target_epsilon,
            event_factory=lambda s: step_event(
                sampling_rate=t.sampling_rate,
                noise_multiplier=s,
                clipping=t.clipping,
                hist_noise_multiplier=t.hist_noise_multiplier,
            ),
            bound=cfg.privacy.dependent_bound,
        )
    return cfg, delta


def _trained_config(cfg: Config, leak: bool) -> Config:
    """What actually trains: the plan, or (leak) the plan with the noise effectively off."""
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
    """Build canaries, train by the real DP-SGD path, score, guess and bound: a JSON-ready dict."""
    plan.validate()
    start = time.perf_counter()
    base = data if data is not None else load_dataset(cfg.data)
    m = plan.canaries
    rng = np.random.default_rng(seed)
    generator = torch.Generator()
    generator.manual_seed(int(rng.integers(2**62)))
    score_generator = torch.Generator()
    score_generator.manual_seed(int(rng.integers(2**62)))

    canaries = make_canaries(base, m, rng)
    included = rng.random(m) < 0.5
    records = training_records(base, canaries, included)
    n_expected = base.n_records + m / 2  # public: the realised count is never used
    steps = steps_for_epochs(cfg.training.epochs, cfg.training.sampling_rate)
    cfg, delta = _resolve(cfg, n_expected, steps)
    trained_cfg = _trained_config(cfg, plan.leak)

    n_items = base.n_items + m
    model = build_model(cfg.model, n_items, generator=generator).to(cfg.device)
    trainer = MixtureTrainer(
        [model],
        RecordStore(records, cfg.device),
        np.zeros(records.shape[0], dtype=np.int64),
        np.array([n_expected]),
        trained_cfg.training,
        generator=generator,
    )
    accountant = Accountant(delta=delta, bound=cfg.privacy.dependent_bound)
    charged: Accountant | _Unaccounted = _Unaccounted() if plan.leak else accountant
    desc = "audit: DP-SGD" + (" (LEAK: noise off)" if plan.leak else "")
    with progress_scope(enabled=progress), stage_bar(desc, steps, unit="step") as bar:  # terminal only
        for _ in range(steps):
            trainer.step(charged)  # type: ignore[arg-type]
            bar.advance()
    if plan.leak:  # the claim stays that of the configured plan, for exactly the steps trained
        accountant.spend(STAGE, _plan_event(cfg), count=steps)
    released = trainer.released_models()[0]
    scores = canary_scores(released, canaries, base.n_items, plan.score_draws, score_generator)
    k_in, k_out = plan.guesses()
    outcome = audit_scores(scores, included, k_in, k_out, delta, plan.confidence)
    claimed = accountant.spent()
    return _report(
        cfg,
        trained_cfg,
        plan,
        base,
        outcome,
        claimed.epsilon,
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
    base: BinaryDataset,
    outcome: AuditOutcome,
    claimed: float,
    accountant: Accountant,
    steps: int,
    seed: int,
    included: np.ndarray,
    wall: float,
) -> dict[str, Any]:
    t = trained_cfg.training
    return {
        "method": "one-run audit (Steinke, Nasr, Jagielski 2023, Thm 5.2); mark canaries; k = 1",
        "claimed_epsilon": claimed,
        "epsilon_lower_bound": outcome.epsilon_lower_bound,
        "delta": outcome.delta,
        "confidence": outcome.confidence,
        "canaries": outcome.m,
        "canaries_included": int(included.sum()),
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
    """Two human lines: the claim and the audited lower bound with its confidence."""
    leak = "  [LEAK TEST: trained with the noise off]" if report["leak"] else ""
    return (
        f"claimed epsilon      {report['claimed_epsilon']:.4g} at delta={report['delta']:g} "
        f"(RDP accountant, {report['steps']} DP-SGD steps){leak}\n"
        f"audit lower bound    {report['epsilon_lower_bound']:.4g} "
        f"at {100 * report['confidence']:g}% confidence "
        f"({report['correct']}/{report['guesses_in'] + report['guesses_out']} guesses correct; "
        f"m={report['canaries']} canaries, {report['guesses_in']} in + {report['guesses_out']} out)"
    )


# ------------------------------------------------------------------ command line
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpgm.audit",
        description=(
            "Empirical privacy audit of dpgm's DP-SGD training in ONE run (Steinke, Nasr and "
            "Jagielski, "
            "NeurIPS 2023). Inserts m canaries (each a base record plus an item only it has), each "
            "included with probability 1/2, trains one model (k = 1 part) through the real DP-SGD "
            "path, scores every canary by log p(canary) - log p(canary without its item), guesses "
            "'in' for the highest and 'out' for the lowest scores, and prints the accountant's "
            "claimed epsilon "
            "beside the audit's lower bound (Thm 5.2) at the run's delta. A lower bound above the "
            "claim means the implementation leaks more than it claims."
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
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. training.epochs=5 (repeatable)")
    p.add_argument("--canaries", type=int, default=AuditPlan.canaries, help="m: number of canaries (default 500)")
    p.add_argument("--guesses-in", type=int, help="guess 'included' for this many top scores (default m/10)")
    p.add_argument("--guesses-out", type=int, help="guess 'excluded' for this many bottom scores (default m/10)")
    p.add_argument("--confidence", type=float, default=AuditPlan.confidence, help="confidence level (default 0.95)")
    p.add_argument("--score-draws", type=int, default=AuditPlan.score_draws,
                   help="reparameterisation draws averaged per canary score (VAE; default 16)")
    p.add_argument("--seed", type=int, default=0, help="seed of the auditor's generator (default 0)")
    p.add_argument("--leak", action="store_true", help="TEST SWITCH: train with the noise effectively off "
                   "(multiplier 1e-6, fixed clipping) while claiming the configured plan's epsilon; the audit "
                   "should catch it")
    p.add_argument("--threads", type=int, help="torch and BLAS threads (default: the cores available)")
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
    plan = AuditPlan(canaries=args.canaries, guesses_in=args.guesses_in, guesses_out=args.guesses_out,
                     confidence=args.confidence, score_draws=args.score_draws, leak=args.leak)
    set_threads(args.threads)
    report = run_audit(cfg, plan, seed=args.seed, progress=not args.no_progress)
    print(summary(report))
    if args.json:
        atomic_write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_cli(main))
