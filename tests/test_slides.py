"""Lecture slides: every lesson carries slide metadata by one rule, and the static
decks (`make slides`) load nothing from outside their folder.

The rule lives in tools/slides.py (its docstring states it); the executor applies
it, so a lesson that was executed carries it. ``python tools/slides.py`` applies
it to a lesson without executing it.
"""

from __future__ import annotations

import html.parser
import sys
import urllib.parse
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import slides  # noqa: E402

LESSONS = slides.lessons()
WIDGET = {"application/vnd.jupyter.widget-view+json": {"model_id": "0" * 32}}


def notebook(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def md(text):
    return nbformat.v4.new_markdown_cell(text)


def code(text, widget=False):
    cell = nbformat.v4.new_code_cell(text)
    if widget:
        cell.outputs = [nbformat.v4.new_output("display_data", data=WIDGET)]
    return cell


# -- the rule ------------------------------------------------------------------

def test_title_and_sections_start_slides_and_code_stays_with_its_markdown():
    nb = notebook(md("# 99 Title"), code("import mha"), md("## 1. A section"), code("x = 1"),
                  md("Exercise set: ... Previous | Next"))
    assert slides.slide_types(nb) == ["slide", "-", "slide", "-", "slide"]


def test_markdown_after_code_starts_a_subslide():
    nb = notebook(md("# T"), md("## 1. S"), code("x = 1"), md("Now the next idea."), code("y"),
                  md("footer"))
    assert slides.slide_types(nb)[3] == "subslide"


def test_a_third_level_heading_starts_a_subslide():
    nb = notebook(md("# T"), md("intro"), md("### A detail"), md("footer"))
    assert slides.slide_types(nb)[2] == "subslide"


def test_a_widget_cell_gets_its_own_slide_and_the_next_cell_a_subslide():
    nb = notebook(md("# T"), md("## 6. Try it"), code("explorer", widget=True),
                  code("assert explorer.state"), md("footer"))
    assert slides.slide_types(nb)[2:4] == ["slide", "subslide"]


def test_a_hash_without_a_space_is_not_a_heading():
    nb = notebook(md("# T"), code("x"), md("#hashtag text"), md("footer"))
    assert slides.slide_types(nb)[2] == "subslide"  # markdown after code, not a slide


def test_check_reports_a_cell_whose_slide_type_breaks_the_rule():
    nb = slides.apply(notebook(md("# T"), md("## 1. S"), code("x"), md("footer")))
    assert slides.differences(nb) == []
    nb.cells[1].metadata["slideshow"]["slide_type"] = "-"
    assert slides.differences(nb) == ["cell 1 ('## 1. S'): slide_type '-', rule says 'slide'"]


def test_apply_twice_changes_nothing():
    nb = notebook(md("# T"), code("x", widget=True), md("footer"))
    once = nbformat.writes(slides.apply(nb))
    assert nbformat.writes(slides.apply(nbformat.reads(once, as_version=4))) == once


# -- the presenter -----------------------------------------------------------------

def test_jupyterlab_rise_is_a_learner_dependency_and_its_lab_extension_is_installed():
    """`make lab` installs the learner's dependencies, so RISE comes with it."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("jupyterlab-rise") for d in deps)
    extension = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "jupyterlab-rise"
    assert (extension / "package.json").is_file(), f"{extension} is missing"


# -- the lessons ---------------------------------------------------------------

@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_carries_slide_metadata_by_the_rule(path):
    problems = slides.differences(nbformat.read(path, as_version=4))
    assert problems == [], (f"run `python tools/slides.py {path.relative_to(ROOT)}` "
                            "(or re-execute it):\n" + "\n".join(problems[:10]))


# -- the static decks ------------------------------------------------------------

class Sources(html.parser.HTMLParser):
    """Every URL a page loads by itself: <script src>, <link href>, <img src>."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "img", "iframe") and attrs.get("src"):
            self.urls.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.urls.append(attrs["href"])


def loaded_urls(page: str) -> list[str]:
    parser = Sources()
    parser.feed(page)
    return parser.urls


def test_loaded_urls_finds_a_cdn_script_and_a_style_sheet():
    page = ('<link rel="stylesheet" href="https://cdn.example/r.css">'
            '<script src="vendor/a.js"></script><a href="https://example.org">x</a>')
    assert loaded_urls(page) == ["https://cdn.example/r.css", "vendor/a.js"]


@pytest.fixture(scope="module")
def deck(tmp_path_factory) -> Path:
    """Lesson 00 exported as `make slides` does, into build/test-slides (npm packages
    are fetched once there and kept: build/ is git-ignored)."""
    out = ROOT / "build" / "test-slides"
    (deck,) = slides.export([ROOT / "notebooks" / "00_start_here.ipynb"], out)
    return deck


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first export npm-installs reveal.js, MathJax, the widget renderer
def test_deck_loads_scripts_and_styles_only_from_its_own_folder(deck):
    urls = loaded_urls(deck.read_text())
    assert any("reveal.js/dist/reveal.css" in u for u in urls), urls
    for url in urls:
        if url.startswith("data:"):
            continue
        parts = urllib.parse.urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{deck.name} loads {url} from outside"
        assert (deck.parent / parts.path).is_file(), f"{deck.name} loads {url}: no such file"


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first export npm-installs reveal.js, MathJax, the widget renderer
def test_deck_loads_reveal_and_the_widget_renderer_from_the_vendor_folder(deck):
    """reveal.js is loaded by require() (not a src attribute); the widget renderer is
    added by a script only on a deck with widgets, so its configured path is checked."""
    page = deck.read_text()
    assert f'"{slides.MODULES}/reveal.js/dist/reveal.js"' in page
    assert (deck.parent / slides.MODULES / "reveal.js/dist/reveal.js").is_file()
    renderer = "@jupyter-widgets/html-manager/dist/embed-amd.js"
    assert f"--SlidesExporter.widget_renderer_url={slides.MODULES}/{renderer}" in \
        slides.NBCONVERT_ARGS
    assert (deck.parent / slides.MODULES / renderer).is_file()
    assert "mermaid" not in page.lower()  # nbconvert's one unconfigurable CDN script
