"""One check of a run's (epsilon, delta) for dpgm and the baselines alike: delta at most 1/N for the
records' order of magnitude N, epsilon a finite number in (0, MAX_EPSILON]; bad values exit 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.api import Synthesizer
from dpgm.api.kinds import as_dataset
from dpgm.cli import run_cli
from dpgm.config import config_from_dict
from dpgm.config_fields import MAX_EPSILON
from dpgm.errors import ConfigError
from dpgm.evaluation.baselines import fit_baseline
from tests.test_evaluate_cli import evaluate, files  # noqa: F401  (the fixture)
from tests.test_train_cli import train_script

N, M = 400, 6  # N = 100: delta at most 0.01


def records() -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.random((N, M)) < 0.3).astype(np.uint8)


@pytest.mark.parametrize("method", ["marginals", "mwem", "dpgm"])
def test_every_method_refuses_a_delta_above_one_over_n(method: str) -> None:
    options = {"rounds": 2, "queries": 10} if method == "mwem" else {}  # a baseline takes only its own options
    synth = Synthesizer(epsilon=1.0, delta=0.9, method=method, seed=0, options=options)
    with pytest.raises(ConfigError, match=r"delta = 0\.9 is above 1/N .* N = 100"):
        synth.fit(records())


def test_a_baseline_takes_a_delta_of_one_over_n_and_lists_n_as_public() -> None:
    report = Synthesizer(epsilon=1.0, delta=0.01, method="marginals").fit(records()).privacy_report
    assert report["delta"] == 0.01
    [magnitude] = report["public_inputs"]
    assert magnitude["value"] == 100 and "delta <= 1/N" in magnitude["why"]


@pytest.mark.parametrize("epsilon", [1e308, math.inf, math.nan, 0.0, -1.0, MAX_EPSILON * 1.001])
def test_an_epsilon_out_of_bounds_is_refused_by_the_config_and_the_baselines(epsilon: float) -> None:
    with pytest.raises(ConfigError, match="privacy.target_epsilon"):
        config_from_dict({"privacy": {"target_epsilon": epsilon}})
    with pytest.raises(ConfigError, match="epsilon"):
        Synthesizer(epsilon=epsilon, method="marginals").fit(records())
    with pytest.raises(ConfigError, match="epsilon"):
        fit_baseline("mwem", as_dataset(records()), epsilon=epsilon, delta=1e-3, rng=np.random.default_rng(0))


def test_the_largest_epsilon_validates() -> None:
    assert config_from_dict({"privacy": {"target_epsilon": MAX_EPSILON}}).privacy.target_epsilon == MAX_EPSILON


def test_train_refuses_a_huge_epsilon_in_one_line(tmp_path, capsys) -> None:
    code = run_cli(train_script.main, ["--config", "configs/transactions.yaml", "--no-progress",
                                       "--set", "privacy.target_epsilon=1e308", "--set", f"runs_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert code == 2 and "privacy.target_epsilon" in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("extra", [["--epsilon", "1e308"], ["--epsilon", "1", "--delta", "0.9"]])
def test_evaluate_refuses_a_baseline_budget_out_of_bounds(files, capsys, extra) -> None:  # noqa: F811
    code = run_cli(evaluate.main, ["counting", "--real", str(files["real"]), "--baseline", "marginals",
                                   "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and ("epsilon" in err or "1/N" in err)
