"""MWEM+PGM baseline (McKenna, Sheldon, Miklau, ICML 2019, section 6) on attributes of any number of
values: a coded table (``pgm.CodedRecords``) or binary items (2-valued attributes).

MWEM (Hardt, Ligett, McSherry 2012) with a graphical model in place of the explicit
distribution over every possible record, as private-pgm's ``mechanisms/mwem+pgm.py``: a workload of
marginals (default all 2-way ones: a clique of items is one candidate, whose whole marginal is
measured at once, MWEM's section 3.3) and T rounds, each of which
(1) keeps the candidates whose addition keeps the junction tree under
    ``max_model_size`` * t / T MB (the authors' addition; default 25 MB, linear in t),
(2) selects one with the exponential mechanism at epsilon_t, quality
    ||M_r(D) - M_r(p_hat)||_1 - n_r (n_r: cells; the authors' ``penalty``), sensitivity 1,
(3) measures it with Gaussian noise sigma_t (L2 sensitivity 1), and
(4) refits the graphical model to all measurements so far (mbi's mirror descent, warm
    started; the total is mbi's minimum-variance estimate from the noisy marginals).
The release is the last model; synthetic records are sampled from it. The first round
compares the data with mbi's empty model (uniform, total 1), so its choice is near uniform.

Privacy (add/remove one record; pgm.budget). Each round costs rho / T in zCDP, a share
alpha = 0.9 for the Gaussian (1 / (2 sigma_t^2)) and the rest for the selection
(epsilon_t^2 / 8), as the authors' Gaussian variant; the whole run costs at most rho,
calibrated on dpgm's accountant (``rho_for_epsilon``: epsilon at delta from the RDP curve
a * rho), checked before any data is touched, and every release is charged before it is
made. The candidate filter and the model depend on the data only through earlier releases,
so they are post-processing. Unlike private-pgm (whose ``cdp_rho`` is the Canonne, Kamath,
Steinke conversion), the epsilon reported is the accountant's, which agrees within 0.5%.
At epsilon 1, delta 1e-6 (retail, gowalla: rho = 0.0244, T = 60) each round selects at
epsilon_t = 0.018 and measures a 2x2 marginal with sigma_t = 37 (counts); msnbc (delta 1e-7,
T = 17): epsilon_t = 0.031, sigma_t = 21.6.

Defaults: the authors' alpha = 0.9, all pairs, 25 MB, 1000 mirror-descent iterations per
refit, and T = min(m, 60) rounds instead of their m (``default_rounds``): every refit compiles
a new JAX program for the new clique structure, which takes longer the more cliques the model
has (on 100 items about 2 s at 30 measured pairs, 7 s at 60, 25 s at 100, one thread), so
T = 100 took 12 minutes where T = 60 takes about 2. T and the optional cap ``max_rounds`` (the
round it reaches is the last and spends all the budget left) are public inputs, and the
schedule (``MwemPgmSchedule``) reads nothing else: neither the data nor the clock can change
the number of rounds or their noise. The size filter is evaluated lazily
(``mechanisms.exponential_mechanism`` with ``fits``: draws of the mechanism over the whole workload
until one fits), which
selects with exactly the distribution of the mechanism over the fitting candidates without
computing a junction tree for each of the 4,950 pairs every round.

Assumptions: the released model is a graphical model over the measured cliques only. Items
that no measured clique covers stay uniform (binary items: P = 1/2): with pairs, the first rounds cover the
items (an uncovered pair is answered worst) and on 100 items all are covered after 50 rounds,
so T must be at least m / 2 for a 2-way workload; the correlations the selection did not
pick are absent, and the record lengths are only as good as the pairs imply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation import pgm
from dpgm.privacy.accountant import Accountant
from dpgm.progress import share_bar

ALPHA = pgm.ALPHA  # share of each round's zCDP for the measurement (the authors' alpha)
MAX_DEFAULT_ROUNDS = 60  # the default T is min(m, this): each refit compiles a new JAX program


def default_rounds(n_items: int) -> int:
    """T: the authors' m (the number of items), capped at ``MAX_DEFAULT_ROUNDS``."""
    return min(n_items, MAX_DEFAULT_ROUNDS)


@dataclass(frozen=True)
class MwemPgmOptions(pgm.PgmOptions):
    """MWEM+PGM's settings (``pgm.PgmOptions``): T default ``default_rounds``, the authors' 25 MB
    (reached at the last round) and 1000 mirror-descent iterations per refit."""

    max_model_size: float = 25.0
    max_iters: int = 1000
    accounting: Literal["rdp"] = "rdp"  # a zCDP mechanism: its epsilon is the RDP accountant's, never pure


class MwemPgmSchedule(pgm.RoundSchedule):
    """The budget: rho / T per round, split by ``ALPHA``, for T rounds or ``max_rounds`` if fewer
    (that last round spends the rest): public inputs only."""

    def __init__(self, rho: float, rounds: int, max_rounds: int | None = None) -> None:
        super().__init__(rho, max_rounds, "mwem_pgm")
        if rounds < 1:
            raise ConfigError(f"mwem_pgm: need rounds >= 1, got {rounds}")
        self.rounds_planned = int(rounds)

    def regular(self) -> tuple[float, float]:
        return pgm.split_round(self.rho / self.rounds_planned, ALPHA)

    def budget_last(self) -> bool:
        return self.done + 1 >= self.rounds_planned


def mwem_pgm(
    records: pgm.Records,
    *,
    rho: float,
    accountant: Accountant,
    rng: np.random.Generator,
    workload: list[pgm.Clique] | None = None,
    options: MwemPgmOptions | None = None,
    item_names: list[str] | None = None,
    trace: bool = False,
    stage: str = "mwem_pgm",
) -> pgm.PgmResult:
    """MWEM+PGM at zCDP ``rho`` (see the module docstring); charges ``accountant``.

    Every release is drawn exactly (dpgm.privacy.mechanisms: the OS CSPRNG in a private run). A
    seeded generator's stream, in order: the workload sample (only with ``max_workload``), then per
    round the selection's uniforms (inverse CDF over the workload in its order, redrawn while the
    draw does not fit the size limit) and one discrete Gaussian over the n_r cells of r.
    ``trace`` filters every candidate first (one uniform a round) and keeps the selection
    probabilities (NOT private).
    """
    opts = options or MwemPgmOptions()
    truth = pgm.TrueMarginals(records)
    m = truth.n_items
    rounds_planned = opts.rounds if opts.rounds is not None else default_rounds(m)
    schedule = MwemPgmSchedule(rho, rounds_planned, opts.max_rounds)
    pgm.check_plan(accountant, [(pgm.zcdp_event(rho), 1)], "mwem_pgm")  # the run costs <= rho
    if workload is None:
        workload = pgm.workload_cliques(m, opts.degree, opts.max_workload, rng, "mwem_pgm")
    timer = pgm.Timer()
    measurements: list = []
    model = pgm.fit_model(measurements, truth.sizes, opts.max_iters)  # empty: uniform, total 1
    tree = pgm.JunctionTree.from_mbi(model, m)
    rounds: list[pgm.PgmRound] = []
    bar = share_bar("mwem_pgm (share of the budget spent)")
    for eps, sigma, _ in schedule.rounds():
        limit = opts.max_model_size * schedule.used / schedule.rho
        fits = pgm.size_filter(truth.sizes, model, limit)
        small = [c for c in workload if fits(c)] if trace else workload
        cells = np.array([truth.cells(c) for c in small], dtype=np.float64)
        chosen, y, probs = pgm.select_and_measure(
            accountant, stage, rng, truth, small, pgm.l1_errors(truth, tree, small) - cells,
            epsilon=eps, sensitivity=1.0, sigma=sigma, fits=None if trace else fits,
        )
        measurements.append(pgm.measurement(chosen, y, sigma))
        model = pgm.fit_model(measurements, truth.sizes, opts.max_iters, warm_start=model)
        tree = pgm.JunctionTree.from_mbi(model, m)
        rounds.append(pgm.PgmRound(chosen, sigma, eps, probs if trace else None,
                                   list(small) if trace else None, y if trace else None))
        bar.advance_share(schedule.used, schedule.rho)
    bar.close()
    return pgm.PgmResult(
        tree=tree,
        item_names=pgm.names_of(records, m, item_names),
        method="mwem_pgm",
        rho=rho,
        rounds=rounds,
        measured=[r.clique for r in rounds],
        seconds=timer.elapsed(),
        info={"T": rounds_planned, "max_rounds": opts.max_rounds, "rounds_run": len(rounds),
              "rho_used": schedule.used, "workload": len(workload)},
        coded=isinstance(records, pgm.CodedRecords),
    )


def fit_mwem_pgm(records: pgm.Records, *, epsilon: float, delta: float,
                 rng: np.random.Generator, accountant: Accountant | None = None,
                 options: MwemPgmOptions | None = None, stage: str = "mwem_pgm") -> pgm.PgmResult:
    """MWEM+PGM at (epsilon, delta): rho calibrated on dpgm's accountant (budget = epsilon)."""
    return pgm.at_epsilon(mwem_pgm, records, epsilon=epsilon, delta=delta, rng=rng,
                          accountant=accountant, options=options, stage=stage)
