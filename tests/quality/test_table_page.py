"""The quality report of a declared table: the release's verdict first, every section, one decodable figure per
column, the numbers of the metrics on the page, and notes where a report or a target is missing."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpgm.quality import NOT_PRIVATE
from dpgm.quality.release_privacy import release_privacy
from dpgm.quality.table_plots import MAX_BARS, shown_values
from tests.quality.conftest import table_report
from tests.quality.test_page import embedded_pngs

SECTIONS = ("verdict", "summary", "workload", "train-on-synthetic", "columns", "associations", "distributions")


def section_order(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', page)


def test_the_verdict_comes_first_then_every_section(table_page: str) -> None:
    assert table_page.index(NOT_PRIVATE) < table_page.index("<h1>") < table_page.index('<section id="verdict"')
    assert section_order(table_page) == list(SECTIONS)
    verdict = table_page[table_page.index('<section id="verdict"'):table_page.index("</section>")]
    assert 'class="verdict safe"' in verdict and "<strong>safe to share</strong>" in verdict
    assert "epsilon = 1, delta = 1e-06 (neighbouring: add_remove, accountant: rdp)" in verdict
    assert "syn.csv.privacy.json" in verdict


def test_the_heat_map_then_one_decodable_figure_per_column_and_nothing_external(table_page: str) -> None:
    import io

    import matplotlib.image

    pngs = embedded_pngs(table_page)
    assert len(pngs) == 5
    alts = re.findall(r'<img alt="([^"]*)"', table_page)
    assert alts == ["associations", "age", "when", "city", "y"]
    for png in pngs:
        pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 200
    assert not re.search(r'(src|href)="(https?:|//|file:)', table_page) and "<script" not in table_page


def test_the_page_shows_the_metrics(table_files, table_page: str) -> None:
    assert "all 4 triples of columns" in table_page
    rows = re.findall(r"<tr><td>(1-way \(single columns\)|2-way \(pairs\)|3-way \(triples\)|all)</td><td>(\d+)</td>",
                      table_page)
    assert rows == [("1-way (single columns)", "4"), ("2-way (pairs)", "6"), ("3-way (triples)", "4"), ("all", "14")]
    assert "tested on 120 real records: the hold-out file" in table_page
    assert re.search(r"<tr><td>when</td><td>datetime</td><td>0\.\d{4}</td><td>0\.\d{4}</td><td>\d+\.\d\d%</td>"
                     r"<td>\d+\.\d\d%</td></tr>", table_page)
    assert re.search(r"<tr><td>city</td><td>categorical</td><td>0\.\d{4}</td><td></td><td></td><td></td></tr>",
                     table_page)
    summary = re.search(r'<section id="summary"><h2>Summary</h2>\n<p>([^<]*)</p>', table_page).group(1)
    assert "The release has 200 records; the real table 240, over 4 columns." in summary
    assert "A classifier of &#x27;y&#x27; trained on the release scores AUC" in summary
    assert re.search(r"The association of a pair of columns \(Cramér&#x27;s V\) differs by 0\.\d{3} on average",
                     summary)


def test_a_column_with_missing_values_shows_its_rate(table_files, table_page: str) -> None:
    from dpgm.evaluation import read_table
    from dpgm.tables import table_schema

    schema = table_schema(table_files["schema"])
    rates = [100 * float(np.mean(read_table(table_files[side], schema).cells[1][1])) for side in ("real", "synthetic")]
    assert 0 < rates[0] < 100 and 0 < rates[1] < 100
    row = re.search(r"<tr><td>when</td>.*?</tr>", table_page).group(0)
    assert row.endswith(f"<td>{rates[0]:.2f}%</td><td>{rates[1]:.2f}%</td></tr>")
    assert f"missing {rates[0] / 100:.0%} real, {rates[1] / 100:.0%} synth." in _column_title(table_files)


def test_the_heat_map_section_gives_the_mean_difference_of_the_two_matrices(table_files, table_page: str) -> None:
    from dpgm.evaluation import read_table
    from dpgm.quality.association import association_matrix
    from dpgm.tables import table_schema

    schema = table_schema(table_files["schema"])
    real, synthetic = (association_matrix(read_table(table_files[s], schema)) for s in ("real", "synthetic"))
    pairs = np.triu_indices(4, k=1)
    gap = float(np.mean(np.abs(real[pairs] - synthetic[pairs])))
    assert gap > 0
    block = table_page[table_page.index('<section id="associations"'):]
    block = block[:block.index("</section>")]
    assert f"over the pairs: {gap:.4f}.</p>" in block and '<img alt="associations" src="data:image/png;base64,' in block


def test_notes_without_a_privacy_report_or_a_target(table_files, tmp_path) -> None:
    page = table_report({**table_files, "synthetic": _copy(table_files["synthetic"], tmp_path)}, target=None)
    assert 'class="verdict unsafe"' in page and "No privacy report found beside the release" in page
    assert "No classifier: pass --target COLUMN" in page
    assert "A classifier of" not in page


def test_a_release_that_is_not_private_says_so_first(table_files, tmp_path) -> None:
    seeded = tmp_path / "seeded.json"
    seeded.write_text(json.dumps({"not_private": ["seeded"], "epsilon": 2.0, "delta": 1e-5}))
    page = table_report(table_files, privacy=str(seeded))
    verdict = page[page.index('<section id="verdict"'):]
    assert 'class="verdict unsafe"' in verdict[:80] and "NOT differentially private" in verdict
    assert "NOT DIFFERENTIALLY PRIVATE: a fixed seed makes its noise replayable" in verdict


def test_a_weak_guarantee_is_not_shown_as_safe(tmp_path) -> None:
    weak = tmp_path / "weak.json"
    weak.write_text(json.dumps({"not_private": [], "epsilon": 20.0, "delta": 1e-6}))
    privacy = release_privacy(str(weak), tmp_path / "syn.csv")
    assert privacy.private and not privacy.safe and privacy.label.startswith("weak guarantee")
    strong = tmp_path / "strong.json"
    strong.write_text(json.dumps({"not_private": [], "epsilon": 1.0}))
    assert release_privacy(str(strong), tmp_path / "syn.csv").safe


def test_a_bad_privacy_report_is_a_one_line_error(tmp_path) -> None:
    from dpgm.errors import ConfigError

    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a JSON privacy report"):
        release_privacy(str(bad), tmp_path / "syn.csv")
    with pytest.raises(ConfigError, match="cannot read"):
        release_privacy(str(tmp_path / "nowhere.json"), tmp_path / "syn.csv")


def test_many_categories_show_the_most_frequent_in_the_real_data(table_files) -> None:
    from dpgm.evaluation import evaluate_table, read_table
    from dpgm.quality.table_compare import compare_tables
    from dpgm.tables import table_schema

    schema = table_schema(table_files["schema"])
    real = read_table(table_files["real"], schema)
    cmp = compare_tables(real, real, evaluate_table(real, real), release_privacy(None, table_files["real"]))
    city = cmp.columns[2]
    assert len(city.labels) == 40 > MAX_BARS
    shown = shown_values(city)
    assert len(shown) == MAX_BARS and np.all(np.diff(shown) > 0)
    assert city.real[shown].min() >= np.delete(city.real, shown).max()
    when = cmp.columns[1]
    assert when.missing == (pytest.approx(when.real[-1]), pytest.approx(when.real[-1])) and when.real[-1] > 0


def _column_title(files) -> str:
    """The figure title of the column ``when`` (which may hold missing values)."""
    from dpgm.evaluation import evaluate_table, read_table
    from dpgm.quality.table_compare import compare_tables
    from dpgm.quality.table_plots import title
    from dpgm.tables import table_schema

    schema = table_schema(files["schema"])
    real, synthetic = read_table(files["real"], schema), read_table(files["synthetic"], schema)
    cmp = compare_tables(real, synthetic, evaluate_table(real, synthetic), release_privacy(None, files["synthetic"]))
    return title(cmp.columns[1])


def _copy(path, folder):
    """``path`` copied into ``folder`` (without the privacy report beside it)."""
    target = folder / path.name
    target.write_bytes(path.read_bytes())
    return target
