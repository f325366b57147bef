"""The quality report of a declared table as one self-contained HTML page.

Under the page's own not-private warning: the release's privacy (its report's verdict, epsilon and delta),
the facts, a plain-language summary, the workload error (1-, 2- and 3-way marginals), train-on-synthetic,
a table of the columns' distances and missing shares, the association heat map of every pair of columns, then one
figure per column. Built like the item report (``dpgm.quality.page``): figures embedded, style inline, nothing
external.
"""

from __future__ import annotations

import html
from pathlib import Path

from dpgm.progress import progress_scope, stage_bar
from dpgm.quality.page import STYLE, data_uri, facts_html, page_html
from dpgm.quality.table_compare import ColumnShares, TableComparison
from dpgm.quality.table_plots import association_heatmap, column_plot

TABLE_STYLE = STYLE + """
section.verdict { padding: .6em 1em; border: 2px solid; }
section.verdict.safe { background: #e8f5e9; border-color: #2e7d32; }
section.verdict.unsafe { background: #fdecea; border-color: #c62828; }
table.metrics { border-collapse: collapse; }
table.metrics th, table.metrics td { border-bottom: 1px solid #ddd; padding: .2em .8em; text-align: right; }
table.metrics th:first-child, table.metrics td:first-child { text-align: left; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(500px, 1fr)); gap: 1em; }
"""


def _num(value: float | None, digits: str = ".4f") -> str:
    return "n/a" if value is None else format(value, digits)


def table_html(head: list[str], rows: list[list[str]]) -> str:
    """A small table of numbers (escaped)."""
    e = html.escape
    lines = ["<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    lines += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
    return '<table class="metrics">' + "".join(lines) + "</table>"


def section(key: str, title: str, *body: str, css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f'<section id="{key}"{klass}><h2>{html.escape(title)}</h2>\n' + "\n".join(body) + "\n</section>"


def verdict_html(cmp: TableComparison) -> str:
    """The release's privacy, first: its verdict in words, its guarantee, where it was read."""
    e, p = html.escape, cmp.privacy
    if p.source is None:
        return section("verdict", "The release's privacy", (
            f'<p class="note">No privacy report found beside the release ({e(cmp.synthetic_name)}.privacy.json): '
            "pass --privacy runs/NAME/release/privacy_report.json.</p>"), css="verdict unsafe")
    body = [f"<p><strong>{e(p.label)}</strong>: {e(p.guarantee())}.</p>"]
    body += [] if p.headline is None else [f"<p>{e(p.headline)}</p>"]
    body.append(f'<p class="note">From {e(p.source)}. The release is what this verdict covers; this page is not '
                "private (see above).</p>")
    return section("verdict", "The release's privacy", *body, css="verdict " + ("safe" if p.safe else "unsafe"))


def summary(cmp: TableComparison) -> str:
    """The plain-language paragraph: how far the release is from the real table."""
    w = cmp.metrics.workload
    worst = max(cmp.columns, key=lambda c: c.tvd)
    text = [(f"The release has {cmp.n_synthetic:,} records; the real table {cmp.n_real:,}, over "
             f"{len(cmp.columns)} columns."),
            (f"Single columns differ by a total variation distance of {w.oneway:.3f} on average (the furthest, "
             f"{worst.name!r}, by {worst.tvd:.3f}); pairs of columns by {w.twoway:.3f}, triples by "
             f"{w.threeway:.3f}.")]
    gap = cmp.associations.mean_difference()
    if gap is not None:
        text.append(f"The association of a pair of columns (Cramér's V) differs by {gap:.3f} on average.")
    numeric = {n: d for n, d in cmp.metrics.wasserstein.items() if d is not None}
    if numeric:
        far = max(numeric, key=numeric.__getitem__)
        text.append(f"Numbers are on average {sum(numeric.values()) / len(numeric):.1%} of their range away from the "
                    f"real ones (Wasserstein distance; the furthest, {far!r}, {numeric[far]:.1%}).")
    tos = cmp.metrics.train_on_synthetic
    if tos is not None:
        text.append(f"A classifier of {tos.target!r} trained on the release scores AUC "
                    f"{_num(tos.synthetic.auc, '.3f')} (accuracy {tos.synthetic.accuracy:.3f}) on real records held "
                    f"out; trained on real records, AUC {_num(tos.real.auc, '.3f')} "
                    f"(accuracy {tos.real.accuracy:.3f}).")
    return " ".join(text)


def workload_html(cmp: TableComparison) -> str:
    m = cmp.metrics
    w = m.workload
    rows = [["1-way (single columns)", str(len(cmp.columns)), _num(w.oneway)],
            ["2-way (pairs)", str(w.n_pairs), _num(w.twoway)],
            ["3-way (triples)", str(w.n_triples), _num(w.threeway)],
            ["all", str(len(cmp.columns) + w.n_pairs + w.n_triples), _num(w.average)]]
    return section("workload", "Workload error", (
        "<p>AIM's workload error: the total variation distance between the real and the synthetic distribution "
        "of a set of columns (0: the same, 1: disjoint), averaged over the marginals, on the schema's categories "
        f"and bins (missing values a value of their own). 3-way: {html.escape(m.triples)}.</p>"),
        table_html(["marginals", "how many", "mean TVD"], rows))


def train_html(cmp: TableComparison) -> str:
    tos = cmp.metrics.train_on_synthetic
    if tos is None:
        return section("train-on-synthetic", "Train on synthetic", (
            '<p class="note">No classifier: pass --target COLUMN to train one on the release and one on real '
            "records, both tested on real records held out.</p>"))
    rows = [[side, f"{n:,}", _num(score.auc), _num(score.accuracy)]
            for side, n, score in (("the release", tos.n_train_synthetic, tos.synthetic),
                                   ("real records", tos.n_train_real, tos.real))]
    return section("train-on-synthetic", "Train on synthetic", (
        f"<p>A gradient-boosted classifier of {html.escape(repr(tos.target))} trained on each, tested on "
        f"{tos.n_test:,} real records: {html.escape(tos.holdout)}. AUC: one-vs-rest, averaged over the classes."
        "</p>"), table_html(["trained on", "records", "AUC", "accuracy"], rows))


def _rates(column: ColumnShares) -> list[str]:
    """The column's missing shares (real, synthetic) as percentages; blank where it may not hold missing values."""
    return ["", ""] if column.missing is None else [format(share, ".2%") for share in column.missing]


def columns_html(cmp: TableComparison) -> str:
    rows = [[c.name, c.codec.column.kind, _num(c.tvd), "" if c.wasserstein is None else _num(c.wasserstein),
             *_rates(c)]
            for c in cmp.columns]
    return section("columns", "Columns", (
        "<p>Each column's 1-way total variation distance on its categories and bins, for numbers the "
        "Wasserstein distance between the values within the bounds, divided by their width, and for a column "
        "that may hold missing values the share of records where it is missing, real and synthetic.</p>"),
        table_html(["column", "kind", "TVD", "Wasserstein / width", "missing (real)", "missing (synthetic)"], rows))


def associations_html(cmp: TableComparison) -> str:
    """Every pair of columns' Cramér's V, real and synthetic, and how far apart the two matrices are."""
    gap = cmp.associations.mean_difference()
    return section("associations", "Pairs of columns", (
        "<p>How strongly each pair of columns goes together: Cramér's V on the schema's categories and bins "
        "(missing values a value of their own), 0 for independent columns, 1 when one fixes the other. "
        f"Mean absolute difference between the real and the synthetic matrix, over the pairs: {_num(gap)}.</p>"),
        f'<img alt="associations" src="{data_uri(association_heatmap(cmp.associations))}">')


def figures_html(cmp: TableComparison, *, progress: bool) -> str:
    """One figure per column, in a grid (with a progress bar when asked)."""
    images = []
    with progress_scope(enabled=progress), stage_bar("report figures", len(cmp.columns), unit="fig") as bar:
        for column in cmp.columns:
            images.append(f'<img alt="{html.escape(column.name)}" src="{data_uri(column_plot(column))}">')
            bar.advance()
    return section("distributions", "Column by column", (
        "<p>Share of records per value: bars per category (the most frequent in the real data when there are many), "
        "a histogram over the declared bins between the bounds for numbers; real blue, release orange.</p>"),
        '<div class="grid">' + "".join(images) + "</div>")


def build_table_report(cmp: TableComparison, *, created: str, progress: bool = False) -> str:
    """The page of a declared table's comparison (``compare_tables``), figures drawn."""
    facts = [("real data", cmp.real_name), ("release", cmp.synthetic_name),
             ("records", f"{cmp.n_real:,} real, {cmp.n_synthetic:,} synthetic"),
             ("columns", f"{len(cmp.columns)}"), ("created", created)]
    blocks = [verdict_html(cmp), facts_html(facts),
              section("summary", "Summary", f"<p>{html.escape(summary(cmp))}</p>"), workload_html(cmp),
              train_html(cmp), columns_html(cmp), associations_html(cmp), figures_html(cmp, progress=progress)]
    return page_html(f"Quality report: {Path(cmp.synthetic_name).name}", blocks, style=TABLE_STYLE)
