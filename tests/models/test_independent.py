"""Independent items: the noisy mean record as the model; still a DP-SGD model."""

from __future__ import annotations

import torch

from dpgm.config import ModelConfig
from dpgm.models import Independent, build_model
from dpgm.models.protocol import GenerativeModel
from dpgm.stages.part_means import start_at_means


def test_samples_follow_the_output_bias_item_by_item() -> None:
    model = build_model(ModelConfig(kind="independent"), 4)
    assert isinstance(model, Independent) and isinstance(model, GenerativeModel)
    start_at_means(model, [0.05, 0.3, 0.5, 0.9])
    g = torch.Generator().manual_seed(0)
    x = model.sample(40_000, g)
    assert torch.allclose(x.mean(0), torch.tensor([0.05, 0.3, 0.5, 0.9]), atol=0.01)
    c = torch.corrcoef(x.T)  # independent: no correlation between items
    assert (c - torch.eye(4)).abs().max() < 0.02


def test_its_loss_is_the_bernoulli_likelihood_and_trains_the_bias() -> None:
    model = Independent(3)
    x = torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    loss = model.loss_per_record(x, None)
    assert torch.allclose(loss, torch.full((2,), 3 * torch.log(torch.tensor(2.0))))
    loss.mean().backward()
    assert torch.allclose(model.output_bias().grad, torch.tensor([-0.5, 0.0, 0.0]))
