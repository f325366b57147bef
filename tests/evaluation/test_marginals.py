"""Independent-marginals baseline: ledger entry, noise scale (sensitivity L + 1), clipping, sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm.data.dataset import BinaryDataset
from dpgm.errors import ConfigError, PrivacyBudgetError
from dpgm.evaluation.marginals import clipped_item_counts, fit_marginals
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.discrete import discrete_gaussian, discrete_laplace
from dpgm.privacy.events import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
)
from dpgm.privacy.mechanisms import SNAP_SHARE, grid_sensitivity, snap_grid
from dpgm.privacy.rdp import matched_discrete_laplace_epsilon


def random_data(n: int = 400, m: int = 12, seed: int = 0) -> BinaryDataset:
    rng = np.random.default_rng(seed)
    dense = (rng.random((n, m)) < np.linspace(0.05, 0.7, m)).astype(np.uint8)
    return BinaryDataset(records=sp.csr_matrix(dense), item_names=[f"i{j}" for j in range(m)])


@pytest.mark.parametrize(
    ("mechanism", "kwargs", "event"),
    [("laplace", {"epsilon": 0.7}, LaplaceEvent(epsilon=0.7)),
     ("gaussian", {"noise_multiplier": 3.0}, GaussianEvent(noise_multiplier=3.0))],
)
def test_one_ledger_entry(mechanism: str, kwargs: dict, event) -> None:
    """One exact discrete release of the 12 item counts and n, standing for ``event``."""
    accountant = Accountant(delta=1e-5)
    fit_marginals(random_data(), accountant=accountant, rng=np.random.default_rng(1), mechanism=mechanism,
                  **kwargs)
    [entry] = accountant.ledger.entries
    charged = entry.event
    assert (entry.stage, entry.count) == ("marginals", 1)
    assert charged.dim == 13 and charged.grid < 1.0  # float counts: snapped to a power-of-two grid
    planned = Accountant(delta=1e-5).epsilon_if(event)
    if mechanism == "laplace":
        sensitivity = 13.0  # L1: L + 1 with L = m = 12
        assert isinstance(charged, DiscreteLaplaceEvent)
        assert charged.epsilon == matched_discrete_laplace_epsilon(0.7) < 0.7
        # the matched epsilon' (about 0.91 x 0.7 here) buys slightly more noise: the release
        # spends a little less than its plan, never more (pure composition of one release)
        assert accountant.spent().epsilon == charged.epsilon
        assert 0.9 * planned <= charged.epsilon <= planned
    else:
        sensitivity = math.sqrt(13.0)  # L2: sqrt(L + 1)
        assert isinstance(charged, DiscreteGaussianEvent) and charged.noise_multiplier == 3.0
        assert accountant.spent().epsilon == planned  # the continuous Gaussian's RDP
    in_values = charged.sensitivity * charged.grid
    assert sensitivity <= in_values <= sensitivity * (1.0 + SNAP_SHARE) * (1 + 1e-12)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_noise_is_calibrated_to_length_bound(mechanism: str) -> None:
    data, length = random_data(), 5
    kwargs = {"epsilon": 0.5} if mechanism == "laplace" else {"noise_multiplier": 2.0}
    model = fit_marginals(data, accountant=Accountant(delta=1e-5), rng=np.random.default_rng(2),
                          mechanism=mechanism, max_length=length, **kwargs)
    # Replay the stream: clipping draws first, then one exact discrete noise vector over
    # (counts, n), snapped to the power-of-two grid for the sensitivity (rounded up by 2^-50).
    rng = np.random.default_rng(2)
    counts = np.append(clipped_item_counts(data.records, length, rng), data.n_records)
    up = 1 + 2**-50
    if mechanism == "laplace":
        sensitivity, norm = (length + 1) * up, 1  # L1 sensitivity L + 1
    else:
        sensitivity, norm = math.sqrt(length + 1) * up, 2  # L2 sensitivity sqrt(L + 1)
    grid = snap_grid(sensitivity, counts.size, norm)
    units = grid_sensitivity(sensitivity, counts.size, grid, norm)
    if mechanism == "laplace":  # the discrete Laplace at the matched epsilon' < 0.5
        scale = units / matched_discrete_laplace_epsilon(0.5) * up
        noise = discrete_laplace(counts.shape, scale, rng)
    else:
        noise = discrete_gaussian(counts.shape, 2.0 * units * up, rng)
    noisy = (np.rint(counts / grid).astype(np.int64) + noise) * grid
    assert model.n_noisy == pytest.approx(noisy[-1])
    np.testing.assert_allclose(model.probabilities, np.clip(noisy[:-1] / noisy[-1], 0, 1))


def test_clipping_keeps_at_most_l_items_of_each_record() -> None:
    data = random_data(n=300, m=12)
    lengths = data.record_lengths()
    exact = np.asarray(data.records.sum(axis=0)).ravel()
    np.testing.assert_array_equal(clipped_item_counts(data.records, 12, np.random.default_rng(0)), exact)
    clipped = clipped_item_counts(data.records, 2, np.random.default_rng(0))
    assert clipped.sum() == np.minimum(lengths, 2).sum()
    assert np.all(clipped <= exact)
    assert np.all(clipped[exact > 0] > 0)  # random choice: frequent items are not all dropped


def test_budget_refused_before_release() -> None:
    accountant = Accountant(delta=1e-5, budget_epsilon=0.1)
    with pytest.raises(PrivacyBudgetError):
        fit_marginals(random_data(), accountant=accountant, rng=np.random.default_rng(0), mechanism="laplace",
                      epsilon=1.0)
    assert accountant.ledger.entries == []


def test_samples_follow_released_frequencies() -> None:
    model = fit_marginals(random_data(n=5000), accountant=Accountant(delta=1e-5), rng=np.random.default_rng(3),
                          mechanism="laplace", epsilon=5.0)
    synthetic = model.sample(100_000, np.random.default_rng(4))
    assert synthetic.records.shape == (100_000, 12) and synthetic.item_names == [f"i{j}" for j in range(12)]
    freq = np.asarray(synthetic.records.mean(axis=0)).ravel()
    np.testing.assert_allclose(freq, model.probabilities, atol=0.01)
    np.testing.assert_allclose(model.probabilities, np.linspace(0.05, 0.7, 12), atol=0.03)


@pytest.mark.parametrize(
    "kwargs", [{"mechanism": "laplace"}, {"mechanism": "gaussian"}, {"mechanism": "cauchy", "epsilon": 1.0},
               {"mechanism": "laplace", "epsilon": 1.0, "max_length": 0}],
)
def test_bad_settings_raise_config_error(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        fit_marginals(random_data(), accountant=Accountant(delta=1e-5), rng=np.random.default_rng(0), **kwargs)
