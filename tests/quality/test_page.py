"""The HTML page: warning first, every section, one decodable embedded PNG per figure, nothing external."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest

from dpgm.quality import NOT_PRIVATE
from dpgm.quality.compare import compare
from dpgm.quality.page import summary

SECTIONS = ("summary", "frequencies", "lengths", "cooccurrence", "correlation", "queries", "images", "labels")
IMG = re.compile(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


def embedded_pngs(page: str) -> list[bytes]:
    return [base64.b64decode(data, validate=True) for data in IMG.findall(page)]


@pytest.mark.parametrize(("kind", "figures"), [("baskets", 5), ("images", 7)])
def test_every_section_and_one_png_per_figure(pages, kind: str, figures: int) -> None:
    import matplotlib.image

    page = pages[kind]
    for key in SECTIONS:
        assert page.count(f'<section id="{key}">') == 1, key
    assert page.count("<img ") == figures
    pngs = embedded_pngs(page)
    assert len(pngs) == figures
    for png in pngs:
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100


def test_the_warning_comes_first_and_nothing_is_external(pages) -> None:
    page = pages["baskets"]
    assert page.index(NOT_PRIVATE) < page.index("<h1>")
    assert not re.search(r'(src|href)="(https?:|//|file:)', page) and "<link" not in page and "<script" not in page


def test_notes_say_why_a_figure_is_missing(pages) -> None:
    page = pages["baskets"]
    assert "Not image data" in page
    assert "No per-label counts: the real data and the release have no label column." in page
    assert "Records per label" not in page and "Per-label counts" in pages["images"]


def test_summary_is_computed_from_the_numbers(tiny_dataset) -> None:
    shifted = tiny_dataset.subset(np.arange(40))
    shifted.records = shifted.records.copy()
    shifted.records[:, 0] = 1  # item i0 now in every record
    text = summary(compare(tiny_dataset, shifted, n_queries=20))
    assert "'i0'" in text and "The release has 40 records" in text
    assert "shortest queries" in text and "longest" in text and "\n" not in text
    assert "Among all 12 items" in text


def test_a_single_item_has_no_pairs_but_still_renders() -> None:
    from dpgm.data.dataset import BinaryDataset
    from dpgm.quality import build_report

    one = BinaryDataset(records=np.array([[1], [0], [1]], dtype=np.uint8), item_names=["a"])
    page = build_report(compare(one, one, n_queries=5))
    assert len(embedded_pngs(page)) == 5 and "a pair differs" not in page
