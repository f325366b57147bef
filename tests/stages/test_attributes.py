from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from dpgm.config import Config
from dpgm.errors import ConfigError
from dpgm.stages.attributes import Schema, project_values, schema_of, simplex_projection

FLOOR = 1e-5


def test_the_simplex_projection_is_the_nearest_point_found_by_a_general_solver():
    rng = np.random.default_rng(0)
    for _ in range(20):
        values = rng.normal(0.3, 0.4, rng.integers(2, 7))
        total = float(rng.uniform(0.2, 1.5))
        found = minimize(lambda p, v=values: ((p - v) ** 2).sum(), np.full(values.size, total / values.size),
                         constraints=[{"type": "eq", "fun": lambda p, t=total: p.sum() - t}],
                         bounds=[(0.0, None)] * values.size, method="SLSQP", options={"ftol": 1e-12})
        np.testing.assert_allclose(simplex_projection(values, total), found.x, atol=1e-6)


def test_a_schema_maps_the_kept_items_to_their_attributes_and_knows_which_keep_every_value():
    cfg = Config()
    cfg.data.attribute_sizes = [2, 3, 1]
    cfg.validate()
    assert cfg.data.attributes == 3
    whole = schema_of(cfg, None)
    assert whole.of.tolist() == [0, 0, 1, 1, 1, 2] and whole.complete.all()
    kept = schema_of(cfg, np.array([0, 1, 2, 4, 5]))
    assert kept.of.tolist() == [0, 0, 1, 1, 2] and kept.complete.tolist() == [True, False, True]
    cfg.data.attribute_sizes = None
    assert schema_of(cfg, None) is None


def test_a_schema_that_disagrees_with_the_declared_attributes_or_holds_an_empty_attribute_is_refused():
    cfg = Config()
    cfg.data.attribute_sizes, cfg.data.attributes = [2, 2], 3
    with pytest.raises(ConfigError, match="attribute_sizes"):
        cfg.validate()
    cfg.data.attribute_sizes, cfg.data.attributes = [2, 0], None
    with pytest.raises(ConfigError, match="attribute_sizes"):
        cfg.validate()


def test_each_attributes_values_add_up_to_one_by_least_squares_and_a_floored_value_stays():
    schema = Schema(of=np.array([0, 0, 0, 1, 1]), complete=np.array([True, True]))
    means = np.array([[0.5, 0.3, FLOOR, 0.7, 0.4],
                      [0.2, 0.2, 0.2, 0.9, 0.05]])
    out = project_values(means, schema, FLOOR)
    np.testing.assert_allclose(out[:, :3].sum(axis=1), 1.0)
    np.testing.assert_allclose(out[:, 3:].sum(axis=1), 1.0)
    np.testing.assert_allclose(out[0], [0.6, 0.4, FLOOR, 0.65, 0.35], atol=1e-4)  # the floored value kept
    np.testing.assert_allclose(out[1, :3], [1 / 3] * 3)  # an equal shift
    np.testing.assert_allclose(out[1, 3:], [0.925, 0.075])


def test_an_attribute_missing_values_is_only_brought_down_to_one():
    schema = Schema(of=np.array([0, 0]), complete=np.array([False]))
    np.testing.assert_allclose(project_values(np.array([[0.3, 0.4]]), schema, FLOOR), [[0.3, 0.4]])
    np.testing.assert_allclose(project_values(np.array([[0.7, 0.5]]), schema, FLOOR), [[0.6, 0.4]])
