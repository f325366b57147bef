"""The quality report as one self-contained HTML page: warning, summary, one section per figure.

Figures are embedded as base64 PNG data URIs and the style sheet is inline, so the single
file can be mailed or archived and opens offline. The summary is one plain-language
paragraph computed from the numbers. The page opens with the warning that computing it
looked at the real data: it is for the custodian, not for publication.
"""

from __future__ import annotations

import base64
import datetime
import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpgm.io import atomic_write_text
from dpgm.progress import progress_scope, stage_bar
from dpgm.quality import plots
from dpgm.quality.compare import Comparison

NOT_PRIVATE = ("This page compares the release with the real data. Computing it is not differentially "
               "private: keep it with the data custodian, do not publish it.")

EMPTY_GAP = 0.01  # the summary mentions empty records when their shares differ by more than this

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; color: #222; }
.warning { background: #fff3cd; border: 2px solid #d39e00; padding: .8em 1em; font-weight: 600; }
table.facts td { padding: .1em 1em .1em 0; }
section { margin-top: 2em; }
img { max-width: 100%; border: 1px solid #ddd; }
p.note { color: #555; font-style: italic; }
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: a heading, a caption, and a figure or a note saying why there is none."""

    key: str
    title: str
    caption: str
    png: bytes | None = None


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _pct(value: float) -> str:
    """A share as a percentage with two significant digits: 0.0123 -> 1.2%, 0.25 -> 25%."""
    return f"{100 * value:.2g}%" if value < 0.1 else f"{100 * value:.0f}%"


def _closeness(error: float) -> str:
    """Words for a mean relative error."""
    if error < 0.02:
        return "very close"
    return "close" if error < 0.1 else "far off"


def summary(cmp: Comparison) -> str:
    """The plain-language paragraph: how far the release is from the real data, statistic by statistic."""
    err = cmp.freq_error()
    worst = int(np.argmax(np.abs(err)))
    cooc, corr = cmp.pair_errors()
    groups = sorted(cmp.query_errors)
    first, last = cmp.query_errors[groups[0]], cmp.query_errors[groups[-1]]
    lengths = np.arange(len(cmp.lengths_real))
    text = [
        f"The release has {cmp.n_synthetic:,} records; the real data {cmp.n_real:,}, over {cmp.n_items:,} items.",
        (f"Item frequencies (the share of records holding an item) match within {np.abs(err).mean():.2g} on "
         f"average; the largest gap is {cmp.item_names[worst]!r}: {cmp.freq_real[worst]:.3g} real, "
         f"{cmp.freq_synthetic[worst]:.3g} synthetic."),
    ]
    if np.isfinite(cooc):
        among = (f"all {cmp.n_items} items" if len(cmp.shown) == cmp.n_items
                 else f"the {len(cmp.shown)} most frequent items")
        text.append(f"Among {among}, the share of records holding a pair differs by {cooc:.2g} on average and the "
                    f"pairs' correlations by {corr:.2f}.")
    text.append(f"Records hold {cmp.lengths_real @ lengths:.2f} items on average in the real data and "
                f"{cmp.lengths_synthetic @ lengths:.2f} in the release (total variation distance of the "
                f"length distributions {cmp.length_tvd():.3f}).")
    if abs(cmp.lengths_synthetic[0] - cmp.lengths_real[0]) > EMPTY_GAP:
        text.append(f"Empty records: {_pct(cmp.lengths_real[0])} of the real data, "
                    f"{_pct(cmp.lengths_synthetic[0])} of the release.")
    text.append(f"Counting queries (how many records hold at least one of a set of items) err by {_pct(first)} "
                f"on average for the shortest queries (1..{cmp.group_max_lengths[groups[0]]} items) and by "
                f"{_pct(last)} for the longest (1..{cmp.group_max_lengths[groups[-1]]} items): "
                f"{_closeness(max(first, last))}.")
    if cmp.has_labels:
        gap = float(np.abs(cmp.label_share_synthetic - cmp.label_share_real).max())
        text.append(f"Label shares differ by at most {gap:.2g}.")
    return " ".join(text)


def label_note(cmp: Comparison) -> str:
    """Why there are no per-label counts: which side has no labels."""
    missing = [side for side, has in zip(("the real data", "the release"), cmp.labelled) if not has]
    return f"No per-label counts: {' and '.join(missing)} {'have' if len(missing) > 1 else 'has'} no label column."


def sections(cmp: Comparison, *, progress: bool) -> list[Section]:
    """Every section of the page, figures drawn (with a progress bar when asked)."""
    limited = (f" Only the {len(cmp.shown)} items most frequent in the real data are shown, of {cmp.n_items}."
               if len(cmp.shown) < cmp.n_items else "")
    plan: list[tuple[str, str, str, Callable[[], bytes] | None]] = [
        ("frequencies", "Item frequencies",
         ("One dot per item: its share of records in the real data (x) and in the release (y). "
          "On the grey diagonal they match; the items furthest from it are named."),
         lambda: plots.frequency_scatter(cmp)),
        ("lengths", "Record lengths", "Share of records holding 0, 1, 2, ... items.",
         lambda: plots.length_histograms(cmp)),
        ("cooccurrence", "Pairwise co-occurrence",
         ("Share of records holding both items of a pair (the diagonal, the items' own frequencies, is "
          "left blank: see above); real, release, and their difference." + limited),
         lambda: plots.pair_matrices(cmp, "cooc")),
        ("correlation", "Pairwise correlation",
         ("Phi correlation of each pair of items (each item a 0/1 variable); real, release, and their "
          "difference." + limited), lambda: plots.pair_matrices(cmp, "corr")),
        ("queries", "Counting queries",
         (f"{cmp.n_queries} random item sets in {len(cmp.query_errors)} length groups (DPGM paper, section 6.3); "
          "a query counts the records holding at least one of its items. Relative error: "
          "|synthetic count scaled to the real size − real count| / max(real count, 0.1% of the real records)."),
         lambda: plots.query_errors(cmp)),
    ]
    if cmp.image_shape is not None:
        h, w = cmp.image_shape
        plan.append(("images", "Image samples", f"Random {h}x{w} records, real (left) and synthetic (right).",
                     lambda: plots.sample_grid(cmp)))
    else:
        plan.append(("images", "Image samples", "Not image data: no sample grid.", None))
    if cmp.has_labels:
        plan.append(("labels", "Per-label counts", "Share of records per label.", lambda: plots.label_counts(cmp)))
    else:
        plan.append(("labels", "Per-label counts", label_note(cmp), None))
    parts = []
    with progress_scope(enabled=progress), stage_bar("report figures", len(plan), unit="fig") as bar:
        for key, title, caption, draw in plan:
            parts.append(Section(key, title, caption, draw() if draw else None))
            bar.advance()
    return parts


def section_html(part: Section) -> str:
    """One section: its heading, then its figure under its caption, or the caption as a note."""
    e = html.escape
    body = (f'<p class="note">{e(part.caption)}</p>' if part.png is None else
            f'<p>{e(part.caption)}</p>\n<img alt="{e(part.title)}" src="{data_uri(part.png)}">')
    return f'<section id="{part.key}"><h2>{e(part.title)}</h2>\n{body}\n</section>'


def facts_html(facts: list[tuple[str, str]]) -> str:
    """The table of facts under the heading (what was compared, when)."""
    e = html.escape
    return '<table class="facts">' + "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in facts) + "</table>"


def page_html(title: str, blocks: list[str], *, style: str = STYLE) -> str:
    """The whole page: the not-private warning first, the heading, then ``blocks`` (HTML) in order."""
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(title)}</title>",
           f"<style>{style}</style></head><body>", f'<p class="warning" id="not-private">{e(NOT_PRIVATE)}</p>',
           "<h1>Quality report</h1>", *blocks, "</body></html>"]
    return "\n".join(out) + "\n"


def render(cmp: Comparison, parts: list[Section], *, created: str) -> str:
    """The HTML page."""
    facts = [("real data", cmp.real_name), ("release", cmp.synthetic_name),
             ("records", f"{cmp.n_real:,} real, {cmp.n_synthetic:,} synthetic"),
             ("items", f"{cmp.n_items:,}"), ("created", created)]
    blocks = [facts_html(facts), f'<section id="summary"><h2>Summary</h2><p>{html.escape(summary(cmp))}</p></section>',
              *(section_html(part) for part in parts)]
    return page_html(f"Quality report: {Path(cmp.synthetic_name).name}", blocks)


def created_now() -> str:
    """When the page was made (UTC, to the minute)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def build_report(cmp: Comparison, *, progress: bool = False) -> str:
    """The report's HTML page for a comparison (``compare(real, synthetic)``), figures drawn."""
    return render(cmp, sections(cmp, progress=progress), created=created_now())


def write_report(out: str | Path, page: str) -> None:
    """Write the page atomically: never a half-written report under its final name."""
    atomic_write_text(out, page)
