"""The calibration's shifts (Newton steps in a safeguarded bracket) reach the fixed point of a plain bisection."""

from __future__ import annotations

import pytest
import torch

from dpgm.models import calibration
from dpgm.models.calibration import FLOOR, bias_shift, monotone_root, total_shift


def bisected_bias_shift(logits: torch.Tensor, target: torch.Tensor, iterations: int = 60) -> torch.Tensor:
    """Reference: per item, 60 bisection steps on mean over rows of sigmoid(logits + d) = target, in double."""
    logits = logits.double()
    lo = -logits.max(dim=0).values - 20.0
    hi = -logits.min(dim=0).values + 20.0
    for _ in range(iterations):
        mid = (lo + hi) / 2
        above = torch.sigmoid(logits + mid).mean(dim=0) > target
        hi = torch.where(above, mid, hi)
        lo = torch.where(above, lo, mid)
    return (lo + hi) / 2


def bisected_total_shift(logits: torch.Tensor, target: float, iterations: int = 60) -> float:
    """Reference: 60 bisection steps on the one shift with mean over rows of sum_i sigmoid(logits + d) = target."""
    logits = logits.double()
    lo, hi = -float(logits.max()) - 40.0, -float(logits.min()) + 40.0
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if float(torch.sigmoid(logits + mid).sum(dim=-1).mean()) > target:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def _problem(scale: float, seed: int, rows: int = 3000, items: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of varied spread and offset per item, and targets from FLOOR to 1 - FLOOR (most of them small)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, items, generator=g) * scale + torch.randn(items, generator=g) * 4
    target = torch.rand(items, generator=g) ** 4 * (1 - 2 * FLOOR) + FLOOR
    target[:2] = torch.tensor([FLOOR, 1 - FLOOR])
    return logits, target  # float32, as the model's bias


@pytest.mark.parametrize(("scale", "seed"), [(0.0, 1), (0.5, 2), (3.0, 3), (8.0, 4)])
def test_bias_shift_reaches_the_bisections_fixed_point(scale, seed):
    logits, target = _problem(scale, seed)
    shift = bias_shift(logits, target)
    target = target.double()
    torch.testing.assert_close(shift.double(), bisected_bias_shift(logits, target), atol=5e-5, rtol=0)
    reached = torch.sigmoid(logits.double() + shift.double()).mean(dim=0)
    torch.testing.assert_close(reached / target, torch.ones_like(target), atol=5e-5, rtol=0)  # the part means


@pytest.mark.parametrize(("scale", "target"), [(0.5, 0.02), (3.0, 10.0), (8.0, 390.0)])
def test_total_shift_reaches_the_bisections_fixed_point(scale, target):
    logits, _ = _problem(scale, 5)
    assert total_shift(logits, target) == pytest.approx(bisected_total_shift(logits, target), abs=5e-5)


def test_solver_takes_a_few_passes_and_one_when_already_there(monkeypatch):
    logits, target = _problem(3.0, 6)
    calls = []
    moments = calibration._moments

    def counted(*args, **kwargs):
        at = moments(*args, **kwargs)
        return lambda shift: calls.append(1) or at(shift)

    monkeypatch.setattr(calibration, "_moments", counted)
    shift = bias_shift(logits, target)
    assert len(calls) <= 12  # where the bisection took 60
    calls.clear()
    assert float(bias_shift(logits + shift, target).abs().max()) < 1e-4
    assert len(calls) <= 4


def test_monotone_root_bisects_where_newton_leaves_the_bracket():
    def moments(d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return (d ** 3 + 1.0) / 9.0, (8.0 - d ** 3) / 9.0, d ** 2 / 3.0  # increasing from 0 to top = 1 on [-1, 2]; flat at the start d = 0

    target = torch.tensor(1.125 / 9.0, dtype=torch.float64)  # its root: d = 1/2
    root = monotone_root(moments, target, torch.tensor(-1.0, dtype=torch.float64),
                         torch.tensor(2.0, dtype=torch.float64), top=1.0)
    assert float(root) == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize("rows", [1, calibration.MOMENT_ROWS, 2 * calibration.MOMENT_ROWS + 37])
@pytest.mark.parametrize("per_item", [True, False])
def test_moments_summed_by_blocks_of_rows_are_the_whole_arrays(rows, per_item):
    """The moments taken MOMENT_ROWS rows at a time (a last block short, or one block alone) are those of the whole
    array in double, per item or over every item."""
    logits, _ = _problem(2.0, 7, rows=rows, items=50)
    shift = torch.linspace(-1.0, 1.0, 50, dtype=torch.float64) if per_item else torch.tensor(0.3, dtype=torch.float64)
    value, rest, slope = calibration._moments(logits, per_item=per_item)(shift)
    p = torch.sigmoid(logits.double() + shift)
    dims = (0,) if per_item else (0, 1)
    for got, want in ((value, p.sum(dim=dims)), (rest, (1 - p).sum(dim=dims)), (slope, (p * (1 - p)).sum(dim=dims))):
        torch.testing.assert_close(got, want / rows, rtol=1e-5, atol=1e-7)
