"""The figures of a declared table's quality report: one per column, real and release side by side.

A number's column is a histogram over its declared bins between its bounds (the bins the synthesizer models);
any other column is bars, one per category (the most frequent in the real data when there are many). Colours
as in ``dpgm.quality.plots``: real blue, release orange. One more figure shows every pair of columns' association,
real and release side by side on one colour scale.
"""

from __future__ import annotations

import numpy as np

from dpgm.quality.association import Associations
from dpgm.quality.plots import NAMED_TICKS, REAL, SYNTHETIC, paired_bars, pyplot, short, to_png
from dpgm.quality.table_compare import ColumnShares
from dpgm.tables.codecs import Numeric

#: A categorical column's plot shows at most this many categories, the most frequent in the real data.
MAX_BARS = 30
#: Tick labels on a numeric column's axis.
TICKS = 5
SIZE = (5.2, 2.8)


def shown_values(column: ColumnShares) -> np.ndarray:
    """The values a bar plot shows: all of them, or the MAX_BARS most frequent in the real data (in order)."""
    if len(column.labels) <= MAX_BARS:
        return np.arange(len(column.labels))
    return np.sort(np.argsort(-column.real, kind="stable")[:MAX_BARS])


def title(column: ColumnShares) -> str:
    """The column's name and kind, its 1-way TVD, its Wasserstein distance and missing shares if any."""
    parts = [f"{short(column.name, 28)} ({column.codec.column.kind})", f"TVD {column.tvd:.3f}"]
    if column.wasserstein is not None:
        parts.append(f"W/width {column.wasserstein:.3f}")
    if column.missing is not None:
        parts.append("missing {:.0%} real, {:.0%} synth.".format(*column.missing))
    return " · ".join(parts)


def category_bars(column: ColumnShares) -> bytes:
    """Share of records per category (and missing), real and synthetic side by side."""
    shown = shown_values(column)
    fig, ax = paired_bars(SIZE, column.real[shown], column.synthetic[shown], ("real", "synthetic"))
    ax.set_xticks(range(len(shown)), [short(column.labels[j], 14) for j in shown], rotation=60, ha="right",
                  fontsize=7)
    more = f", the {len(shown)} most frequent of {len(column.labels)}" if len(shown) < len(column.labels) else ""
    ax.set_title(title(column) + more, fontsize=9)
    return to_png(fig)


def bin_histogram(column: ColumnShares) -> bytes:
    """Share of records per declared bin over the column's bounds, real and synthetic as step lines."""
    codec = column.codec
    edges = codec.edges
    bins = len(edges) - 1
    fig, ax = pyplot().subplots(figsize=SIZE)
    for shares, colour, label in ((column.real, REAL, "real"), (column.synthetic, SYNTHETIC, "synthetic")):
        ax.stairs(shares[:bins], edges, color=colour, label=label, linewidth=1.5)
    ticks = np.linspace(codec.lower, codec.upper, TICKS)
    labels = [codec.text(t) for t in ticks]
    ax.set_xticks(ticks, labels, fontsize=7, rotation=20 if max(map(len, labels)) > 8 else 0)
    ax.set_ylabel("share of records")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title(column), fontsize=9)
    return to_png(fig)


def column_plot(column: ColumnShares) -> bytes:
    """The column's figure: a histogram over its bins for a number, bars per category otherwise."""
    return bin_histogram(column) if isinstance(column.codec, Numeric) else category_bars(column)


def association_heatmap(pairs: Associations) -> bytes:
    """Cramér's V of every pair of columns, real and synthetic side by side on one scale from 0 to 1 (a pair
    that cannot be measured, a column holding one value, grey)."""
    plt = pyplot()
    colours = plt.get_cmap("viridis").with_extremes(bad="0.85")
    k = len(pairs.names)
    side = min(max(3.0, 0.32 * k + 1.5), 9.0)
    fig, axes = plt.subplots(1, 2, figsize=(2 * side + 1.2, side + 0.4), layout="constrained")
    names = [short(n, 14) for n in pairs.names]
    for ax, matrix, label in zip(axes, (pairs.real, pairs.synthetic), ("real", "synthetic")):
        image = ax.imshow(np.ma.masked_invalid(matrix), cmap=colours, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(label)
        if k <= NAMED_TICKS:
            ax.set_xticks(range(k), names, rotation=90, fontsize=7)
            ax.set_yticks(range(k), names, fontsize=7)
        else:
            ax.set_xlabel("columns, in the schema's order")
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="Cramér's V")
    fig.suptitle(f"Association of every pair of columns (Cramér's V), {k} columns")
    return to_png(fig)
