"""What a fit of AIM, MST or MWEM+PGM takes and gives: its options, its rounds, the released
model (``PgmResult``), and the helpers that run a fit at (epsilon, delta) and sample from it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError
from dpgm.evaluation.pgm.budget import rho_for_epsilon
from dpgm.evaluation.pgm.compression import Compression
from dpgm.evaluation.pgm.inference import JunctionTree
from dpgm.evaluation.pgm.workload import Clique, CodedRecords, Records
from dpgm.evaluation.saved import Arrays, saved_as
from dpgm.privacy.accountant import Accountant


@dataclass(frozen=True)
class PgmOptions:
    """Settings of AIM and MWEM+PGM: workload (all ``degree``-way marginals, optionally
    ``max_workload`` of them at random), T = ``rounds`` (None: the mechanism's default), model
    size cap in MB, mirror-descent iterations per refit, and ``max_rounds``, a public cap on the
    rounds (None: none) whose last round spends what is left (``RoundSchedule``)."""

    degree: int = 2
    max_workload: int | None = None
    rounds: int | None = None
    max_model_size: float = 80.0
    max_iters: int = 250
    max_rounds: int | None = None


@dataclass
class PgmRound:
    """One AIM or MWEM+PGM round or MST selection: the chosen clique, its noise (probabilities:
    traced only)."""

    clique: Clique
    sigma: float
    epsilon: float
    probabilities: np.ndarray | None = None
    candidates: list[Clique] | None = None
    measurement: np.ndarray | None = None


@dataclass
@saved_as("pgm")
class PgmResult:
    """The released graphical model (as a junction tree) and what the run measured. ``coded``: fitted on
    a coded table (it samples ``CodedRecords``), else on binary items (a BinaryDataset); ``compression``:
    MST's merged values, undone when sampling."""

    tree: JunctionTree
    item_names: list[str]
    method: str
    rho: float
    rounds: list[PgmRound] = field(default_factory=list)
    measured: list[Clique] = field(default_factory=list)
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    coded: bool = False
    compression: Compression | None = None

    @property
    def n_noisy(self) -> float:
        """The model's total: mbi's minimum-variance estimate from the noisy marginals."""
        return self.tree.total

    def codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` synthetic records as codes [n, d] on the attributes' values (post-processing)."""
        codes = self.tree.sample(n, rng)
        return codes if self.compression is None else self.compression.restore(codes, rng)

    def sample(self, n: int, rng: np.random.Generator) -> BinaryDataset | CodedRecords:
        """``n`` synthetic records (post-processing), of the kind the model was fitted on."""
        if n < 1:
            raise ConfigError(f"{self.method}: number of synthetic records must be >= 1, got {n}")
        codes = self.codes(n, rng)
        if self.coded:
            sizes = self.tree.sizes if self.compression is None else self.compression.original_sizes
            return CodedRecords(codes, sizes, tuple(self.item_names))
        return BinaryDataset(records=sp.csr_matrix(codes), item_names=list(self.item_names), name=self.method)

    def state(self) -> tuple[dict[str, Any], Arrays]:
        """The calibrated junction tree's structure and tables, and what was measured."""
        tree = self.tree
        meta = {"method": self.method, "rho": self.rho, "item_names": list(self.item_names),
                "measured": [list(c) for c in self.measured], "seconds": self.seconds, "coded": self.coded,
                "compressed": self.compression is not None,
                "tree": {"cliques": [list(c) for c in tree.cliques], "n_items": tree.n_items, "total": tree.total,
                         "sizes": list(tree.sizes),
                         "parent": list(tree.parent), "depth": list(tree.depth), "order": list(tree.order),
                         "sep": [list(s) for s in tree.sep], "home": [[v, c] for v, c in tree.home.items()]}}
        arrays = {f"table_{i}": np.asarray(t, dtype=np.float64) for i, t in enumerate(tree.tables)}
        arrays.update({f"cond_{i}": np.asarray(t, dtype=np.float64) for i, t in enumerate(tree.cond)})
        if self.compression is not None:
            for j, (kept, merged) in enumerate(zip(self.compression.kept, self.compression.merged)):
                arrays.update({f"kept_{j}": kept, f"merged_{j}": merged})
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: Arrays) -> PgmResult:
        t = meta["tree"]
        tree = JunctionTree.__new__(JunctionTree)  # the calibrated tree as it was, without recalibrating
        k = len(t["cliques"])
        tree.__dict__.update(
            cliques=[tuple(c) for c in t["cliques"]], tables=[arrays[f"table_{i}"] for i in range(k)],
            n_items=int(t["n_items"]), sizes=tuple(int(s) for s in t.get("sizes", [2] * int(t["n_items"]))),
            total=float(t["total"]), parent=list(t["parent"]),
            depth=list(t["depth"]), order=list(t["order"]), sep=[tuple(s) for s in t["sep"]],
            cond=[arrays[f"cond_{i}"] for i in range(k)], home={int(v): int(c) for v, c in t["home"]},
        )
        compression = Compression(*(tuple(arrays[f"{part}_{j}"] for j in range(tree.n_items))
                                    for part in ("kept", "merged"))) if meta.get("compressed") else None
        return cls(tree=tree, item_names=list(meta["item_names"]), method=meta["method"], rho=float(meta["rho"]),
                   measured=[tuple(c) for c in meta.get("measured", [])], seconds=float(meta.get("seconds", 0)),
                   coded=bool(meta.get("coded", False)), compression=compression)


def synthesize(
    fit: Callable[..., PgmResult],
    records: Records,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_out: int | None = None,
    **options: Any,
) -> np.ndarray:
    """Synthetic records of ``fit`` (fit_aim, fit_mst, fit_mwem_pgm) as a dense code matrix (binary items: 0/1
    uint8; ``n_out`` rows, default the noisy n); ``options`` go to ``fit``."""
    result = fit(records, epsilon=epsilon, delta=delta, rng=rng, **options)
    return result.codes(default_n_out(result) if n_out is None else n_out, rng)


def at_epsilon(mechanism: Callable[..., PgmResult], records: Records, *,
               epsilon: float, delta: float, rng: np.random.Generator, accountant: Accountant | None = None,
               **options: Any) -> PgmResult:
    """A zCDP ``mechanism`` (aim, mwem_pgm: its whole run costs at most rho, whatever it adapts
    to) at (epsilon, delta): rho calibrated on dpgm's accountant (``rho_for_epsilon``); a fresh
    accountant with budget epsilon unless one is given."""
    rho = rho_for_epsilon(epsilon, delta)
    acc = accountant if accountant is not None else Accountant(delta=delta, budget_epsilon=epsilon)
    return mechanism(records, rho=rho, accountant=acc, rng=rng, **options)


def names_of(records: Records, n_items: int, item_names: list[str] | None) -> list[str]:
    """``item_names``, else the dataset's (a coded table's names), else "0".."m-1"."""
    if item_names:
        return list(item_names)
    if isinstance(records, BinaryDataset):
        return list(records.item_names)
    if isinstance(records, CodedRecords) and records.names is not None:
        return list(records.names)
    return [str(j) for j in range(n_items)]


def default_n_out(result: PgmResult) -> int:
    return max(1, round(result.n_noisy))


class Timer:
    """Wall-clock seconds of a fit, for the report only: no rounds rule reads it."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
