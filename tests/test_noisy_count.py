"""The n the rules read: a noisy count of the records, charged before it is drawn, read again (not redrawn) on
resume, and a plan that changes family only at a threshold its reasons name."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dpgm import rules
from dpgm.config import config_from_dict
from dpgm.data.dataset import BinaryDataset
from dpgm.pipeline.plan import COUNT_STAGE, noisy_records
from dpgm.pipeline.run import TrainingRun
from dpgm.plan import plan
from dpgm.privacy import mechanisms
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.calibrate import sigma_for_share, zcdp_rho
from dpgm.privacy.events import DiscreteGaussianEvent
from dpgm.rules import PublicFacts


def _records(n: int, m: int = 17) -> BinaryDataset:
    x = (np.random.default_rng(0).random((n, m)) < 0.2).astype(np.uint8)
    return BinaryDataset(records=sp.csr_matrix(x), item_names=[str(j) for j in range(m)], name="synthetic")


def _config(tmp_path, epsilon: float = 1.0) -> object:
    return config_from_dict({"rules": "public", "privacy": {"target_epsilon": epsilon, "delta": 1e-6},
                             "runs_dir": str(tmp_path), "seed": 0})


def test_the_count_is_charged_before_it_is_drawn_and_costs_its_share(tmp_path, monkeypatch) -> None:
    accountant, seen = Accountant(delta=1e-6), []

    def draw(shape, scale, rng=None):
        seen.append((accountant.ledger.count(), scale))  # releases on the ledger at the draw
        return np.zeros(shape, dtype=np.int64)

    monkeypatch.setattr(mechanisms, "discrete_gaussian", draw)
    cfg = _config(tmp_path)
    n = noisy_records(cfg, _records(1_234), 1e-6, accountant, np.random.default_rng(0))
    assert n == 1_234.0  # zero noise patched in: the count itself, on the integer grid
    [entry] = accountant.ledger.entries
    sigma = sigma_for_share(zcdp_rho(1.0, 1e-6), rules.COUNT_SHARE)
    assert entry.stage == COUNT_STAGE and isinstance(entry.event, DiscreteGaussianEvent)
    assert entry.event.sensitivity == pytest.approx(1.0, rel=1e-12) and (entry.event.dim, entry.event.grid) == (1, 1.0)
    assert entry.event.noise_multiplier == pytest.approx(sigma, rel=1e-12)
    assert seen == [(1, pytest.approx(sigma, rel=1e-9))]  # charged, then drawn at sigma records
    # its epsilon alone at delta 1e-6, pinned: 1% of the run's rho
    assert accountant.spent().epsilon == pytest.approx(0.0863328, rel=1e-5)
    assert zcdp_rho(1.0, 1e-6) * rules.COUNT_SHARE == pytest.approx(1 / (2 * sigma**2), rel=1e-12)


def test_a_run_plans_from_its_noisy_count_and_a_resume_reads_it_again(tmp_path) -> None:
    cfg = _config(tmp_path)
    run = TrainingRun(cfg, tmp_path / "r", data=_records(9_000), progress=False)
    sigma = sigma_for_share(zcdp_rho(1.0, 1e-6), rules.COUNT_SHARE)
    assert abs(run.records - 9_000) < 6 * sigma  # about 45 records at epsilon 1
    assert run.accountant.ledger.stages() == [COUNT_STAGE]
    assert run.cfg.model.kind == "tree"  # N x epsilon about 9,000: not planned as 1,000 (independent items)
    run.start()
    run.checkpoint()
    checkpoint = torch.load(run.layout.checkpoint, weights_only=True)  # as resume reads it
    assert checkpoint["noisy_records"] == run.records
    again = TrainingRun(_config(tmp_path), tmp_path / "r", data=_records(9_000), progress=False,
                        checkpoint=checkpoint)
    assert again.records == run.records and again.accountant is None  # nothing drawn, nothing charged
    again.resume(checkpoint)
    assert again.accountant.ledger.count(COUNT_STAGE) == 1
    again.train({})
    report = again.finish()
    assert report["noisy_records"] == run.records and COUNT_STAGE in report["stage_epsilons"]
    assert f"N = {run.records:,.0f} (a noisy count of the records)" in report["rules"]


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


@pytest.mark.parametrize("items", [17, 100, 1_500])
def test_the_plan_changes_family_or_groups_only_at_a_threshold_its_reasons_name(items: int) -> None:
    """Along n (100 to a million, 2% steps) at each epsilon, and along epsilon (0.05 to 10, 2% steps) at each n:
    where the model family or the number of groups changes between two neighbouring points, a reason of one of
    them names a threshold of N x epsilon between their two scales; the groups never shrink as either grows."""
    grid = np.exp(np.arange(np.log(100), np.log(1e6), np.log(1.02)))
    epsilons = np.exp(np.arange(np.log(0.05), np.log(10), np.log(1.02)))
    lines = [[(n, e) for n in grid] for e in (0.1, 0.3, 1.0, 4.0)]
    lines += [[(n, e) for e in epsilons] for n in (1_000, 9_000, 30_000)]
    for line in lines:
        plans = [plan(PublicFacts(n_items=items, records_magnitude=100, epsilon=e, delta=1e-6, records=n))
                 for n, e in line]
        for before, after in itertools.pairwise(plans):
            low, high = before.facts.scale, after.facts.scale
            k = after.settings["partition.k"]
            assert k >= before.settings["partition.k"]
            if before.settings["partition.k"] > 1:  # groups grow by one per RECORDS_PER_PART, as the reason says
                assert k == min(rules.MAX_PARTS, int(high // rules.RECORDS_PER_PART))
            for key in ("model.kind", "partition.k"):
                if before.settings[key] != after.settings[key] and (key == "model.kind" or k == 1 or
                                                                    before.settings["partition.k"] == 1):
                    named = _numbers(before.reasons[key] + " " + after.reasons[key])
                    assert any(low < t <= high for t in named), (key, low, high, before.reasons[key])
