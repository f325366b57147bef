"""The documentation: the mkdocs site builds without a warning, its generated pages match the
code and the benchmark JSON, the README stays short, and no numbered history is left in the
product's files."""

from __future__ import annotations

import importlib.util
import os
import re
from html import escape
from pathlib import Path

import pytest

from dpgm.commands.main import component_options, components
from dpgm.config import describe
from tests._forked import run_script  # forked from a server that imported torch and dpgm once

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_LINES = 150
#: Numbered development history ("session" or "issue" and a number): git keeps it, files do not.
HISTORY = re.compile(r"\b(session|issue) [0-9]+", re.IGNORECASE)
HISTORY_PATHS = ("dpgm", "tests", "configs", "docs", "README.md")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".json"}


def generator():
    """docs/gen_config_reference.py as a module (it is a mkdocs hook, not a package module)."""
    spec = importlib.util.spec_from_file_location("gen_config_reference",
                                                  ROOT / "docs" / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built by ``mkdocs build --strict`` (a warning fails the build)."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")
    import mkdocs.__main__

    folder = tmp_path_factory.mktemp("docs")
    out = folder / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    # ``python -m mkdocs build``, forked from the server that imported dpgm (its hook reads dpgm's registries)
    done = run_script(Path(mkdocs.__main__.__file__), ["build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                                                       "-d", str(out)], cwd=ROOT, env=env, timeout=300, folder=folder)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_mkdocs_builds_every_page_and_the_generated_config_reference(site: Path) -> None:
    """One test of the built site, so that one worker builds it (a build takes seconds)."""
    pages = ["index", "privacy", "results", "results-rules", "development", "reference/config", "reference/api",
             *(f"guide/{name}" for name in ("data", "configs", "commands", "python", "tools"))]
    for page in pages:
        assert (site / f"{page}.html").is_file(), page
    api = (site / "reference" / "api.html").read_text()
    assert 'id="dpgm.api.fit"' in api and 'id="dpgm.api.Release.sample"' in api
    gen = generator()
    html = (site / "reference" / "config.html").read_text().replace("<wbr>", "")
    assert gen.MARKER not in html and "generated: configuration options" not in html
    for _, _, rows in gen.sections():
        for key, default, _, _ in rows:
            assert f"<code>{key}</code>" in html, key
            assert f"<code>{escape(default, quote=False)}</code>" in html, (key, default)


def config_keys() -> list[str]:
    """Every option's dotted key, as ``python -m dpgm.config`` lists them."""
    return [line.split(" = ")[0].strip() for line in describe(registered=components(), kinds=component_options())
            if " = " in line]


def test_config_reference_generator_covers_every_option() -> None:
    gen = generator()
    listed = [key for _, _, rows in gen.sections() for key, *_ in rows]
    assert listed == config_keys()
    text = gen.reference_markdown()
    assert all(f"| {gen.breakable(key)} |" in text for key in listed)


def test_results_page_is_generated_from_the_current_json(tmp_path: Path) -> None:
    done = run_script(ROOT / "benchmarks" / "results_page.py", ["--check"], cwd=ROOT,
                      env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}, timeout=300, folder=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("results.md", "results-rules.md"):
        page = (ROOT / "docs" / name).read_text()
        sections = page.count("\n## ")
        assert sections >= 3 and page.count("Source: `benchmarks/results/") >= sections, name


def test_results_page_opens_with_the_comparison_and_its_figures() -> None:
    page = (ROOT / "docs" / "results.md").read_text()
    first = page.split("\n## ")[1]
    assert first.startswith("dpgm beside AIM, MST, MWEM+PGM and independent marginals")
    images = re.findall(r"!\[[^\]]*\]\((img/results/[^)]+\.png)\)", first)
    assert "img/results/overview.png" in images and len(images) >= 8
    assert all((ROOT / "docs" / image).stat().st_size > 0 for image in images)
    assert "Leave-one-dataset-out" not in page and "Leave-one-dataset-out" in (ROOT / "docs" / "results-rules.md").read_text()


def test_readme_is_short_and_keeps_the_test_command() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    at = lines.index("## Run the tests")
    assert lines[at + 2] == "    .venv/bin/python -m pytest"


def test_readme_links_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing


def test_no_numbered_history_in_the_product() -> None:
    found = []
    for name in HISTORY_PATHS:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in files:
            if file.suffix not in TEXT_SUFFIXES or "__pycache__" in file.parts:
                continue
            for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                if HISTORY.search(line):
                    found.append(f"{file.relative_to(ROOT)}:{number}")
    assert not found, "numbered history (git keeps it): " + ", ".join(found)
