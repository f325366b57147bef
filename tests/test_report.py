"""privacy_report.md: the JSON report's facts in words, rounded for people."""

from __future__ import annotations

import numpy as np

from dpgm.report import summary_markdown
from dpgm.stages import STAGES

REPORT = {
    "epsilon": 0.99999967, "delta": 1e-7, "stage_epsilons": {"partition": 0.36786, "part_means": 0.65581,
                                                             "training": 0.41234},
    "dependent_bound": None, "epsilon_by_bound": {}, "fixed_seed": False,
    "public_inputs": [{"quantity": "item universe", "value": "17 items", "why": "the items file msnbc.items.tsv.gz"}],
    "plan": {"k": 10, "partition": "lloyd", "steps_taken": 200},
    "stage_lines": {name: stage.line for name, stage in STAGES.items()},  # as a run writes them
}


def test_summary_says_what_was_protected_and_explains_the_stage_sum() -> None:
    text = summary_markdown(REPORT, dataset="msnbc", version="0.1.0", commit="abc1234")
    assert "**msnbc**" in text and "epsilon = 1**" in text and "delta = 1e-07" in text
    assert "adding or removing one record" in text
    assert "| partition | split the records into 10 groups (lloyd) | 0.3679 |" in text
    assert "| training | train one generative model per group by DP-SGD (200 steps) | 0.4123 |" in text
    assert "add up to 1.436, more than the total 1" in text
    assert "item universe (17 items" in text and "dpgm 0.1.0, commit abc1234" in text
    assert "histogram" not in text  # fixed clipping: no DPNorm mechanism is mentioned


def test_a_not_private_run_says_so_first() -> None:
    text = summary_markdown({**REPORT, "warning": "NOT DIFFERENTIALLY PRIVATE: x"}, dataset="d", version="v", commit=None)
    assert text.startswith("**NOT DIFFERENTIALLY PRIVATE")


def test_one_part_and_the_empty_records_stage_read_as_words() -> None:
    report = {**REPORT, "stage_epsilons": {"empty_records": 0.08, "partition": 0.12, "part_means": 0.98},
              "plan": {"k": 1, "partition": "none", "steps_taken": 0}}
    text = summary_markdown(report, dataset="shop", version="v", commit=None)
    assert "| partition | split the records into one group (none) | 0.12 |" in text
    assert "| empty_records | count the records holding no item" in text


def test_a_stage_without_a_line_reads_as_its_name() -> None:
    report = {**REPORT, "stage_epsilons": {"partition": 0.1, "toy": 0.2}, "stage_lines": {"partition": "split"}}
    text = summary_markdown(report, dataset="d", version="v", commit=None)
    assert "| partition | split | 0.1 |" in text and "| toy | toy | 0.2 |" in text


def test_an_asymptotically_private_release_is_a_caveat_and_a_reason_not_private() -> None:
    """A Gibbs chain's event on the ledger: the JSON report lists the caveat and the reason (tests/test_verdict.py:
    its words come first)."""
    from dpgm.config import config_from_dict
    from dpgm.pipeline.plan import privacy_report
    from dpgm.privacy.accountant import Accountant
    from dpgm.privacy.events import AsymptoticExponentialEvent, GaussianEvent

    acc = Accountant(delta=1e-5)
    acc.spend("partition", AsymptoticExponentialEvent(epsilon=1.0), GaussianEvent(noise_multiplier=5.0))
    cfg = config_from_dict({"data": {"source": "digits"}, "model": {"kind": "independent"}})
    report = privacy_report(cfg, acc, np.array([10.0, 20.0]), 0, [])
    assert report["caveats"] == [AsymptoticExponentialEvent.description] and report["not_private"] == ["asymptotic"]
    plain = Accountant(delta=1e-5)
    plain.spend("partition", GaussianEvent(noise_multiplier=5.0))
    report = privacy_report(cfg, plain, np.array([10.0]), 0, [])
    assert "caveats" not in report and report["not_private"] == [] and "warning" not in report
