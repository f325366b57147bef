"""The report renders in a real browser: headless Chromium loads every embedded plot.

Skipped when no Chromium is installed (CI has none): ``apt-get install chromium`` to run it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# After the load event: how many images the page has, and how many decoded to a non-empty bitmap.
PROBE = """<script>window.addEventListener("load", () => {
  const images = Array.from(document.images);
  document.body.dataset.images = images.length;
  document.body.dataset.rendered = images.filter((im) => im.complete && im.naturalWidth > 0).length;
});</script>"""


def browser() -> str:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    pytest.skip("chromium not installed")


def headless(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                           "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def rendered_images(exe: str, page: str, folder: Path) -> tuple[str, str]:
    """(images on the page, images decoded) once Chromium has loaded ``page``."""
    probed = folder / "probed.html"
    probed.write_text(page.replace("</body>", PROBE + "</body>"))
    dom = headless(exe, folder / "profile", "--dump-dom", probed.as_uri())
    found = re.search(r'<body data-images="(\d+)" data-rendered="(\d+)"', dom.stdout)
    assert found, dom.stderr[-2000:]
    return found.group(1), found.group(2)


def test_every_plot_renders_in_chromium(pages, tmp_path: Path) -> None:
    exe = browser()
    assert rendered_images(exe, pages["images"], tmp_path) == ("7", "7")

    import matplotlib.image

    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    page.write_text(pages["images"])
    headless(exe, tmp_path / "profile", "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1200,3000",
             page.as_uri())
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (3000, 1200)
    assert pixels[..., :3].std() > 0.05  # plots, not a blank page


def test_every_figure_of_a_table_renders_in_chromium(table_page, tmp_path: Path) -> None:
    assert rendered_images(browser(), table_page, tmp_path) == ("5", "5")  # the heat map and one per column
