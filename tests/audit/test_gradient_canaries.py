"""Gradient canaries: each owns one coordinate of the model's mark columns, joins a step at the run's
rate when included, adds one clipped record's worth there, and its readings score it."""

from __future__ import annotations

import numpy as np
import torch

from dpgm.audit.canaries import GradientCanaries, gradient_scores, input_weights
from dpgm.config import config_from_dict
from dpgm.models import build_model


def _canaries(included: np.ndarray, rate: float = 1.0) -> tuple[GradientCanaries, torch.nn.Module]:
    model = build_model(config_from_dict({}, ["model.options={hidden: [4]}"]).model,
                        3 + GradientCanaries.marks(len(included), 4))
    return GradientCanaries(model, 3, included, rate, np.random.default_rng(0)), model


def test_each_canary_owns_one_mark_coordinate() -> None:
    watch, model = _canaries(np.ones(10, dtype=bool))
    assert GradientCanaries.marks(10, 4) == 3 and input_weights(model)[0].shape == (4, 6)
    coords = set(zip(watch.rows.tolist(), watch.cols.tolist()))
    assert len(coords) == 10 and all(col >= 3 for _, col in coords)  # never a base item's column


def test_included_canaries_add_one_unit_and_every_coordinate_is_read() -> None:
    included = np.array([True, False] * 5)
    watch, model = _canaries(included)
    params = list(model.parameters())
    grads = [torch.zeros_like(p) for p in params]
    watch(0, params, grads, 0.25)  # rate 1: every included canary is in this step
    weight = next(g for p, g in zip(params, grads) if p is input_weights(model)[0])
    np.testing.assert_allclose(watch.observed[0], included.astype(float))
    assert float(weight.sum()) == 0.25 * included.sum()
    assert all(float(g.abs().sum()) == 0 for p, g in zip(params, grads) if p is not input_weights(model)[0])


def test_included_canaries_join_at_the_sampling_rate() -> None:
    included = np.ones(2000, dtype=bool)
    watch, model = _canaries(included, rate=0.1)
    params = list(model.parameters())
    watch(0, params, [torch.zeros_like(p) for p in params], 1.0)
    assert 150 < watch.observed[0].sum() < 250


def test_scores_rank_sampled_canaries_above_the_rest_at_any_noise() -> None:
    rng = np.random.default_rng(1)
    included = rng.random(400) < 0.5
    for noise in (1.0, 0.1, 1e-6):
        readings = noise * rng.standard_normal((50, 400)) + included * (rng.random((50, 400)) < 0.2)
        scores = gradient_scores(readings, 0.2)
        top = np.argsort(-scores)[:100]
        assert included[top].mean() > (0.9 if noise == 1.0 else 0.999)
