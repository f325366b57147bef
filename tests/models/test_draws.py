"""Systematic draws: each draw has the model's law, and the sums over draws lose their sampling noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.models.draws import bernoulli_draws, choose
from dpgm.models.independent import Independent
from dpgm.models.tree import Tree


def test_bernoulli_draws_hold_each_item_sum_p_times_rounded_and_each_draw_has_law_p() -> None:
    p = torch.tensor([0.0, 0.13, 0.5, 0.91, 1.0])
    g = torch.Generator().manual_seed(1)
    x = bernoulli_draws(p.expand(1000, -1), g)
    counts = x.sum(dim=0)
    assert torch.all((counts >= torch.floor(1000 * p)) & (counts <= torch.ceil(1000 * p)))
    # each record's law is its own p, whatever the others' are; a column holds sum(p), rounded
    rows = torch.tensor([[0.2, 0.9], [0.9, 0.05], [0.5, 0.5]])
    draws = torch.stack([bernoulli_draws(rows, g) for _ in range(4000)])
    assert draws.mean(dim=0).numpy() == pytest.approx(rows.numpy(), abs=4 * np.sqrt(0.25 / 4000))
    sums = draws.sum(dim=1)
    assert torch.all((sums >= torch.floor(rows.sum(dim=0))) & (sums <= torch.ceil(rows.sum(dim=0))))
    # independent draws would stray by their sampling error instead
    iid = torch.bernoulli(p.expand(1000, -1), generator=g).sum(dim=0)
    assert float((iid - 1000 * p).abs().max()) > 1


def test_choose_gives_each_index_count_p_times_rounded_and_each_draw_has_law_p() -> None:
    probs = torch.tensor([0.2, 0.0, 0.5, 0.3], dtype=torch.float64) * 7  # not normalised
    g = torch.Generator().manual_seed(2)
    picks = choose(probs, 999, g)
    counts = torch.bincount(picks, minlength=4).double()
    want = 999 * probs / probs.sum()
    assert torch.all((counts >= torch.floor(want)) & (counts <= torch.ceil(want))) and counts[1] == 0
    first = torch.bincount(torch.stack([choose(probs, 2, g)[0] for _ in range(4000)]), minlength=4)
    assert (first / 4000).numpy() == pytest.approx((probs / probs.sum()).numpy(), abs=4 * np.sqrt(0.25 / 4000))


def test_a_model_s_item_counts_in_one_draw_are_its_frequencies_times_n_rounded() -> None:
    """Independent items hold each item n p times exactly; a tree's items, drawn given their parents, keep the
    tree's exact marginals far closer than independent draws' sampling error sqrt(n p (1 - p))."""
    n, g = 20_000, torch.Generator().manual_seed(3)
    independent = Independent(4)
    independent.out.bias.data = torch.logit(torch.tensor([0.1, 0.25, 0.5, 0.8]))
    counts = independent.sample(n, g).sum(dim=0)
    want = n * torch.sigmoid(independent.out.bias.data)
    assert torch.all((counts - want).abs() <= 1)
    tree = Tree(4)
    tree.set_tree(torch.tensor([-1, 0, 1, 1]), torch.logit(torch.tensor([[0.3, 0.3], [0.1, 0.9], [0.2, 0.7],
                                                                         [0.6, 0.05]])))
    gap = (tree.sample(n, g).sum(dim=0) / n - tree.marginals()).abs().max()
    assert float(gap) < 0.2 * np.sqrt(0.25 / n)


def test_independent_draws_are_torch_s_own() -> None:
    """``systematic=False`` draws exactly what torch.bernoulli and torch.multinomial draw from the same stream."""
    p = torch.rand(50, 4, generator=torch.Generator().manual_seed(5))
    a, b = torch.Generator().manual_seed(6), torch.Generator().manual_seed(6)
    assert torch.equal(bernoulli_draws(p, a, systematic=False), torch.bernoulli(p, generator=b))
    shares = torch.tensor([0.5, 0.2, 0.3])
    assert torch.equal(choose(shares, 40, a, systematic=False),
                       torch.multinomial(shares, 40, replacement=True, generator=b))
