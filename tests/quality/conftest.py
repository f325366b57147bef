"""Small files for the quality report: transactions (9 items) and 8x8 labelled images (CSV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def write_transactions(path: Path, dense: np.ndarray) -> Path:
    path.write_text("\n".join(" ".join(map(str, np.flatnonzero(row))) for row in dense) + "\n")
    return path


def write_csv(path: Path, dense: np.ndarray, names: list[str], labels: np.ndarray | None = None) -> Path:
    head = names + ([] if labels is None else ["label"])
    rows = [",".join(map(str, row)) + ("" if labels is None else f",{labels[i]}") for i, row in enumerate(dense)]
    path.write_text("\n".join([",".join(head), *rows]) + "\n")
    return path


@pytest.fixture(scope="session")
def report_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """real.txt / synthetic.txt (150 and 120 records, 9 items, correlated pairs) and
    digits_real.csv / digits_syn.csv (60 and 40 8x8 images px0..px63 with a label column)."""
    tmp = tmp_path_factory.mktemp("quality")
    rng = np.random.default_rng(0)

    def baskets(n: int) -> np.ndarray:
        dense = (rng.random((n, 9)) < np.linspace(0.1, 0.6, 9)).astype(int)
        dense[:, 1] |= dense[:, 0]  # item 1 follows item 0: a positive correlation
        dense[0, 8] = 1
        return dense

    def images(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 3, size=n)
        pixels = (rng.random((n, 64)) < 0.2 + 0.2 * (np.arange(64) % 8 == labels[:, None])).astype(int)
        return pixels, labels

    names = [f"px{j}" for j in range(64)]
    (real_px, real_labels), (syn_px, syn_labels) = images(60), images(40)
    return {
        "dir": tmp,
        "real": write_transactions(tmp / "real.txt", baskets(150)),
        "synthetic": write_transactions(tmp / "synthetic.txt", baskets(120)),
        "digits_real": write_csv(tmp / "digits_real.csv", real_px, names, real_labels),
        "digits_syn": write_csv(tmp / "digits_syn.csv", syn_px, names, syn_labels),
    }


class Pages(dict):
    """The report's HTML per pair, built on first use: "baskets" (transactions), "images" (labelled 8x8)."""

    def __init__(self, files: dict[str, Path]) -> None:
        super().__init__()
        self.files = files
        self.pairs = {"baskets": ("real", "synthetic"), "images": ("digits_real", "digits_syn")}

    def __missing__(self, kind: str) -> str:
        from dpgm.quality import build_report, compare, load_pair

        real, syn = self.pairs[kind]
        self[kind] = build_report(compare(*load_pair(str(self.files[real]), self.files[syn]), n_queries=50))
        return self[kind]


@pytest.fixture(scope="session")
def pages(report_files: dict[str, Path]) -> Pages:
    return Pages(report_files)


TABLE_SCHEMA = {"columns": [
    {"name": "age", "kind": "integer", "lower": 18, "upper": 90},
    {"name": "when", "kind": "datetime", "lower": "2024-01-01", "upper": "2024-12-31", "bins": 6, "missing": True},
    {"name": "city", "kind": "categorical", "categories": [f"c{j}" for j in range(40)]},
    {"name": "y", "kind": "binary", "categories": ["no", "yes"]},
]}


def write_table(path: Path, n: int, seed: int) -> Path:
    """Records of TABLE_SCHEMA: y is yes exactly for those older than 50; a date missing in one record of ten."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, n)
    days = rng.integers(0, 365, n)
    rows = [f"{a},{'' if d % 10 == 0 else str(np.datetime64('2024-01-01') + d)},c{c},{'yes' if a > 50 else 'no'}"
            for a, d, c in zip(age, days, rng.integers(0, 40, n))]
    path.write_text("\n".join(["age,when,city,y", *rows]) + "\n")
    return path


@pytest.fixture(scope="session")
def table_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A declared table (4 columns: integer, datetime with missing values, 40 categories, binary target): real
    (240 records), hold-out (120), a release (200) with its privacy report beside it, and the schema."""
    import json

    tmp = tmp_path_factory.mktemp("table")
    (tmp / "t.schema.json").write_text(json.dumps(TABLE_SCHEMA))
    synthetic = write_table(tmp / "syn.csv", 200, 2)
    (tmp / "syn.csv.privacy.json").write_text(json.dumps({"not_private": [], "epsilon": 1.0, "delta": 1e-6,
                                                          "neighbouring": "add_remove", "accountant": "rdp"}))
    return {"dir": tmp, "schema": tmp / "t.schema.json", "real": write_table(tmp / "real.csv", 240, 0),
            "holdout": write_table(tmp / "holdout.csv", 120, 1), "synthetic": synthetic}


def table_report(files: dict[str, Path], *, target: str | None = "y", privacy: str | None = None) -> str:
    """The table view's page for ``files`` (the release's privacy report: ``privacy``, else beside it)."""
    from dpgm.evaluation import evaluate_table, read_table
    from dpgm.quality.release_privacy import release_privacy
    from dpgm.quality.table_compare import compare_tables
    from dpgm.quality.table_page import build_table_report
    from dpgm.tables import table_schema

    schema = table_schema(files["schema"])
    real, synthetic = read_table(files["real"], schema), read_table(files["synthetic"], schema)
    metrics = evaluate_table(real, synthetic, target=target, holdout=read_table(files["holdout"], schema))
    cmp = compare_tables(real, synthetic, metrics, release_privacy(privacy, files["synthetic"]))
    return build_table_report(cmp, created="now")


@pytest.fixture(scope="session")
def table_page(table_files: dict[str, Path]) -> str:
    return table_report(table_files)
