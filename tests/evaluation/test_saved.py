"""Saved baselines: every model class registers its own state under a kind; a release saves and loads any
baseline by that kind, a class from outside the package included, and refuses what is not registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from dpgm.errors import ConfigError
from dpgm.evaluation.marginals import MarginalsModel
from dpgm.evaluation.saved import SAVED, Arrays, model_from_state, model_state, saved_as


def test_the_shipped_baselines_register_their_kinds() -> None:
    assert {"marginals", "mwem", "pgm"} <= set(SAVED)


def test_a_model_round_trips_through_its_kind() -> None:
    model = MarginalsModel(probabilities=np.array([0.1, 0.7]), n_noisy=41.5, item_names=["a", "b"])
    meta, arrays = model_state(model)
    assert meta["kind"] == "marginals"
    again = model_from_state(meta, arrays)
    np.testing.assert_array_equal(again.probabilities, model.probabilities)
    assert (again.n_noisy, again.item_names) == (41.5, ["a", "b"])


def test_a_model_class_from_outside_the_package_saves_and_loads() -> None:
    @saved_as("constant_toy")
    @dataclass
    class Constant:
        value: float

        def state(self) -> tuple[dict[str, Any], Arrays]:
            return {"value": self.value}, {}

        @classmethod
        def from_state(cls, meta: dict[str, Any], arrays: Arrays) -> Constant:
            return cls(float(meta["value"]))

    try:
        assert model_from_state(*model_state(Constant(2.5))) == Constant(2.5)
        with pytest.raises(ConfigError, match="already registered"):
            saved_as("constant_toy")(Constant)
    finally:
        SAVED.pop("constant_toy")


def test_unregistered_models_and_kinds_are_refused() -> None:
    with pytest.raises(ConfigError, match="cannot save"):
        model_state(object())
    with pytest.raises(ConfigError, match="unknown saved baseline"):
        model_from_state({"kind": "nope"}, {})
