"""The headline's figures, drawn from the sweep's JSON (``rules_sweep.json``) into docs/img/results/.

Each figure draws only numbers the JSON holds: per setting, each method's 2-way marginal TVD, and per
length group each method's mean relative error on the held-out counting queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

#: The methods the figures draw, in order: (key in a sweep cell, label, colour, line style).
METHODS = (("dpgm", "dpgm (generic rules)", "C0", "-"), ("mst", "MST", "C1", "--"),
           ("mwem_pgm", "MWEM+PGM", "C2", "--"), ("aim", "AIM", "C3", "--"),
           ("marginals", "independent marginals", "C7", ":"))


def of(cell: dict[str, Any], who: str) -> dict[str, Any]:
    """One method's figures in a sweep cell: the rules' own, the marginals' or a peer's."""
    return cell if who == "dpgm" else cell["marginals"] if who == "marginals" else cell["peers"].get(who, {})


def setting_label(cell: dict[str, Any]) -> str:
    """'msnbc, 30,000' or 'msnbc, whole (494,909)': the dataset and the records fitted."""
    size = "whole" if cell["size"] == "full" else f"{cell['n_fit']:,}"
    return f"{cell['dataset']}, {size}" + (f" ({cell['n_fit']:,})" if cell["size"] == "full" else "")


def save(fig: Any, path: Path) -> Path:
    """Write a PNG without a timestamp or version in it, so the same JSON gives the same file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def overview(cells: Sequence[dict[str, Any]], path: Path) -> Path:
    """Every setting's 2-way marginal TVD, one row per setting and one marker per method, per epsilon."""
    epsilons = sorted({c["epsilon"] for c in cells})
    fig, axes = plt.subplots(1, len(epsilons), figsize=(4.4 * len(epsilons), 5.6), squeeze=False, sharey=True)
    for ax, eps in zip(axes[0], epsilons, strict=True):
        here = [c for c in cells if c["epsilon"] == eps][::-1]
        for who, label, colour, _ in METHODS:
            points = [(of(c, who).get("tvd2"), y) for y, c in enumerate(here) if of(c, who).get("tvd2") is not None]
            ax.plot([x for x, _ in points], [y for _, y in points], "o" if who == "dpgm" else "x", color=colour,
                    label=label, markersize=7 if who == "dpgm" else 5)
        ax.set_yticks(range(len(here)), [setting_label(c) for c in here], fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel("2-way marginal TVD (lower is better)", fontsize=9)
        ax.set_title(f"epsilon {eps:g}", fontsize=10)
        ax.grid(axis="x", which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return save(fig, path)


def dataset_errors(cells: Sequence[dict[str, Any]], dataset: str, path: Path) -> Path:
    """One dataset: per size (columns) and epsilon (rows), each method's mean relative error per length group."""
    mine = [c for c in cells if c["dataset"] == dataset]
    sizes = list(dict.fromkeys(c["size"] for c in mine))
    epsilons = sorted({c["epsilon"] for c in mine})
    width, height = 3.4 * len(sizes) + 0.6, 2.7 * len(epsilons)
    columns = min(len(METHODS), max(2, int(width // 1.7)))  # legend entries a row: as many as fit the width
    legend_rows = -(-len(METHODS) // columns)
    fig, axes = plt.subplots(len(epsilons), len(sizes), figsize=(width, height + 0.25 * legend_rows), squeeze=False,
                             sharex=True)
    for i, eps in enumerate(epsilons):
        for j, size in enumerate(sizes):
            ax = axes[i][j]
            cell = next(c for c in mine if c["epsilon"] == eps and c["size"] == size)
            for who, label, colour, style in METHODS:
                if of(cell, who).get("groups"):
                    ax.plot(range(1, 6), of(cell, who)["groups"], style, marker="o", markersize=3, color=colour,
                            label=label)
            ax.set_yscale("log")
            ax.set_title(f"{setting_label(cell)}, epsilon {eps:g}", fontsize=9)
            ax.set_xticks(range(1, 6))
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_ylabel("mean relative error", fontsize=8)
            if i == len(epsilons) - 1:
                ax.set_xlabel("query length group", fontsize=8)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=columns, fontsize=8)
    fig.tight_layout(rect=(0, 0.3 * legend_rows / (height + 0.25 * legend_rows), 1, 1))
    return save(fig, path)
