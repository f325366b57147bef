"""AIM baseline (McKenna, Mullins, Sheldon, Miklau, VLDB 2022, Algorithm 1) on attributes of any
number of values: a coded table (``pgm.CodedRecords``) or binary items (2-valued attributes).

As private-pgm's ``mechanisms/aim.py``: measure every 1-way marginal with Gaussian noise
sigma_0 = sqrt(T / (2 * 0.9 rho)), fit a graphical model (mbi, mirror descent), then each round
(1) keep the candidates (the downward closure of the workload) whose addition keeps the
junction tree under ``max_model_size`` * rho_used / rho MB (or that the model already holds),
(2) select one with the exponential mechanism at epsilon_t, quality
w_r (||M_r(D) - M_r(p_hat)||_1 - sqrt(2/pi) sigma_t n_r) (w_r: workload weight, n_r: cells, the product
of the attributes' sizes),
sensitivity max w_r; (3) measure it with noise sigma_t and refit; (4) if the model's estimate
of that marginal moved by less than sigma_t sqrt(2/pi) n_r, halve sigma and double epsilon
(annealing). When the budget left cannot pay two more rounds, one last round spends it all.

Privacy (add/remove one record; pgm.budget): the one-way marginals and each measurement are
Gaussians of L2 sensitivity 1, the selection is an epsilon_t exponential mechanism; the zCDP
costs d / (2 sigma_0^2) + sum_t (epsilon_t^2 / 8 + 1 / (2 sigma_t^2)) add up to rho (the
schedule, ``AimSchedule``), rho is calibrated on the accountant (``rho_for_epsilon``), the
worst case is checked before any data is touched, and every release is charged first.

Rounds (the authors' rule, private-pgm ``mechanisms/aim.py``): T = 16 m (``default_rounds``)
sets sigma_0 and the first rounds' budget, annealing raises it, and the run ends when the
budget left cannot pay two more rounds; optionally earlier, at ``max_rounds`` rounds, a public
cap given by the caller, whose last round spends what is left. The rule (``AimSchedule``) reads
only public numbers and earlier releases, never the data or the clock, so the number of rounds
and their noise reveal nothing beyond the releases. ``max_model_size`` is the authors' 80 MB.
Departures (run time, not privacy): mirror descent ``max_iters`` = 250 per refit instead of
1000 and no extra final refit. The workload leaves out the marginals of more than ``max_cells``
cells (the authors' script's 10,000; it never binds on binary items of degree below 14). Each round
costs one mbi refit, dominated by JAX compiling the new clique structure (seconds); without
annealing a run makes about T - 0.9 m rounds, so on 100 items a caller short of time passes
``max_rounds``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation.pgm import (
    ALPHA,
    Clique,
    CodedRecords,
    JunctionTree,
    PgmOptions,
    PgmResult,
    PgmRound,
    Records,
    RoundSchedule,
    Timer,
    TrueMarginals,
    as_sizes,
    at_epsilon,
    check_plan,
    fit_model,
    fitting_candidates,
    l1_errors,
    measure,
    measurement,
    names_of,
    powerset,
    select_and_measure,
    split_round,
    workload_cliques,
    zcdp_event,
)
from dpgm.privacy.accountant import Accountant
from dpgm.progress import share_bar


def default_rounds(n_items: int) -> int:
    """T of Algorithm 1: the authors' 16 m (private-pgm ``mechanisms/aim.py``)."""
    return 16 * n_items


@dataclass(frozen=True)
class AimOptions(PgmOptions):
    """AIM's settings (``PgmOptions``; workload weight 1, the paper's 80 MB model size cap, workload
    marginals of at most ``max_cells`` cells)."""

    accounting: Literal["rdp"] = "rdp"  # a zCDP mechanism: its epsilon is the RDP accountant's, never pure
    max_cells: int = 10_000


class AimSchedule(RoundSchedule):
    """AIM's budget schedule in zCDP (Algorithm 1, lines 1-3, 8-10, 16-17): no data involved.

    Rounds at (epsilon, sigma) of rho / T, quadrupled by each ``anneal``; the last round is the
    one before which the budget left cannot pay two rounds, or the ``max_rounds``-th."""

    def __init__(
        self, rho: float, rounds: int, n_items: int, max_rounds: int | None = None
    ) -> None:
        super().__init__(rho, max_rounds, "aim")
        if rounds < 1 or n_items < 1:
            raise ConfigError(f"aim: need rounds >= 1, items >= 1 (got {rounds}, {n_items})")
        self.epsilon, self.sigma = split_round(rho / rounds, ALPHA)
        self.initial_sigma = self.sigma
        self.used = n_items * 0.5 / self.sigma**2
        if self.used >= self.rho:
            raise ConfigError(
                f"aim: T = {rounds} rounds leave no budget after {n_items} one-way marginals "
                f"(need T > 0.9 m = {ALPHA * n_items:g})"
            )

    def regular(self) -> tuple[float, float]:
        return self.epsilon, self.sigma

    def budget_last(self) -> bool:
        return self.rho - self.used < 2 * (0.5 / self.sigma**2 + self.epsilon**2 / 8)

    def anneal(self) -> None:
        """Halve sigma and double epsilon (the model barely moved: measure more precisely)."""
        self.sigma /= 2
        self.epsilon *= 2


def compile_workload(workload: dict[Clique, float]) -> dict[Clique, float]:
    """Candidates = downward closure of the workload; weight(r) = sum_s w_s |r & s| (AIM, eq. 5)."""
    closure = sorted({c for cl in workload for c in powerset(cl)}, key=lambda c: (len(c), c))
    return {c: sum(w * len(set(c) & set(s)) for s, w in workload.items()) for c in closure}


def make_workload(
    sizes: int | Sequence[int], degree: int, max_workload: int | None, rng: np.random.Generator,
    max_cells: int | None = None,
) -> dict[Clique, float]:
    """All ``degree``-way marginals of at most ``max_cells`` cells (weight 1), or ``max_workload`` of them
    (public, by ``rng``); ``sizes``: the attributes' (an integer m: m binary items)."""
    shape = as_sizes(sizes)
    small = None if max_cells is None else (lambda c: math.prod(shape[j] for j in c) <= max_cells)
    return {c: 1.0 for c in workload_cliques(len(shape), degree, max_workload, rng, "aim", small)}


def aim(
    records: Records,
    *,
    rho: float,
    accountant: Accountant,
    rng: np.random.Generator,
    workload: dict[Clique, float] | None = None,
    options: AimOptions | None = None,
    item_names: list[str] | None = None,
    trace: bool = False,
    stage: str = "aim",
) -> PgmResult:
    """Algorithm 1 of AIM at zCDP ``rho`` (see the module docstring); charges ``accountant``.

    Every release is drawn exactly (dpgm.privacy.mechanisms: the OS CSPRNG in a private run). A seeded
    generator's stream, in order: the workload sample (only with ``max_workload``), one discrete
    Gaussian of scale sigma_0 over each attribute's values for the 1-way marginals, then per round one
    uniform (selection, inverse CDF over the candidates in (size, lexicographic) order) and one
    discrete Gaussian of scale sigma_t over the n_r cells of r. ``trace`` keeps the selection probabilities
    (NOT private).
    """
    opts = options or AimOptions()
    truth = TrueMarginals(records)
    m = truth.n_items
    names = names_of(records, m, item_names)
    rounds = opts.rounds if opts.rounds is not None else default_rounds(m)
    schedule = AimSchedule(rho, rounds, m, opts.max_rounds)
    check_plan(accountant, [(zcdp_event(rho), 1)], "aim")  # the whole run costs at most rho
    if workload is None:
        workload = make_workload(truth.sizes, opts.degree, opts.max_workload, rng, opts.max_cells)
    candidates = compile_workload(workload)
    timer = Timer()

    sigma = schedule.sigma
    ys = measure(accountant, stage, rng, sigma, [truth((j,)) for j in range(m)])
    measurements = [measurement((j,), y, sigma) for j, y in enumerate(ys)]
    measured: list[Clique] = [(j,) for j in range(m)]
    model = fit_model(measurements, truth.sizes, opts.max_iters)
    tree = JunctionTree.from_mbi(model, m)
    trace_rounds: list[PgmRound] = []
    bar = share_bar("aim (share of the budget spent)")
    for eps, sigma, last in schedule.rounds():
        small = fitting_candidates(truth.sizes, model, candidates,
                                   opts.max_model_size * schedule.used / schedule.rho)
        weights = np.array([candidates[c] for c in small])
        bias = math.sqrt(2 / math.pi) * sigma * np.array([truth.cells(c) for c in small])
        chosen, y, probs = select_and_measure(
            accountant, stage, rng, truth, small, weights * (l1_errors(truth, tree, small) - bias),
            epsilon=eps, sensitivity=float(np.abs(weights).max()), sigma=sigma,
        )
        measurements.append(measurement(chosen, y, sigma))
        measured.append(chosen)
        before = tree.marginal(chosen)
        model = fit_model(measurements, truth.sizes, opts.max_iters, warm_start=model)
        tree = JunctionTree.from_mbi(model, m)
        after = tree.marginal(chosen)
        trace_rounds.append(
            PgmRound(
                chosen,
                sigma,
                eps,
                probs if trace else None,
                list(small) if trace else None,
                y if trace else None,
            )
        )
        if not last and np.abs(after - before).sum() <= sigma * math.sqrt(2 / math.pi) * truth.cells(chosen):
            schedule.anneal()
        bar.advance_share(schedule.used, schedule.rho)
    bar.close()
    return PgmResult(
        tree=tree,
        item_names=list(names),
        method="aim",
        rho=rho,
        rounds=trace_rounds,
        measured=measured,
        seconds=timer.elapsed(),
        info={
            "T": rounds,
            "max_rounds": opts.max_rounds,
            "rounds_run": len(trace_rounds),
            "initial_sigma": schedule.initial_sigma,
            "rho_used": schedule.used,
            "candidates": len(candidates),
        },
        coded=isinstance(records, CodedRecords),
    )


def fit_aim(records: Records, *, epsilon: float, delta: float,
            rng: np.random.Generator, accountant: Accountant | None = None, options: AimOptions | None = None,
            stage: str = "aim") -> PgmResult:
    """AIM at (epsilon, delta): rho calibrated on dpgm's accountant (budget = epsilon)."""
    return at_epsilon(aim, records, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant,
                      options=options, stage=stage)

