"""The privacy report for people: privacy_report.md beside privacy_report.json (same facts, in words).

The verdict's headline first when there is one (not private and why, or a weak guarantee), then
one plain paragraph (what was protected, the guarantee, the neighbouring relation, epsilon,
delta), one row per stage the plan used, why the stages' own epsilons add up to more than the
total, what was treated as public, and where the numbers came from. Numbers are rounded to 4
significant digits; the JSON keeps them exact.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import subprocess
from pathlib import Path
from typing import Any

from dpgm.privacy.verdict import WEAK_EPSILON, Verdict, judge


def release_markdown(release: dict[str, Any]) -> str:
    """A section on one release of synthetic records (the ``release`` entry of its privacy JSON)."""
    rule = (f" Records with fewer than {release['min_items']} items were drawn again (data.min_items)."
            if release.get("min_items") else "")
    seed = "a fixed sampling seed" if release.get("sampling_seed_fixed") else "sampling noise from OS randomness"
    return "\n".join([
        "## This release", "",
        (f"{release['records']} synthetic records ({release['format']}), drawn from the trained models with "
         f"{seed}. Drawing from the released models is post-processing: it costs no privacy beyond the "
         f"run's epsilon above.{rule}{_labels_sentence(release)}"),
    ]) + "\n"


def _labels_sentence(release: dict[str, Any]) -> str:
    """What a release by label says about its labels (empty for a run not partitioned by label)."""
    drawn = release.get("labels")
    if not drawn:
        return ""
    names = ", ".join(map(str, drawn["labels"]))
    how = (f"{release['per_label']} records of each" if release.get("per_label")
           else "in proportion to the noisy label histogram (the run's noisy part sizes)")
    column = f" The label is the last column, {drawn['column']!r}." if drawn.get("column") else ""
    return f" Labels {names}: {how}.{column}"


def dpgm_version() -> tuple[str, str | None]:
    """dpgm's version and, in a git checkout, its commit."""
    try:
        version = importlib.metadata.version("dpgm")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, check=False, timeout=5)
        commit = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return version, commit


def _num(x: float) -> str:
    return f"{x:.4g}"


def summary_markdown(report: dict[str, Any], *, dataset: str, version: str, commit: str | None) -> str:
    """The markdown text of a run's privacy report (``report``: privacy_report.json's content)."""
    plan = report.get("plan", {})
    verdict = judge(report)
    lines = [] if verdict.headline is None else [f"**{verdict.headline}**", ""]
    lines += ["# Privacy report", "", _guarantee(report, verdict, dataset), "",
              "| stage | what it did | epsilon on its own |", "|---|---|---|"]
    k = plan.get("k", "?")
    words = {"k": k, "groups": "one group" if k == 1 else f"{k} groups", "method": plan.get("partition", "?"),
             "steps": plan.get("steps_taken", "?")}
    for stage, eps in report["stage_epsilons"].items():
        line = report.get("stage_lines", {}).get(stage, stage)  # each stage's own words (dpgm.stages)
        lines.append(f"| {stage} | {line.format(**words)} | {_num(eps)} |")
    lines += [
        "",
        (f"The stages' own epsilons add up to {_num(sum(report['stage_epsilons'].values()))}, more than the "
        f"total {_num(report['epsilon'])}: privacy losses compose more tightly in Renyi differential privacy "
        "than by adding epsilons, and the total is what the whole run guarantees."),
    ]
    if report.get("dependent_bound"):
        by_bound = ", ".join(f"{b} {_num(e)}" for b, e in report["epsilon_by_bound"].items())
        lines += ["", (f"Each DP-SGD step released a noisy clipping histogram and a noisy gradient from one "
                      f"batch; they were analysed together ({report['dependent_bound']} bound; by bound: {by_bound}).")]
    if report.get("rules"):
        lines += ["", report["rules"]]
    if report.get("dependence"):  # released: the measurement and which way it fell
        lines += ["", _dependence_words(report["dependence"])]
    public = report.get("public_inputs", [])
    if public:
        lines += ["", "Treated as public (not protected): " + "; ".join(
            f"{p['quantity']} ({p['value']}, {p['why']})" for p in public) + "."]
    lines += ["", (f"dpgm {version}, commit {commit or 'unknown'}, "
                  f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}; "
                  f"{'a fixed seed (an experiment)' if report.get('fixed_seed') else 'noise from OS randomness'}. "
                  "Exact values: privacy_report.json.")]
    return "\n".join(lines) + "\n"


#: What a group's model was where the measured dependence chose no tree, by the configured kind (default: DP-SGD's).
INSTEAD_OF_TREE = {"independent": "independent items at its noisy means, which took the tree's budget"}


def _guarantee(report: dict[str, Any], verdict: Verdict, dataset: str) -> str:
    """The opening paragraph: what the release guarantees, or why it is not what its epsilon says."""
    figures = (f"**epsilon = {_num(report['epsilon'])}** and **delta = {report['delta']:.3g}**, for neighbouring "
               "datasets that differ by adding or removing one record, accounted with Renyi differential privacy "
               "(the moments accountant) over every step that touched the data")
    if not verdict.private:
        return (f"This release was made from **{dataset}**, and it is not differentially private as claimed "
                f"(the first line says why). The accounting, {figures}, is what the run would guarantee without that.")
    weak = (f" That is a weak guarantee: epsilon is above {WEAK_EPSILON:g}, where the factor e^epsilon "
            "promises little." if verdict.weak else "")
    return (f"This release was made from **{dataset}** so that it reveals little about any one person: whether or "
            "not someone's record was in the data, every output of the run is almost equally likely. Formally it "
            f"is (epsilon, delta)-differentially private with {figures}.{weak}")


def _dependence_words(dep: dict[str, Any]) -> str:
    """Which way the measured dependence fell against merge_below and tree_above, in one sentence."""
    ways = []
    if dep["merge_below"] > 0:
        ways.append(f"{'below' if dep['parts_merged'] else 'not below'} merge_below = {dep['merge_below']:g}: the "
                    f"records formed {'one group' if dep['parts_merged'] else 'their groups'}")
    if dep.get("tree_above", 0) > 0:
        chosen = dep["tree_chosen"]
        otherwise = INSTEAD_OF_TREE.get(dep.get("otherwise", ""), "trained by DP-SGD")
        ways.append(f"{'at or above' if chosen else 'below'} tree_above = {dep['tree_above']:g}: each group's model "
                    f"was {'a tree of items' if chosen else otherwise} (the run is charged the costlier "
                    "of the two at every RDP order)")
    return (f"The items' measured dependence was {dep['per_record_and_edge']:.4f} per record and edge (noisy), "
            + "; ".join(ways) + ".")
