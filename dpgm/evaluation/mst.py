"""MST baseline (McKenna, Miklau, Sheldon 2021; winner of the 2018 NIST challenge) on attributes of any
number of values: a coded table (``pgm.CodedRecords``) or binary items (2-valued attributes).

As private-pgm's ``mechanisms/mst.py``, with the budget rho split in three equal zCDP parts:
(1) all m 1-way marginals, each with noise sigma sqrt(m) (sigma = sqrt(3 / (2 rho))); the domain
compression (``pgm.compression``: an attribute's values whose noisy count is below 3 x that noise
merged into one, post-processing), and a graphical model fit to the compressed 1-way measurements;
(2) a maximum spanning tree over the attributes, built by m - 1 exponential-mechanism selections
(Kruskal order) of the pair whose compressed 2-way marginal the model misses most in L1
(sensitivity 1), each at epsilon = sqrt(8 (rho/3) / (m - 1)); (3) the m - 1 chosen 2-way marginals
on the compressed values, each with noise sigma sqrt(m - 1); a final model fit, sampling, and the
merged values drawn back uniformly among those they hold. On binary items only an item both of whose
values are below the threshold is merged (into a constant).

Privacy (add/remove one record; pgm.budget): the plan is fixed in advance (``mst_events``), so
rho is calibrated on the accountant's epsilon of that exact plan and checked before anything
runs; each release is charged before it is made.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpgm.errors import ConfigError
from dpgm.evaluation import pgm
from dpgm.evaluation.mwem import selection_probabilities
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate, releases_epsilon
from dpgm.privacy.events import DpEvent, ExponentialEvent, GaussianEvent
from dpgm.privacy.mechanisms import exponential_mechanism

DEFAULT_ITERS = 1000  # mirror-descent iterations per fit (the original: 2500 then 10000)


def mst_parameters(rho: float, n_items: int) -> tuple[float, float, float]:
    """(noise multiplier of each 1-way marginal, of each 2-way marginal, selection epsilon)."""
    if not rho > 0 or n_items < 2:
        raise ConfigError(f"mst: need rho > 0 and at least 2 items (got {rho}, {n_items})")
    sigma = math.sqrt(3.0 / (2.0 * rho))
    return (
        sigma * math.sqrt(n_items),
        sigma * math.sqrt(n_items - 1),
        math.sqrt(8 * rho / 3 / (n_items - 1)),
    )


def mst_events(rho: float, n_items: int) -> list[tuple[DpEvent, int]]:
    """The plan as (event, count): m 1-way Gaussians, m - 1 selections, m - 1 2-way Gaussians."""
    s1, s2, eps = mst_parameters(rho, n_items)
    return [
        (GaussianEvent(noise_multiplier=s1), n_items),
        (ExponentialEvent(epsilon=eps), n_items - 1),
        (GaussianEvent(noise_multiplier=s2), n_items - 1),
    ]


def plan_epsilon(rho: float, n_items: int, delta: float) -> float:
    """The accountant's epsilon at ``delta`` for MST's plan at zCDP ``rho``."""
    return releases_epsilon(mst_events(rho, n_items), delta)


def mst_rho(epsilon: float, delta: float, n_items: int) -> float:
    """Largest rho whose plan the accountant puts at <= epsilon (``calibrate`` on s = 1/sqrt(2 rho))."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"mst: epsilon must be finite and > 0, got {epsilon}")
    scale = calibrate(lambda s: mst_events(1.0 / (2.0 * s * s), n_items), target_epsilon=epsilon, delta=delta)
    return 1.0 / (2.0 * scale * scale)


class _Components:
    """Union-find over items (which pairs would close a cycle)."""

    def __init__(self, n: int) -> None:
        self.up = list(range(n))

    def find(self, a: int) -> int:
        while self.up[a] != a:
            self.up[a] = self.up[self.up[a]]
            a = self.up[a]
        return a

    def merge(self, a: int, b: int) -> None:
        self.up[self.find(a)] = self.find(b)


def mst(
    records: pgm.Records,
    *,
    rho: float,
    accountant: Accountant,
    rng: np.random.Generator,
    iters: int = DEFAULT_ITERS,
    item_names: list[str] | None = None,
    trace: bool = False,
    stage: str = "mst",
) -> pgm.PgmResult:
    """MST at zCDP ``rho`` (module docstring); charges ``accountant``.

    Every release is drawn exactly (dpgm.privacy.mechanisms: the OS CSPRNG in a private run). A
    seeded generator's stream, in order: one discrete Gaussian of scale s1 over each attribute's values,
    one uniform per selection (inverse CDF over the remaining pairs in lexicographic order), one of
    scale s2 over the compressed cells of each chosen pair in selection order.
    ``trace`` keeps the selection probabilities (NOT private).
    """
    truth = pgm.TrueMarginals(records)
    m = truth.n_items
    names = pgm.names_of(records, m, item_names)
    s1, s2, eps = mst_parameters(rho, m)
    pgm.check_plan(accountant, mst_events(rho, m), "mst")
    timer = pgm.Timer()
    ones = pgm.measure(accountant, stage, rng, s1, [truth((j,)) for j in range(m)])
    squeeze = pgm.compression(ones, s1)
    log = [pgm.merged_measurement(j, y, s1, squeeze.mapping(j), truth.sizes) if squeeze.merges(j)
           else pgm.measurement((j,), y, s1) for j, y in enumerate(ones)]
    truth = squeeze.truth(truth)  # the records on the compressed values
    tree = pgm.JunctionTree.from_mbi(pgm.fit_model(log, truth.sizes, iters), m)
    pairs = list(itertools.combinations(range(m), 2))
    error = {p: float(np.abs(truth(p) - tree.marginal(p)).sum()) for p in pairs}
    components = _Components(m)
    rounds: list[pgm.PgmRound] = []
    chosen: list[pgm.Clique] = []
    for _ in range(m - 1):
        pairs = [p for p in pairs if components.find(p[0]) != components.find(p[1])]
        scores = np.array([error[p] for p in pairs])
        k = exponential_mechanism(scores, epsilon=eps, sensitivity=1.0, accountant=accountant, stage=stage, rng=rng)
        probs = selection_probabilities(scores, eps) if trace else None
        chosen.append(pairs[k])
        components.merge(*pairs[k])
        rounds.append(
            pgm.PgmRound(pairs[k], s2, eps, probs, list(pairs) if trace else None)
        )
    for pair, entry in zip(chosen, rounds):
        (y,) = pgm.measure(accountant, stage, rng, s2, [truth(pair)])
        log.append(pgm.measurement(pair, y, s2))
        if trace:
            entry.measurement = y
    tree = pgm.JunctionTree.from_mbi(pgm.fit_model(log, truth.sizes, iters), m)
    merged = [j for j in range(m) if squeeze.merges(j)]
    return pgm.PgmResult(
        tree=tree,
        item_names=list(names),
        method="mst",
        rho=rho,
        rounds=rounds,
        measured=[(j,) for j in range(m)] + chosen,
        seconds=timer.elapsed(),
        info={"sigma_1way": s1, "sigma_2way": s2, "selection_epsilon": eps, "compressed_attributes": len(merged)},
        coded=isinstance(records, pgm.CodedRecords),
        compression=squeeze if merged else None,
    )


def fit_mst(records: pgm.Records, *, epsilon: float, delta: float,
            rng: np.random.Generator, accountant: Accountant | None = None, iters: int = DEFAULT_ITERS,
            stage: str = "mst") -> pgm.PgmResult:
    """MST at (epsilon, delta): rho calibrated on dpgm's accountant for MST's exact plan."""
    rho = mst_rho(epsilon, delta, pgm.n_attributes(records))
    acc = accountant if accountant is not None else Accountant(delta=delta, budget_epsilon=epsilon)
    return mst(records, rho=rho, accountant=acc, rng=rng, iters=iters, stage=stage)

