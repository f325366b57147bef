"""The baselines' exponential mechanisms (MWEM, MST, AIM, MWEM+PGM) draw as the product's do: in a
private run the exact report-noisy-max over the OS CSPRNG, never the run generator's PCG64 stream;
a seeded experiment repeats."""

from __future__ import annotations

import itertools

import numpy as np

from dpgm.evaluation import pgm
from dpgm.evaluation.mwem import FullDomain, MwemBudget, mwem
from dpgm.evaluation.queries import QuerySet, answer
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.events import ExponentialEvent
from tests.evaluation.test_mwem import M, tiny_data

QUERIES = [list(p) for k in (1, 2) for p in itertools.combinations(range(M), k)]


def workload() -> QuerySet:
    return QuerySet(items=[np.array(p) for p in QUERIES], group=np.ones(len(QUERIES), dtype=int),
                    n_items=M, maxlen=M, groups=1)


def run_mwem(rng: np.random.Generator) -> list[int]:
    data = tiny_data()
    result = mwem(answer(data, workload()), data.n_records, FullDomain(workload()),
                  budget=MwemBudget(epsilon=5.0, rounds=6, n_fraction=0.1), accountant=Accountant(delta=1e-6),
                  rng=rng, item_names=data.item_names)
    return [r.query for r in result.rounds]


def test_a_private_mwem_draws_nothing_from_its_generator_and_a_seeded_one_repeats() -> None:
    rng = secure_generator()
    state = rng.bit_generator.state
    run_mwem(rng)
    assert rng.bit_generator.state == state  # selections and counts: the OS CSPRNG
    assert run_mwem(np.random.default_rng(3)) == run_mwem(np.random.default_rng(3))


def test_a_private_pgm_selection_draws_nothing_from_its_generator() -> None:
    truth = pgm.TrueMarginals(tiny_data())
    candidates = [(0, 1), (0, 2), (1, 2)]
    scores = np.array([0.0, 800.0, 400.0])
    for fits in (None, lambda clique: clique != (0, 2)):
        rng, acc = secure_generator(), Accountant(delta=1e-6)
        state = rng.bit_generator.state
        chosen, _, _ = pgm.select_and_measure(acc, "s", rng, truth, candidates, scores, epsilon=1.0,
                                              sensitivity=1.0, sigma=2.0, fits=fits)
        assert rng.bit_generator.state == state
        assert chosen == ((0, 2) if fits is None else (1, 2))  # gaps of 400 at epsilon 1: the best that fits
        assert acc.ledger.entries[0].event == ExponentialEvent(epsilon=1.0) and acc.ledger.entries[0].count == 1
