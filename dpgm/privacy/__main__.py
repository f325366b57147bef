"""``python -m dpgm.privacy``: what a training plan costs in epsilon, and the noise it needs.

Subcommands: ``epsilon`` (cost of a plan), ``sigma`` (noise multiplier for a target epsilon),
``steps`` (steps a budget affords) and ``report`` (epsilon of a saved ledger, per stage).
A plan is DP-SGD with Poisson sampling, optionally with a DPNorm histogram released from the
same batch (``--histogram-noise-multiplier``) and a DP k-means stage before it
(``--kmeans-iterations``: 2 releases per iteration plus the final part sizes). Add/remove
neighbours, RDP accountant (dpgm/privacy/accountant.py).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from dpgm.cli import run_cli
from dpgm.errors import ConfigError, DataError
from dpgm.privacy.accountant import Accountant, epsilon_from_rdp, ledger_rdp, rdp_curve
from dpgm.privacy.calibrate import sigma_for_epsilon, steps_for_budget, steps_for_epochs
from dpgm.privacy.events import (
    DpEvent,
    GaussianEvent,
    SampledGaussianEvent,
    SampledJointGaussianEvent,
)
from dpgm.privacy.ledger import LedgerEntry, PrivacyLedger
from dpgm.privacy.rdp import DEFAULT_ORDERS, rdp_to_epsilon


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one line (``error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message}")


def _number(kind: str, check: Callable[[float], bool]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number {kind}, got {text!r}") from None
        if not (math.isfinite(value) and check(value)):
            raise argparse.ArgumentTypeError(f"expected a number {kind}, got {text!r}")
        return value

    return parse


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


_positive = _number("> 0", lambda v: v > 0)
_rate = _number("in (0, 1]", lambda v: 0 < v <= 1)
_delta = _number("in (0, 1)", lambda v: 0 < v < 1)


def _add_plan_options(p: argparse.ArgumentParser, *, needs_length: bool = True) -> None:
    p.add_argument("--sampling-rate", "-q", type=_rate, required=True, metavar="Q",
                   help="Poisson sampling rate q: each record joins a batch with probability q")
    if needs_length:
        length = p.add_mutually_exclusive_group(required=True)
        length.add_argument("--steps", type=_count, metavar="N", help="number of DP-SGD steps")
        length.add_argument("--epochs", type=_positive, metavar="E",
                            help="number of epochs; one epoch is ceil(1/q) steps (DPGM paper)")
    p.add_argument("--delta", type=_delta, required=True, metavar="D", help="target delta, in (0, 1)")
    p.add_argument("--histogram-noise-multiplier", type=_positive, metavar="SC",
                   help="also release a DPNorm histogram (multiplier SC) from every batch")
    p.add_argument("--bound", choices=("joint", "holder"), default="joint",
                   help="analysis of histogram + gradient from one batch: 'joint' (exact, default) "
                        "or 'holder' (DPGM Theorem 3, made valid); needs --histogram-noise-multiplier")
    p.add_argument("--kmeans-iterations", type=_count, metavar="T",
                   help="private k-means iterations before training, each releasing noisy counts and "
                        "noisy feature sums (2 Gaussian mechanisms)")
    p.add_argument("--kmeans-noise-multiplier", type=_positive, metavar="SK",
                   help="noise multiplier of the k-means releases (needs --kmeans-iterations)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m dpgm.privacy``."""
    parser = _Parser(
        prog="python -m dpgm.privacy",
        description="Privacy accounting for dpgm plans (RDP accountant, add/remove neighbours, "
                    "Poisson sampling). Bad input: one-line error, exit code 2.",
        epilog="example: python -m dpgm.privacy epsilon --sampling-rate 0.0017 "
               "--noise-multiplier 1.0 --epochs 20 --delta 1e-5 --json",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("epsilon", help="epsilon of a training plan",
                       description="Epsilon of DP-SGD (and optional DPNorm and k-means stages).")
    _add_plan_options(p)
    p.add_argument("--noise-multiplier", "-s", type=_positive, required=True, metavar="S",
                   help="gradient noise multiplier sigma (noise std / clipping norm)")

    p = sub.add_parser("sigma", help="gradient noise multiplier for a target epsilon",
                       description="Smallest gradient noise multiplier whose whole plan (k-means stage "
                                   "included) stays within --target-epsilon; re-checked, never above.")
    _add_plan_options(p)
    p.add_argument("--target-epsilon", type=_positive, required=True, metavar="EPS", help="epsilon budget")

    p = sub.add_parser("steps", help="steps (and whole epochs) a budget affords",
                       description="Largest number of DP-SGD steps within --target-epsilon.")
    _add_plan_options(p, needs_length=False)
    p.add_argument("--noise-multiplier", "-s", type=_positive, required=True, metavar="S",
                   help="gradient noise multiplier sigma")
    p.add_argument("--target-epsilon", type=_positive, required=True, metavar="EPS", help="epsilon budget")

    p = sub.add_parser("report", help="epsilon of a saved ledger (JSON), overall and per stage",
                       description="Epsilon of a privacy ledger written by PrivacyLedger.save.")
    p.add_argument("ledger", metavar="LEDGER.json", help="ledger file")
    p.add_argument("--delta", type=_delta, required=True, metavar="D", help="target delta, in (0, 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def _check_plan_options(args: argparse.Namespace) -> None:
    if (args.kmeans_iterations is None) != (args.kmeans_noise_multiplier is None):
        raise ConfigError("--kmeans-iterations and --kmeans-noise-multiplier go together")
    if args.bound == "holder" and args.histogram_noise_multiplier is None:
        raise ConfigError("--bound holder needs --histogram-noise-multiplier")


def _sgd_event(args: argparse.Namespace, sigma: float) -> DpEvent:
    """One DP-SGD step: the sampled gradient release, with the DPNorm histogram if any."""
    if args.histogram_noise_multiplier is None:
        return SampledGaussianEvent(sampling_rate=args.sampling_rate, noise_multiplier=sigma)
    return SampledJointGaussianEvent(
        sampling_rate=args.sampling_rate,
        noise_multipliers=(args.histogram_noise_multiplier, sigma),
    )


def _kmeans_entries(args: argparse.Namespace) -> list[LedgerEntry]:
    if args.kmeans_iterations is None:
        return []
    from dpgm.clustering.noisy_lloyd import lloyd_releases  # here: the clustering package loads torch (seconds)

    event = GaussianEvent(noise_multiplier=args.kmeans_noise_multiplier)
    # noisy counts and sums per iteration (paper Alg. 2 lines 10-11) plus dpgm's final part sizes
    return [LedgerEntry("kmeans", event, lloyd_releases(args.kmeans_iterations))]


def _steps(args: argparse.Namespace) -> int:
    return args.steps if args.steps is not None else steps_for_epochs(args.epochs, args.sampling_rate)


def _plan_summary(args: argparse.Namespace, rdp: np.ndarray, steps: int, sigma: float) -> dict[str, Any]:
    """The JSON object for a plan: epsilon with both conversions, its order, and the plan."""
    spent = epsilon_from_rdp(rdp, args.delta, DEFAULT_ORDERS)
    classical, _ = rdp_to_epsilon(DEFAULT_ORDERS, rdp, args.delta, method="classical")
    out = {**spent.to_dict(), "epsilon_classical": classical, "sigma": sigma, "sampling_rate": args.sampling_rate,
           "steps": steps, "epochs": args.epochs if "epochs" in args else None,
           "steps_per_epoch": steps_for_epochs(1, args.sampling_rate),
           "histogram_noise_multiplier": args.histogram_noise_multiplier,
           "bound": args.bound if args.histogram_noise_multiplier is not None else None,
           "kmeans_iterations": args.kmeans_iterations, "kmeans_noise_multiplier": args.kmeans_noise_multiplier,
           "neighbouring": "add_remove", "accountant": "rdp"}
    return out


def _print_plan(out: dict[str, Any], as_json: bool, headline: str) -> None:
    if as_json:
        print(json.dumps(out))
        return
    print(headline)
    print(f"epsilon = {out['epsilon']:.6g} at delta = {out['delta']:g} (RDP order {out['order']:g}, "
          f"{out['conversion']} conversion; classical: {out['epsilon_classical']:.6g})")
    plan = f"q = {out['sampling_rate']:g}, {out['steps']} steps ({out['steps_per_epoch']} per epoch)"
    if out["histogram_noise_multiplier"] is not None:
        plan += f", DPNorm histogram sigma_C = {out['histogram_noise_multiplier']:g} ({out['bound']} bound)"
    if out["kmeans_iterations"] is not None:
        plan += f", k-means {out['kmeans_iterations']} iterations at sigma_K = {out['kmeans_noise_multiplier']:g}"
    print(plan)
    print("neighbours: add/remove one record; accountant: RDP")


def _cmd_epsilon(args: argparse.Namespace) -> None:
    steps = _steps(args)
    sgd = rdp_curve(_sgd_event(args, args.noise_multiplier), bound=args.bound)
    rdp = ledger_rdp(_kmeans_entries(args)) + steps * sgd
    out = _plan_summary(args, rdp, steps, args.noise_multiplier)
    _print_plan(out, args.json, f"gradient noise multiplier sigma = {args.noise_multiplier:g}")


def _cmd_sigma(args: argparse.Namespace) -> None:
    steps = _steps(args)
    extra = ledger_rdp(_kmeans_entries(args))
    sigma = sigma_for_epsilon(steps=steps, delta=args.delta, target_epsilon=args.target_epsilon,
                              extra_rdp=extra, event_factory=lambda s: _sgd_event(args, s), bound=args.bound)
    rdp = extra + steps * rdp_curve(_sgd_event(args, sigma), bound=args.bound)
    out = {**_plan_summary(args, rdp, steps, sigma), "target_epsilon": args.target_epsilon}
    _print_plan(out, args.json, f"sigma = {sigma:.6g} is the smallest gradient noise multiplier "
                                f"within epsilon {args.target_epsilon:g}")


def _cmd_steps(args: argparse.Namespace) -> None:
    extra = ledger_rdp(_kmeans_entries(args))
    steps = steps_for_budget(noise_multiplier=args.noise_multiplier, delta=args.delta,
                             target_epsilon=args.target_epsilon, extra_rdp=extra,
                             event_factory=lambda s: _sgd_event(args, s), bound=args.bound)
    rdp = extra + steps * rdp_curve(_sgd_event(args, args.noise_multiplier), bound=args.bound)
    out = _plan_summary(args, rdp, steps, args.noise_multiplier)
    out["epochs"] = steps // out["steps_per_epoch"]
    out["target_epsilon"] = args.target_epsilon
    _print_plan(out, args.json, f"{steps} steps ({out['epochs']} whole epochs) fit in epsilon "
                                f"{args.target_epsilon:g}")


def _load_ledger(path: str) -> PrivacyLedger:
    try:
        return PrivacyLedger.load(path)
    except FileNotFoundError:
        raise DataError(f"{path}: no such ledger file") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a valid privacy ledger ({exc})") from None


def _cmd_report(args: argparse.Namespace) -> None:
    ledger = _load_ledger(args.ledger)
    try:
        report = Accountant(ledger, delta=args.delta).report()
    except ValueError as exc:
        raise DataError(f"{args.ledger}: {exc}") from None
    report["ledger"] = args.ledger
    report["releases"] = {stage: ledger.count(stage) for stage in ledger.stages()}
    if args.json:
        print(json.dumps(report))
        return
    print(f"epsilon = {report['epsilon']:.6g} at delta = {report['delta']:g} "
          f"(RDP order {report['order']:g}, {report['conversion']} conversion)")
    by_bound = ", ".join(f"{b} {e:.6g}" for b, e in report["epsilon_by_bound"].items())
    print(f"neighbours: {report['neighbouring']}; epsilon by bound for dependent releases: {by_bound or 'none'}")
    for stage, eps in report["stage_epsilons"].items():
        print(f"  {stage}: epsilon {eps:.6g} on its own ({report['releases'][stage]} releases)")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (bad input raises ConfigError/DataError: exit 2)."""
    args = build_parser().parse_args(argv)
    if args.command != "report":
        _check_plan_options(args)
    {"epsilon": _cmd_epsilon, "sigma": _cmd_sigma, "steps": _cmd_steps, "report": _cmd_report}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
