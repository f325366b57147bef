"""The verdict every output opens with: not private (and why), weak, or neither; and the outputs that use it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from dpgm.commands import generate as generate_command
from dpgm.commands import train as train_command
from dpgm.privacy.accountant import Accountant
from dpgm.privacy.events import AsymptoticExponentialEvent, GaussianEvent
from dpgm.privacy.verdict import NOT_PRIVATE, REASONS, WEAK, WEAK_EPSILON, judge, stamped
from dpgm.report import summary_markdown
from tests.test_report import REPORT


def test_a_private_run_at_a_strong_guarantee_is_safe_to_share() -> None:
    verdict = judge({"epsilon": 1.0, "not_private": []})
    assert verdict.headline is None and verdict.reasons == [] and verdict.label == "safe to share"


@pytest.mark.parametrize("key", ["seeded", "diagnostics", "asymptotic", "real_data"])
def test_each_reason_opens_the_headline_and_is_never_safe_to_share(key) -> None:
    verdict = judge({"epsilon": 1.0, "not_private": [key]})
    assert verdict.headline == f"{NOT_PRIVATE}: {REASONS[key]}" and "safe to share" not in verdict.label


def test_a_reason_dpgm_does_not_know_still_makes_it_not_private() -> None:
    """A flag another part adds (a run whose noise was scaled for an audit) is one more key."""
    verdict = judge({"epsilon": 1.0, "not_private": ["weakened_noise"]})
    assert not verdict.private and verdict.headline == f"{NOT_PRIVATE}: weakened_noise"


def test_an_epsilon_above_the_threshold_is_weak_and_not_safe_to_share() -> None:
    assert judge({"epsilon": WEAK_EPSILON}).headline is None
    weak = judge({"epsilon": 9901.0, "not_private": []})
    assert weak.headline.startswith(f"{WEAK}: epsilon = 9901 is above 10") and "safe" not in weak.label
    both = judge({"epsilon": 20.0, "not_private": ["seeded"]})
    assert both.headline.startswith(NOT_PRIVATE) and "epsilon = 20 is above 10" in both.headline


def test_stamped_puts_the_verdict_first_and_is_idempotent() -> None:
    report = stamped({"epsilon": 2.0, "delta": 1e-5, "not_private": ["asymptotic"]}, ["seeded"])
    assert list(report)[:2] == ["warning", "not_private"] and report["not_private"] == ["asymptotic", "seeded"]
    assert stamped(report) == report
    assert list(stamped({"epsilon": 1.0})) == ["not_private", "epsilon"]


def test_a_report_written_before_it_listed_reasons_keeps_its_warning() -> None:
    old = {"warning": f"{NOT_PRIVATE}: this run showed non-private diagnostics", "epsilon": 1.0}
    assert judge(old).headline == old["warning"] and not judge(old).private
    assert judge({"fixed_seed": True, "epsilon": 1.0}).not_private == ("seeded",)


def test_the_accountant_reports_an_asymptotic_event_as_not_private() -> None:
    acc = Accountant(delta=1e-5)
    acc.spend("partition", GaussianEvent(noise_multiplier=5.0))
    assert acc.report()["not_private"] == []
    acc.spend("partition", AsymptoticExponentialEvent(epsilon=1.0))
    assert acc.report()["not_private"] == ["asymptotic"]


# ---------------------------------------------------------------- the outputs


def gibbs_report() -> dict:
    """The report of a run whose partition is the Gibbs subspace solver (asymptotically private)."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.plan import privacy_report

    acc = Accountant(delta=1e-5)
    acc.spend("partition", AsymptoticExponentialEvent(epsilon=1.0), GaussianEvent(noise_multiplier=5.0))
    cfg = config_from_dict({"data": {"source": "digits"}, "model": {"kind": "independent"}})
    return privacy_report(cfg, acc, np.array([10.0, 20.0]), 0, [])


def test_an_asymptotic_run_says_not_private_first_in_json_and_words() -> None:
    report = gibbs_report()
    assert next(iter(report)) == "warning" and report["warning"].startswith(NOT_PRIVATE)
    assert report["not_private"] == ["asymptotic"]
    text = summary_markdown(report, dataset="d", version="v", commit=None)
    assert text.splitlines()[0] == f"**{report['warning']}**"
    assert "Formally it is" not in text and "is not differentially private as claimed" in text


def test_a_weak_run_says_so_first_in_words() -> None:
    text = summary_markdown(stamped({**REPORT, "epsilon": 50.0}), dataset="d", version="v", commit=None)
    assert text.startswith(f"**{WEAK}: epsilon = 50") and "a weak guarantee" in text


def printed_by_train(report: dict, capsys) -> list[str]:
    train_command._print(argparse.Namespace(summary=False), Path("runs/x"), report)
    return capsys.readouterr().out.splitlines()


def test_train_prints_the_verdict_first_and_safe_to_share_only_when_it_is(capsys) -> None:
    lines = printed_by_train(gibbs_report(), capsys)
    assert lines[0].startswith(NOT_PRIVATE) and "asymptotically" in lines[0]
    assert not any("safe to share" in line for line in lines)
    lines = printed_by_train(stamped({**REPORT, "epsilon": 9901.0, "delta": 1e-7, "neighbouring": "add_remove"}),
                             capsys)
    assert lines[0].startswith(WEAK) and not any("safe to share" in line for line in lines)
    lines = printed_by_train(stamped({**REPORT, "neighbouring": "add_remove"}), capsys)
    assert lines[0].startswith("release (safe to share)")


def test_generate_prints_the_run_verdict_first(tmp_path, capsys) -> None:
    """A release whose report is a Gibbs run's: generate's stdout and OUT.privacy.json open with it."""
    from dpgm.cli import run_cli
    from dpgm.pipeline import run as run_mod
    from tests.training.test_run import tiny_config

    run_dir, _ = run_mod.train(tiny_config(tmp_path, seed="null"), progress=False)
    report_path = run_dir / "release" / "privacy_report.json"
    report = json.loads(report_path.read_text())
    assert "warning" not in report and report["not_private"] == []
    report_path.write_text(json.dumps({**report, "not_private": ["asymptotic"]}))
    out = tmp_path / "syn.csv"
    code = run_cli(generate_command.main, ["--run", str(run_dir), "--n", "5", "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0 and printed[0].startswith(NOT_PRIVATE) and "asymptotically" in printed[0]
    beside = json.loads(Path(f"{out}.privacy.json").read_text())
    assert next(iter(beside)) == "warning" and beside["warning"] == printed[0]


def test_the_python_release_report_carries_the_verdict(tmp_path) -> None:
    from dpgm.api.release import Release

    release = Release(report={"epsilon": 12.0, "not_private": []}, item_names=["a"])
    assert release.privacy_report["warning"].startswith(WEAK)
