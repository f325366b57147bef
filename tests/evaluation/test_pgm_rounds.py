"""AIM and MWEM+PGM stop by a rule on public inputs: neither the data nor the clock changes how
many rounds run or their noise. The loops run without mbi: its fit is replaced by a fixed model."""

from __future__ import annotations

import importlib.util
import itertools
import time
from pathlib import Path

import numpy as np
import pytest

from dpgm.errors import ConfigError
from dpgm.evaluation import aim as aim_module
from dpgm.evaluation import mwem_pgm as mwem_pgm_module
from dpgm.evaluation import pgm
from dpgm.evaluation.aim import AimOptions, AimSchedule, aim
from dpgm.evaluation.mwem_pgm import MwemPgmOptions, MwemPgmSchedule, mwem_pgm
from dpgm.privacy.accountant import Accountant

RHO = 0.05
ITEMS = 5


def plan(schedule: pgm.RoundSchedule, anneal: bool = False) -> list[tuple[float, float]]:
    """(epsilon_t, sigma_t) of every round ``schedule`` makes, annealing after each if asked."""
    out = []
    for epsilon, sigma, last in schedule.rounds():
        out.append((epsilon, sigma))
        if anneal and not last:
            schedule.anneal()
    return out


def records(n: int, seed: int, rate: float) -> np.ndarray:
    """n x ITEMS binary records, correlated through a shared factor."""
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    return (rng.random((n, ITEMS)) < rate * (0.5 + z[:, None])).astype(np.uint8)


SMALL, LARGE = records(300, 0, 0.1), records(20_000, 1, 0.6)  # different sizes and contents


# ---- the rule itself


def test_cap_reached_counts_rounds_only() -> None:
    assert not pgm.cap_reached(None, 10**9)
    assert [pgm.cap_reached(3, done) for done in range(4)] == [False, False, True, True]
    assert pgm.cap_reached(1, 0)


def test_defaults_are_the_authors() -> None:
    assert aim_module.default_rounds(17) == 16 * 17 and aim_module.default_rounds(100) == 1600
    assert AimOptions().max_model_size == 80.0 and AimOptions().max_rounds is None
    assert mwem_pgm_module.default_rounds(17) == 17  # the authors' m, capped at 60 on 100 items
    assert MwemPgmOptions().max_model_size == 25.0 and pgm.ALPHA == 0.9


def test_cap_ends_the_plan_and_the_last_round_spends_the_rest() -> None:
    for schedule, full in ((AimSchedule(RHO, 80, ITEMS, 3), AimSchedule(RHO, 80, ITEMS)),
                           (MwemPgmSchedule(RHO, 10, 3), MwemPgmSchedule(RHO, 10))):
        capped, uncapped = plan(schedule), plan(full)
        assert len(capped) == 3 < len(uncapped)
        assert capped[:2] == uncapped[:2]  # the same rounds up to the cap
        assert capped[2][1] < uncapped[2][1]  # the last one measures with the rest of the budget
        assert schedule.used == pytest.approx(RHO, rel=1e-12)


@pytest.mark.parametrize("bad", [0, -1])
def test_schedules_refuse_a_cap_below_one(bad: int) -> None:
    with pytest.raises(ConfigError, match="max_rounds"):
        AimSchedule(RHO, 80, ITEMS, bad)
    with pytest.raises(ConfigError, match="max_rounds"):
        MwemPgmSchedule(RHO, 10, bad)


# ---- the loops, on data (mbi replaced)


class FixedModel:
    """Stands in for mbi's fitted model: the measured cliques, which the size filter reads."""

    def __init__(self, cliques: list[pgm.Clique]) -> None:
        self.cliques = cliques


@pytest.fixture
def without_mbi(monkeypatch: pytest.MonkeyPatch) -> None:
    """mbi's fit replaced by one uniform model over a public total of 1000 records; selection,
    measurement and accounting run as in a real run. The model never moves, so AIM anneals
    after every round but the last, whatever the data."""

    def fit(measurements: list, n_items: int, iters: int, warm_start: object = None) -> FixedModel:
        return FixedModel([clique for clique, _ in measurements])

    def tree(cls: type, model: FixedModel, n_items: int) -> pgm.JunctionTree:
        tables = [np.full(2, 500.0)] * n_items
        return pgm.JunctionTree([(j,) for j in range(n_items)], tables, [], n_items, 1000.0)

    for module in (aim_module, pgm):
        monkeypatch.setattr(module, "fit_model", fit)
        monkeypatch.setattr(module, "measurement", lambda clique, y, sigma: (clique, y))
    monkeypatch.setattr(pgm.JunctionTree, "from_mbi", classmethod(tree))


def run_both(x: np.ndarray, max_rounds: int | None = None) -> tuple[pgm.PgmResult, pgm.PgmResult]:
    """AIM (T = 80) and MWEM+PGM (T = the 5 items) on ``x`` with the same public inputs and seed."""
    a = aim(x, rho=RHO, accountant=Accountant(delta=1e-6), rng=np.random.default_rng(7),
            trace=True, options=AimOptions(rounds=80, max_iters=1, max_rounds=max_rounds))
    m = mwem_pgm(x, rho=RHO, accountant=Accountant(delta=1e-6), rng=np.random.default_rng(7),
                 trace=True, options=MwemPgmOptions(max_iters=1, max_rounds=max_rounds))
    return a, m


def noise(result: pgm.PgmResult) -> list[tuple[float, float]]:
    return [(r.epsilon, r.sigma) for r in result.rounds]


@pytest.mark.usefixtures("without_mbi")
@pytest.mark.parametrize("max_rounds", [None, 2])
def test_rounds_and_noise_do_not_depend_on_the_data(max_rounds: int | None) -> None:
    small, large = run_both(SMALL, max_rounds), run_both(LARGE, max_rounds)
    for a, b, schedule, anneal in zip(
        small, large,
        (AimSchedule(RHO, 80, ITEMS, max_rounds), MwemPgmSchedule(RHO, ITEMS, max_rounds)),
        (True, False),
    ):
        assert noise(a) == noise(b) == plan(schedule, anneal)  # exactly the public rule's plan
        assert len(a.rounds) == max_rounds or max_rounds is None
        assert a.info["rho_used"] == pytest.approx(RHO, rel=1e-9)
        # the rounds did read the data: each measured marginal sums to about its n
        assert abs(a.rounds[0].measurement.sum() - 300) < 500
        assert abs(b.rounds[0].measurement.sum() - 20_000) < 500


@pytest.mark.usefixtures("without_mbi")
def test_a_clock_jumping_forward_changes_no_round(monkeypatch: pytest.MonkeyPatch) -> None:
    calm = run_both(LARGE)
    ticks = itertools.count()

    def jump() -> float:  # every reading a billion seconds (32 years) after the last one
        return 1e9 * next(ticks)

    for name in ("time", "monotonic", "perf_counter"):
        monkeypatch.setattr(time, name, jump)
    rushed = run_both(LARGE)
    for before, after in zip(calm, rushed):
        assert noise(after) == noise(before)
        assert [r.clique for r in after.rounds] == [r.clique for r in before.rounds]
        assert after.seconds >= 1e9  # the fit's own clock did jump: timing is reported only


# ---- the benchmark's options


def counting_queries(monkeypatch: pytest.MonkeyPatch) -> object:
    """benchmarks/counting_queries.py as a module (it imports provenance from its folder)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "counting_queries.py"
    monkeypatch.syspath_prepend(str(script.parent))
    spec = importlib.util.spec_from_file_location("counting_queries_rounds", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("old,new", [("--aim-time-limit", "--aim-max-rounds"),
                                     ("--mwem-pgm-time-limit", "--mwem-pgm-max-rounds")])
def test_benchmark_time_limit_is_a_one_line_error_naming_the_cap(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = counting_queries(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        module.parse_args([old, "90"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and new in err
    args = module.parse_args([new, "7"])
    assert getattr(args, new[2:].replace("-", "_")) == 7
    assert not any("time_limit" in key for key in vars(args))
