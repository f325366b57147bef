"""The statistics releases' audit: each release run on two neighbours, a threshold test on its output;
a release whose noise is secretly cut tenfold is refuted, the honest one is not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgm.audit.bounds import best_threshold, distinguishing_lower_bound
from dpgm.audit.cli import main
from dpgm.audit.releases import RELEASES, ReleaseAudit, audit_release, neighbours
from dpgm.data import load_digits
from dpgm.errors import ConfigError


@pytest.fixture(scope="module")
def digits():
    return load_digits(limit=300)


@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_part_means_with_the_noise_cut_tenfold_are_refuted(digits, scale: float) -> None:
    report = audit_release(digits, ReleaseAudit(trials=300, noise_scale=scale), delta=1e-5, progress=False)
    assert report["claimed_epsilon"] == pytest.approx(1.0, abs=1e-3) and report["claimed_epsilon"] <= 1.0
    assert report["refuted"] == (scale < 1) and (report["lower_bound"] > 1.5 if scale < 1 else True)
    assert report["lower_bound"] <= report["epsilon_cap"] and ("warning" in report) == (scale < 1)


@pytest.mark.parametrize("release", ["record_lengths", "every_pair"])
def test_other_releases_without_noise_are_refuted(digits, release: str) -> None:
    data = digits.subset(np.arange(60)) if release == "every_pair" else digits
    report = audit_release(data,
                           ReleaseAudit(release=release, trials=40, noise_scale=0.0), delta=1e-5, progress=False)
    assert report["false_positives"] == report["false_negatives"] == 0 and report["refuted"]


def test_the_canary_holds_the_items_nearest_half(digits) -> None:
    null, alt = neighbours(digits, 9)
    assert alt.n_records == null.n_records + 1 and int(alt.records[-1].sum()) == 9
    means = np.asarray(null.records.mean(axis=0))
    chosen = np.flatnonzero(alt.records[-1])
    assert np.abs(means[chosen] - 0.5).max() <= np.sort(np.abs(means - 0.5))[8] + 1e-12


def test_the_bound_of_a_threshold_test() -> None:
    # no errors in 1,000 runs each: log((1 - fnr_u) / fpr_u) with fpr_u = fnr_u = 1 - 0.025^(1/1000)
    upper = 1 - 0.025 ** (1 / 1000)
    assert distinguishing_lower_bound(0, 1000, 0, 1000, 0.0) == pytest.approx(np.log((1 - upper) / upper))
    assert distinguishing_lower_bound(500, 1000, 500, 1000, 1e-5) == 0.0  # chance: nothing
    assert distinguishing_lower_bound(10, 1000, 900, 1000, 0.0) < distinguishing_lower_bound(1, 1000, 900, 1000, 0.0)
    assert best_threshold(np.linspace(0, 1, 200), np.linspace(2, 3, 200), 1e-5) == 1.0  # every run told apart
    with pytest.raises(ValueError):
        distinguishing_lower_bound(5, 4, 0, 4, 0.0)


def test_bad_plans_are_refused(digits) -> None:
    for bad in (ReleaseAudit(release="nope"), ReleaseAudit(trials=3), ReleaseAudit(epsilon=0.0),
                ReleaseAudit(length=1), ReleaseAudit(noise_scale=-1.0)):
        with pytest.raises(ConfigError):
            bad.validate()
    with pytest.raises(ConfigError, match="exceed"):
        neighbours(digits, 65)
    assert RELEASES.names() == ["every_pair", "part_means", "record_lengths"]


def test_cli_audits_a_release_and_says_not_private(tmp_path, capsys) -> None:
    out = tmp_path / "audit.json"
    code = main(["--release", "record_lengths", "--trials", "40", "--noise-scale", "0.1", "--set", "data.limit=200",
                 "--no-progress", "--threads", "1", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert text.startswith("NOT DIFFERENTIALLY PRIVATE") and "(record_lengths)" in text
    report = json.loads(out.read_text())
    assert {"claimed_epsilon", "lower_bound", "refuted", "not_private"} <= set(report) and report["trials"] == 40
