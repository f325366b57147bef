"""The audit's test switch: inside ``scaled_noise`` every noise is multiplied by the factor while the
charged events stay those of the unscaled noise; outside it nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import secure_generator
from dpgm.privacy.mechanisms import gaussian_noise, gaussian_release, standard_normal_
from dpgm.privacy.noise_scale import noise_scale, scaled_noise


def _release(accountant: Accountant) -> np.ndarray:
    return gaussian_release(np.zeros(4000), sensitivity=1.0, noise_multiplier=10.0, accountant=accountant,
                            stage="s", rng=secure_generator())


@pytest.mark.parametrize("factor", [0.1, 0.0])
def test_released_noise_is_scaled_and_the_charge_is_not(factor: float) -> None:
    plain, scaled = Accountant(delta=1e-5), Accountant(delta=1e-5)
    honest = _release(plain)
    with scaled_noise(factor):
        assert noise_scale() == factor
        cut = _release(scaled)
    assert noise_scale() == 1.0
    assert honest.std() == pytest.approx(10.0, rel=0.05) and cut.std() == pytest.approx(10.0 * factor, rel=0.05)
    assert scaled.spent().epsilon == plain.spent().epsilon


@pytest.mark.parametrize("secure", [False, True])
def test_gradient_noise_is_scaled(secure: bool) -> None:
    g = torch.Generator().manual_seed(0)
    with scaled_noise(0.1):
        drawn = gaussian_noise((20_000,), 2.0, g, secure=secure)
        unit = standard_normal_(torch.empty(20_000, dtype=torch.float64), g, secure=secure)
    assert float(drawn.std()) == pytest.approx(0.2, rel=0.05) and float(unit.std()) == pytest.approx(0.1, rel=0.05)


def test_bad_factors_are_refused() -> None:
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError), scaled_noise(bad):
            pass


def test_an_accountant_that_charged_inside_scaled_noise_reports_it_not_private() -> None:
    honest, weakened = Accountant(delta=1e-5), Accountant(delta=1e-5)
    _release(honest)
    with scaled_noise(0.1):
        _release(weakened)
    _release(weakened)  # back at full noise: the earlier release stays weakened
    assert honest.report()["not_private"] == [] and weakened.report()["not_private"] == ["weakened"]
