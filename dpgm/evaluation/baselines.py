"""The DP baselines by name: ``BASELINES`` maps a name to a fit at (epsilon, delta).

Each baseline (marginals, mwem, aim, mst, mwem_pgm) registers a factory that fits its model on
the real records with its own accountant (budget = epsilon, enforced per charge) and returns the
model and what its report adds. ``fit_baseline`` runs one by name (``dpgm.Synthesizer(method=...)``
uses it), ``run_baseline`` also samples from it (``evaluate.py counting`` and the benchmarks).
AIM, MST and MWEM+PGM also fit a coded table (``CodedRecords``: each column's value index and the
columns' sizes) and sample codes for it; MWEM and the marginals take binary items only.
Budgets: with ``accounting="rdp"`` (default) each baseline's noise is calibrated so that the RDP
accountant's epsilon at delta equals the target (pure-DP mechanisms then use a larger pure
epsilon, which the report also gives); ``"pure"`` spends exactly the target as pure epsilon
(Laplace marginals and MWEM only). AIM, MST and MWEM+PGM need the optional package mbi.

A fitted model's state is plain arrays and JSON (``model_state`` / ``model_from_state``,
dpgm/evaluation/saved.py): a saved baseline loads without unpickling anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from dpgm.config_fields import check_delta, check_epsilon
from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.evaluation.aim import AimOptions, fit_aim
from dpgm.evaluation.marginals import Mechanism, fit_marginals, marginals_event
from dpgm.evaluation.mst import fit_mst
from dpgm.evaluation.mwem import MwemBudget, fit_mwem
from dpgm.evaluation.mwem_pgm import MwemPgmOptions, fit_mwem_pgm
from dpgm.evaluation.pgm import CodedRecords
from dpgm.evaluation.queries import QuerySet, make_queries
from dpgm.evaluation.saved import model_from_state, model_state
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import calibrate, default_delta, records_magnitude, releases_epsilon, sigma_for_epsilon
from dpgm.privacy.events import DpEvent
from dpgm.progress import epsilon_of, progress_scope
from dpgm.registry import Registry

Accounting = Literal["rdp", "pure"]
#: What a baseline fits: binary items, or a coded table (aim, mst and mwem_pgm only).
Real = BinaryDataset | CodedRecords
#: ``model_state`` and ``model_from_state`` are saved.py's, re-exported where the baselines are.
__all__ = ["BASELINES", "AimOptions", "BaselineFit", "CodedRecords", "MarginalsOptions", "MstOptions", "MwemOptions",
           "MwemPgmOptions", "baseline_options", "fit_baseline", "model_from_state", "model_state", "options_among",
           "run_baseline"]


class BaselineModel(Protocol):
    """What every baseline fits: synthetic records on demand and the released (noisy) n."""

    @property
    def n_noisy(self) -> float: ...

    def sample(self, n: int, rng: np.random.Generator) -> BinaryDataset | CodedRecords: ...


@dataclass(frozen=True)
class MwemOptions:
    """MWEM's options (defaults follow the DPGM paper: T = 50 rounds)."""

    accounting: Accounting = "rdp"
    rounds: int = 50
    n_fraction: float = 0.05
    repeat_updates: int = 10
    support_size: int = 10_000
    #: MWEM's workload when none is given (``fit_baseline(queries=None)``): this many random
    #: item-set queries of the paper's kind, lengths up to ``query_max_length`` (default: every
    #: item), drawn without looking at the data.
    queries: int = 1000
    query_max_length: int | None = None


@dataclass(frozen=True)
class MarginalsOptions:
    """The independent marginals' options: the noise and, optionally, the longest record kept."""

    accounting: Accounting = "rdp"
    mechanism: Mechanism = "gaussian"
    max_length: int | None = None


@dataclass(frozen=True)
class MstOptions:
    """MST takes no settings but its accounting: a zCDP mechanism's epsilon is the RDP accountant's."""

    accounting: Literal["rdp"] = "rdp"


@dataclass
class BaselineFit:
    """A fitted baseline: its model, its report (the accountant's numbers included) and its ledger."""

    method: str
    model: BaselineModel
    report: dict[str, Any]
    accountant: Accountant


class BaselineRegistry(Registry[Any]):
    """The baselines' registry; it iterates over the names in registration order (``choices=``)."""

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __len__(self) -> int:
        return len(self.entries)


#: name -> factory(real, queries, *, epsilon, delta, rng, accountant, options) -> (model, report items).
BASELINES = BaselineRegistry("baseline")


def accountant_epsilon(events: Sequence[tuple[DpEvent, int]], delta: float) -> float:
    """Epsilon at ``delta`` that the RDP accountant gives the composition of ``events``."""
    return releases_epsilon(events, delta)


def mwem_pure_epsilon(
    epsilon: float, delta: float, *, rounds: int, n_fraction: float, accounting: Accounting
) -> float:
    """Total pure epsilon for MWEM: the target itself, or calibrated to the accountant's epsilon."""
    if accounting == "pure":
        return epsilon

    def plan(scale: float) -> list[tuple[DpEvent, int]]:  # noise scale = 1 / MWEM's total epsilon
        return MwemBudget(epsilon=1.0 / scale, rounds=rounds, n_fraction=n_fraction).events()

    return 1.0 / calibrate(plan, target_epsilon=epsilon, delta=delta)


def marginals_parameters(
    epsilon: float, delta: float, *, mechanism: Mechanism, accounting: Accounting
) -> dict[str, float]:
    """``{"epsilon": e}`` (Laplace) or ``{"noise_multiplier": s}`` (Gaussian) meeting the target.

    "rdp": calibrated with ``sigma_for_epsilon`` (one release; Laplace as scale 1/e).
    """
    if accounting == "pure":
        if mechanism == "gaussian":
            raise ConfigError("marginals: the gaussian mechanism has no pure-epsilon guarantee (use laplace)")
        return {"epsilon": epsilon}
    if mechanism == "laplace":
        scale = sigma_for_epsilon(steps=1, delta=delta, target_epsilon=epsilon,
                                  event_factory=lambda s: marginals_event("laplace", epsilon=1.0 / s))
        return {"epsilon": 1.0 / scale}
    sigma = sigma_for_epsilon(steps=1, delta=delta, target_epsilon=epsilon,
                              event_factory=lambda s: marginals_event("gaussian", noise_multiplier=s))
    return {"noise_multiplier": sigma}


def workload(n_items: int, options: MwemOptions, rng: np.random.Generator) -> QuerySet:
    """MWEM's default workload: ``options.queries`` random item-set queries (public randomness)."""
    maxlen = n_items if options.query_max_length is None else min(options.query_max_length, n_items)
    return make_queries(n_items, maxlen, options.queries, rng)


def binary_items(real: Real, method: str) -> BinaryDataset:
    """``real`` when it holds binary items; a coded table is refused in one line (``method`` takes items)."""
    if isinstance(real, CodedRecords):
        raise ConfigError(f"{method}: takes binary items, not a coded table (aim, mst and mwem_pgm take one)")
    return real


@BASELINES.register("mwem", options=MwemOptions, doc="MWEM (Hardt et al.) on an item-set query workload")
def _mwem(real: Real, queries: QuerySet | None, *, epsilon: float, delta: float,
          rng: np.random.Generator, accountant: Accountant, options: MwemOptions) -> tuple[Any, dict[str, Any]]:
    real = binary_items(real, "mwem")
    pure = mwem_pure_epsilon(epsilon, delta, rounds=options.rounds, n_fraction=options.n_fraction,
                             accounting=options.accounting)
    if queries is None:
        queries = workload(real.n_items, options, rng)
    model = fit_mwem(real, queries, epsilon=pure, accountant=accountant, rng=rng, rounds=options.rounds,
                     n_fraction=options.n_fraction, repeat_updates=options.repeat_updates,
                     support_size=options.support_size)
    return model, {"pure_epsilon": pure, "rounds": options.rounds, "domain": type(model.domain).__name__}


@BASELINES.register("marginals", options=MarginalsOptions, doc="independent item frequencies (one noisy release)")
def _marginals(real: Real, queries: QuerySet | None, *, epsilon: float, delta: float,
               rng: np.random.Generator, accountant: Accountant,
               options: MarginalsOptions) -> tuple[Any, dict[str, Any]]:
    params = marginals_parameters(epsilon, delta, mechanism=options.mechanism, accounting=options.accounting)
    model = fit_marginals(binary_items(real, "marginals"), accountant=accountant, rng=rng, mechanism=options.mechanism,
                          max_length=options.max_length, **params)
    return model, {"pure_epsilon": params.get("epsilon"), "mechanism": options.mechanism, **params}


def _zcdp_only(method: str, options: AimOptions | MstOptions | MwemPgmOptions) -> None:
    if options.accounting == "pure":
        raise ConfigError(f"{method}: a zCDP mechanism, no pure-epsilon accounting")


def _pgm_report(model: Any) -> dict[str, Any]:
    return {"rho": model.rho, "rounds": len(model.rounds), "fit_seconds": model.seconds}


@BASELINES.register("aim", options=AimOptions, doc="AIM (McKenna et al.): needs mbi")
def _aim(real: Real, queries: QuerySet | None, *, epsilon: float, delta: float,
         rng: np.random.Generator, accountant: Accountant, options: AimOptions) -> tuple[Any, dict[str, Any]]:
    _zcdp_only("aim", options)
    model = fit_aim(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant, options=options)
    return model, _pgm_report(model)


@BASELINES.register("mst", options=MstOptions, doc="MST (McKenna et al.): needs mbi")
def _mst(real: Real, queries: QuerySet | None, *, epsilon: float, delta: float,
         rng: np.random.Generator, accountant: Accountant, options: MstOptions) -> tuple[Any, dict[str, Any]]:
    _zcdp_only("mst", options)
    model = fit_mst(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant)
    return model, _pgm_report(model)


@BASELINES.register("mwem_pgm", options=MwemPgmOptions, doc="MWEM with a graphical model (MWEM+PGM): needs mbi")
def _mwem_pgm(real: Real, queries: QuerySet | None, *, epsilon: float, delta: float,
              rng: np.random.Generator, accountant: Accountant,
              options: MwemPgmOptions) -> tuple[Any, dict[str, Any]]:
    _zcdp_only("mwem_pgm", options)
    model = fit_mwem_pgm(real, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant, options=options)
    return model, _pgm_report(model)


def baseline_options(method: str, values: dict[str, Any] | None) -> Any:
    """The typed options of ``method`` (the dataclass it registers) from a mapping of its option names; a name
    may carry the method's own prefix (``"aim.rounds"``, or ``{"aim": {...}}``, as the options of several
    baselines are written together). An unknown name or a mistyped value is a one-line ConfigError."""
    own: dict[str, Any] = {}
    for key, value in dict(values or {}).items():
        head, _, rest = key.partition(".")
        if key == method and isinstance(value, dict):
            own.update(value)
        else:
            own[rest if head == method and rest else key] = value
    return BASELINES.options(method, own)


def options_among(method: str, settings: dict[str, Any]) -> Any:
    """``method``'s options among settings written for several baselines (a command line's flags): the names
    prefixed by ``method.`` and the unprefixed names its options have; the rest belong to other baselines."""
    cls = BASELINES.entry(method).options
    names = {f.name for f in dataclasses.fields(cls)} if cls is not None else set()
    return baseline_options(method, {key: value for key, value in settings.items()
                                     if key in names or key.partition(".")[0] == method})


def fit_baseline(
    method: str,
    real: Real,
    queries: QuerySet | None = None,
    *,
    epsilon: float,
    delta: float | None = None,
    rng: np.random.Generator,
    options: Any = None,
) -> BaselineFit:
    """Fit the registered baseline ``method`` on ``real`` (binary items, or a coded table for aim, mst and
    mwem_pgm) at (epsilon, delta), checked as a dpgm run's:
    epsilon in (0, MAX_EPSILON], delta at most 1/N (None: 1/(100 N)), N the records' order of magnitude.

    ``options``: the method's registered options (``baseline_options``; None: their defaults).
    ``queries``: MWEM's workload (None: ``options.queries`` random ones, drawn from ``rng``).
    The report holds the method's settings, N as a public input and its own accountant's numbers
    (budget = epsilon).
    """
    entry = BASELINES.entry(method)
    opts = options if options is not None else BASELINES.options(method, None)
    check_epsilon(epsilon, "epsilon")
    magnitude = records_magnitude(real.n_records)
    uses = "the check delta <= 1/N" + (", the default delta 1/(100 N)" if delta is None else "")
    delta = default_delta(real.n_records) if delta is None else delta
    check_delta(delta, magnitude, "delta")
    accountant = Accountant(delta=delta, budget_epsilon=epsilon)
    report: dict[str, Any] = {"method": method, "accounting": getattr(opts, "accounting", "rdp"), "public_inputs": [
        {"quantity": "order of magnitude of the number of records", "value": magnitude, "why": uses}]}
    with progress_scope(epsilon=epsilon_of(accountant)):  # the baseline's bars show its own epsilon
        model, extra = entry.factory(real, queries, epsilon=epsilon, delta=delta, rng=rng,
                                     accountant=accountant, options=opts)
    report.update(extra)
    report.update(accountant.report())
    return BaselineFit(method=method, model=model, report=report, accountant=accountant)


def run_baseline(
    method: str,
    real: BinaryDataset,
    queries: QuerySet,
    *,
    epsilon: float,
    delta: float | None,
    rng: np.random.Generator,
    options: Any = None,
    n_synthetic: int | None = None,
) -> tuple[BinaryDataset, dict[str, Any]]:
    """Fit ``method`` (a registered baseline: mwem, marginals, aim, mst, mwem_pgm) at (epsilon,
    delta) and sample a synthetic dataset.

    Returns the synthetic records (``n_synthetic``, default the released noisy n) and the
    privacy report of the baseline's own accountant (budget = epsilon, enforced per charge).
    """
    fit = fit_baseline(method, real, queries, epsilon=epsilon, delta=delta, rng=rng, options=options)
    n = round(fit.model.n_noisy) if n_synthetic is None else n_synthetic
    return fit.model.sample(max(n, 1), rng), fit.report
