"""dpgm.Synthesizer under scikit-learn's estimator checks (``sklearn.utils.estimator_checks``).

Every check runs on ``Synthesizer(method="marginals")``, the quickest fit (one noisy count per
item, a fraction of a second): a synthesizer is no classifier, regressor or transformer, so only
the API and general checks apply. A check that fits random real numbers cannot pass, since a
synthesizer fits 0/1 records and refuses anything else; each such check is listed with its
reason and the text its failure must show, so the list cannot go stale or hide another failure.
What those checks would test on a fit is tested on 0/1 records below.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import check_estimator
from sklearn.utils.validation import check_is_fitted

from dpgm.api import NotFittedError, Synthesizer

#: Why a check fails, and the text the failure (or what caused it) shows.
BINARY = ("it fits random real numbers; a synthesizer fits 0/1 records and refuses others (DataError)",
          "records must be binary")
EMPTY = (("it expects a ValueError for zero records, which the marginals baseline fits (a release of noise "
          "only): refusing them would tell whoever reads the error whether n is 0, a fact about the private "
          "data; zero items are a DataError"), "empty data")
NOT_A_PARAMETER = (("it passes a value to every name of the signature, **unknown too; a keyword that is not a "
                    "parameter is a TypeError naming options="), "go in options=")
EXPECTED = {
    **dict.fromkeys([
        "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_complex_data",
        "check_dtype_object", "check_estimator_sparse_tag", "check_estimator_sparse_array",
        "check_estimator_sparse_matrix", "check_estimators_pickle", "check_f_contiguous_array_estimator",
        "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
        "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
        "check_estimators_nan_inf",
    ], BINARY),
    "check_estimators_empty_data_messages": EMPTY,
    "check_do_not_raise_errors_in_init_or_set_params": NOT_A_PARAMETER,
}
#: Checks that skip themselves: fits draw fresh noise, and array API input needs SCIPY_ARRAY_API.
SKIPPED = {"check_pipeline_consistency", "check_array_api_input"}


def records(n: int = 300, m: int = 6) -> np.ndarray:
    return (np.random.default_rng(0).random((n, m)) < 0.3).astype(np.uint8)


def messages(exc: BaseException | None) -> str:
    """The text of ``exc`` and of every exception it was raised from."""
    out = []
    while exc is not None:
        out.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " | ".join(out)


def test_scikit_learn_estimator_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Synthesizer(method="marginals"), on_fail=None,
                                  expected_failed_checks={name: why for name, (why, _) in EXPECTED.items()})
    seen = {r["check_name"]: r for r in results}
    assert set(EXPECTED) <= set(seen), sorted(set(EXPECTED) - set(seen))
    for r in results:
        name, status = r["check_name"], r["status"]
        if name in EXPECTED:
            assert status == "xfail" and EXPECTED[name][1] in messages(r["exception"]), (name, messages(r["exception"]))
        else:
            assert status == ("skipped" if name in SKIPPED else "passed"), (name, status, messages(r["exception"]))
    assert sum(r["status"] == "passed" for r in results) >= 10


def test_a_fit_on_binary_records_follows_the_estimator_rules():
    """What the checks above cannot reach: fit on 0/1 records returns self, leaves the
    parameters as they were, sets only attributes ending in _, and the fitted synthesizer
    pickles; y is taken (a Pipeline passes it) and not used."""
    x = records()
    synth = Synthesizer(method="marginals", options={"mechanism": "laplace"})
    params, before = copy.deepcopy(synth.get_params()), set(vars(synth))
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(synth)
    with pytest.raises(SklearnNotFittedError, match="not fitted yet"):
        synth.sample(5)
    assert synth.fit(x, np.arange(len(x))) is synth
    check_is_fitted(synth)
    assert synth.get_params() == params and synth.n_features_in_ == x.shape[1]
    assert all(name.endswith("_") for name in set(vars(synth)) - before)
    again = pickle.loads(pickle.dumps(synth))
    np.testing.assert_array_equal(again.sample(20, seed=1), synth.sample(20, seed=1))
    assert not hasattr(clone(synth), "release_") and issubclass(NotFittedError, SklearnNotFittedError)
    fitted = Pipeline([("synth", Synthesizer(method="marginals"))]).fit(x, np.zeros(len(x)))
    assert fitted.named_steps["synth"].sample(4).shape == (4, x.shape[1])


@pytest.mark.parametrize("value", [-1, 3.0, "helloworld", np.array([1.0, 4.0]), [1], {}, []])
def test_init_and_set_params_take_any_value_of_each_parameter(value):
    """The constructor and set_params store what they get (fit checks it), as scikit-learn's
    check_do_not_raise_errors_in_init_or_set_params asks, for every parameter's name."""
    params = dict.fromkeys(Synthesizer._get_param_names(), value)
    synth = Synthesizer(**params)
    assert synth.set_params(**params) is synth and all(v is value for v in synth.get_params().values())
