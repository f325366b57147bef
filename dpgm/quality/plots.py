"""The quality report's figures, each drawn from a Comparison and returned as PNG bytes.

matplotlib (Agg backend, no display) is imported inside the functions: a command line that
only validates its arguments never pays for it. Real data is blue, the release orange,
differences are synthetic minus real on a red-blue scale centred at zero.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from dpgm.quality.compare import Comparison

REAL, SYNTHETIC = "#4c72b0", "#dd8452"
NAMED_TICKS = 25  # matrices of at most this many items get item names on their axes
LOG_SCALE_ITEMS = 100  # frequency scatter on log axes above this many items
LABELLED_OUTLIERS = 5  # items named in the frequency scatter
STEPS_ABOVE = 40  # side-by-side histograms with more bars than this are drawn as step lines


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def to_png(fig: Any) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    pyplot().close(fig)
    return buf.getvalue()


def short(name: str, width: int = 18) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def frequency_scatter(cmp: Comparison) -> bytes:
    """Each item's frequency in the release against the real data; the diagonal is a perfect match."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 5))
    x, y = cmp.freq_real, cmp.freq_synthetic
    log = cmp.n_items > LOG_SCALE_ITEMS
    if log:  # absent items at a floor below the smallest frequency, so they stay visible
        positive = np.concatenate([x[x > 0], y[y > 0]])
        floor = positive.min() / 2 if positive.size else 1e-6
        x, y = np.maximum(x, floor), np.maximum(y, floor)
        ax.set_xscale("log")
        ax.set_yscale("log")
    top = max(float(x.max()), float(y.max())) * 1.05
    low = min(float(x.min()), float(y.min())) if log else 0.0
    ax.plot([low, top], [low, top], color="0.6", lw=1, zorder=1)
    ax.scatter(x, y, s=14 if cmp.n_items <= 1000 else 4, color=SYNTHETIC, alpha=0.7, zorder=2)
    for j in np.argsort(-np.abs(cmp.freq_error()))[:LABELLED_OUTLIERS]:
        ax.annotate(short(cmp.item_names[j]), (x[j], y[j]), fontsize=7, xytext=(4, -2), textcoords="offset points")
    ax.set_xlabel("real frequency (fraction of records)")
    ax.set_ylabel("synthetic frequency")
    ax.set_title(f"Item frequencies ({cmp.n_items} items{', log scale' if log else ''})")
    return to_png(fig)


def paired_bars(size: tuple[float, float], real: np.ndarray, synthetic: np.ndarray,
                labels: tuple[str, str]) -> tuple[Any, Any]:
    """(figure, axes) with a real and a synthetic bar side by side at x = 0, 1, ...

    Past STEPS_ABOVE bars, two step lines instead: thin bars would be unreadable.
    """
    fig, ax = pyplot().subplots(figsize=size)
    where = np.arange(len(real))
    if len(real) > STEPS_ABOVE:
        ax.step(where, real, where="mid", color=REAL, label=labels[0])
        ax.step(where, synthetic, where="mid", color=SYNTHETIC, label=labels[1])
    else:
        ax.bar(where - 0.2, real, width=0.4, color=REAL, label=labels[0])
        ax.bar(where + 0.2, synthetic, width=0.4, color=SYNTHETIC, label=labels[1])
    ax.set_ylabel("share of records")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig, ax


def length_histograms(cmp: Comparison) -> bytes:
    """Share of records of each length (number of items), real and synthetic side by side."""
    fig, ax = paired_bars((8, 3.5), cmp.lengths_real, cmp.lengths_synthetic,
                          (f"real\n{cmp.n_real:,} records", f"synthetic\n{cmp.n_synthetic:,} records"))
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("record length (items per record)")
    ax.set_title(f"Record lengths (total variation distance {cmp.length_tvd():.3f})")
    return to_png(fig)


def pair_matrices(cmp: Comparison, which: str) -> bytes:
    """Real, synthetic and their difference, side by side: ``which`` is "cooc" or "corr"."""
    plt = pyplot()
    real, synthetic = (getattr(pairs, which).copy() for pairs in (cmp.pairs_real, cmp.pairs_synthetic))
    for matrix in (real, synthetic):  # pairs only: the diagonal (frequencies) would swamp the scale
        np.fill_diagonal(matrix, np.nan)
    diff = synthetic - real
    names = [short(cmp.item_names[j], 14) for j in cmp.shown]
    if which == "corr":
        scale = {"cmap": "RdBu_r", "vmin": -1.0, "vmax": 1.0}
        title = "correlation (phi)"
    else:
        top = max(np.nanmax(real), np.nanmax(synthetic)) if real.size > 1 else 0.0
        scale = {"cmap": "viridis", "vmin": 0.0, "vmax": max(float(top), 1e-12)}
        title = "co-occurrence (share of records holding both)"
    bound = max(float(np.nanmax(np.abs(diff))) if np.isfinite(diff).any() else 0.0, 1e-12)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.6), layout="constrained")
    panels = [(real, "real", scale), (synthetic, "synthetic", scale),
              (diff, "synthetic − real", {"cmap": "RdBu_r", "vmin": -bound, "vmax": bound})]
    for ax, (matrix, label, style) in zip(axes, panels):
        image = ax.imshow(matrix, interpolation="nearest", **style)
        fig.colorbar(image, ax=ax, shrink=0.8)
        ax.set_title(label)
        if len(names) <= NAMED_TICKS:
            ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
            ax.set_yticks(range(len(names)), names, fontsize=7)
        else:
            ax.set_xlabel("items, most frequent first")
    fig.suptitle(f"Pairwise {title}, {len(names)} items")
    return to_png(fig)


def query_errors(cmp: Comparison) -> bytes:
    """Mean relative error of the counting queries per length group (the paper's Fig. 5 rows)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    groups = sorted(cmp.query_errors)
    ax.bar([f"1..{cmp.group_max_lengths[g]}" for g in groups], [cmp.query_errors[g] for g in groups], color=SYNTHETIC)
    ax.set_xlabel("query length (items per query), by group")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("mean relative error")
    ax.set_title(f"Counting queries ({cmp.n_queries} random item sets)")
    return to_png(fig)


def sample_grid(cmp: Comparison) -> bytes:
    """Random real images beside random synthetic ones."""
    from dpgm.imaging import image_grid  # pulls in torch: only for image data

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4))
    for ax, samples, label in ((axes[0], cmp.samples_real, "real"), (axes[1], cmp.samples_synthetic, "synthetic")):
        ax.imshow(image_grid(samples, nrow=8), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"{label}: {len(samples)} random records")
        ax.axis("off")
    return to_png(fig)


def label_counts(cmp: Comparison) -> bytes:
    """Share of records per label, real and synthetic side by side."""
    fig, ax = paired_bars((7, 3.5), cmp.label_share_real, cmp.label_share_synthetic, ("real", "synthetic"))
    ax.set_xticks(range(len(cmp.label_values)), [str(v) for v in cmp.label_values])
    ax.set_xlabel("label")
    ax.set_title("Records per label")
    return to_png(fig)
