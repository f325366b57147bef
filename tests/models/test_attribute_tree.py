"""A tree over a table's attributes: one value per attribute, parents first, saved with its own shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.config import ModelConfig
from dpgm.models import build_model
from dpgm.models.attribute_tree import AttributeTree, systematic_choices
from dpgm.models.draws import choose


def _tree() -> AttributeTree:
    """Items 0-2 are attribute 0's values, items 3-4 attribute 1's (a child of 0) and item 5 attribute 2's."""
    model = AttributeTree(6)
    probs = torch.zeros(3, 4, 4, dtype=torch.float64)
    probs[0, :, :4] = torch.tensor([0.1, 0.2, 0.3, 0.4])
    probs[1, :, :3] = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.9, 0.1], [0.0, 0.5, 0.5], [0.0, 0.1, 0.9]])
    probs[2, :, :2] = torch.tensor([0.7, 0.3])
    model.set_dense(torch.tensor([0, 0, 0, 1, 1, 2]), torch.tensor([-1, 0, -1]), probs)
    return model


@pytest.mark.parametrize("systematic", [True, False])
def test_draws_hold_at_most_one_value_per_attribute_at_the_models_frequencies(systematic):
    model, n = _tree(), 40_000
    x = model.sample(n, torch.Generator().manual_seed(0), systematic=systematic).numpy()
    assert (np.add.reduceat(x, [0, 3, 5], axis=1) <= 1).all()
    assert ((x[:, :3].sum(axis=1) == 0) == (x[:, 3:5].sum(axis=1) == 0)).all()  # none begets none
    expected = model.marginals().numpy()
    np.testing.assert_allclose(expected, [0.2, 0.3, 0.4, 0.2 * 0.9 + 0.3 * 0.5 + 0.4 * 0.1, 0.2 * 0.1 + 0.3 * 0.5
                                          + 0.4 * 0.9, 0.3])
    assert np.abs(x.mean(axis=0) - expected).max() < 5 * np.sqrt(0.25 / n)


def test_the_likelihood_reads_each_records_values():
    model = _tree()
    x = torch.tensor([[0, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]], dtype=torch.float32)
    expected = -np.log([0.3 * 0.5 * 0.3, 0.1 * 1.0 * 0.7])  # item 1 is attribute 0's second value
    np.testing.assert_allclose(model.record_losses(x, model.step_noise(2, None)).numpy(), expected, rtol=1e-6)


def test_a_saved_tree_loads_into_a_fresh_model_of_its_kind():
    model = _tree()
    fresh = build_model(ModelConfig(kind="tree", options={"by_attribute": True}), 6)
    assert isinstance(fresh, AttributeTree)
    fresh.load_state_dict(model.state_dict())
    assert all(torch.equal(fresh.state_dict()[k], v) for k, v in model.state_dict().items())
    np.testing.assert_allclose(fresh.marginals().numpy(), model.marginals().numpy())


def test_a_cycle_or_a_table_per_item_is_refused():
    model = _tree()
    with pytest.raises(ValueError, match="cycle"):
        model.set_tree(model.attribute, torch.tensor([1, 0, -1]), model.groups, model.within, model.tables, model.shapes)
    with pytest.raises(ValueError, match="one attribute per item"):
        model.set_tree(model.attribute[:5], model.parent, model.groups, model.within, model.tables, model.shapes)


def test_the_rows_systematic_draws_at_once_are_those_drawn_one_row_after_another():
    probs = torch.rand(5, 7, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    probs[2, 4:] = 0.0  # a row of fewer values, zero-padded
    counts = torch.tensor([4, 1, 9, 30, 2])
    at_once = systematic_choices(probs, counts, torch.Generator().manual_seed(5))
    generator = torch.Generator().manual_seed(5)
    one_by_one = torch.cat([choose(p, int(c), generator) for p, c in zip(probs, counts)])
    assert torch.equal(at_once, one_by_one) and (at_once[5:14] < 4).all()
    assert systematic_choices(probs[:0], counts[:0], generator).numel() == 0
