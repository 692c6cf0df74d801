"""Lecture slides: every lesson carries slide metadata by one rule, and the static
decks (`make slides`) load nothing from outside their folder.

The rule lives in tools/slides.py (its docstring states it); the executor applies
it, so a lesson that was executed carries it. ``python tools/slides.py`` applies
it to a lesson without executing it.
"""

from __future__ import annotations

import html.parser
import re
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
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
       "awAAAABJRU5ErkJggg==")


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

SETUP = "import mha  # the set-up cell"


def test_title_and_sections_start_slides_and_code_stays_with_its_markdown():
    nb = notebook(md("# 99 Title"), code(SETUP), md("## 1. A section"), code("x = 1"),
                  md("Exercise set: ... Previous | Next"))
    assert slides.slide_types(nb) == ["slide", "skip", "slide", "-", "-"]


def test_the_answer_to_a_predict_prompt_is_on_the_next_slide():
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), md("**Predict.** How large?"),
                  code("x = 1"), md("It is 1."))
    assert slides.slide_types(nb)[3:] == ["-", "subslide", "-"]


def test_a_third_level_heading_starts_a_subslide():
    nb = notebook(md("# T"), md("intro"), md("### A detail"), md("footer"))
    assert slides.slide_types(nb)[2] == "subslide"


def test_a_widget_cell_gets_its_own_slide_and_the_next_cell_a_subslide():
    nb = notebook(md("# T"), code(SETUP), md("## 6. Try it"), code("explorer", widget=True),
                  code("explorer.summary()"), md("footer"))
    assert slides.slide_types(nb)[3:5] == ["slide", "subslide"]


def test_a_hash_without_a_space_is_not_a_heading():
    nb = notebook(md("# T"), code(SETUP), code("x"), md("#hashtag text"), md("footer"))
    assert slides.slide_types(nb)[3] == "-"  # not a heading: it continues the slide


def test_check_cells_launch_cells_and_the_setup_cell_stay_out():
    check = code("assert x == 1")
    check.metadata["tags"] = ["check"]
    header, install = md("Open in Colab"), code("# install")
    header.metadata["tags"], install.metadata["tags"] = ["launch-header"], ["launch-install"]
    nb = notebook(md("# T"), header, install, code(SETUP), md("## 1. S"), code("x = 1"), check)
    assert slides.slide_types(nb) == ["slide", "skip", "skip", "skip", "slide", "-", "skip"]


def test_a_long_listing_stays_out():
    listing = code("\n".join(f"x{i} = {i}" for i in range(slides.LONG_SOURCE + 1)))
    shown = code("mha.show_source(mha.softmax)")
    printed = code("print(table)")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                              text="row\n" * (slides.LONG_OUTPUT + 1))]
    nb = notebook(md("# T"), code(SETUP), listing, shown, printed, code("y = 2"))
    assert slides.slide_types(nb)[2:] == ["skip", "skip", "skip", "-"]


def test_going_deeper_stays_out_of_the_slides():
    nb = notebook(md("# T"), code(SETUP), md("## What to remember\n\n- a"),
                  md("## Going deeper\n\nOptional: ..."), code("z = 3"), md("### More"))
    assert slides.slide_types(nb)[3:] == ["skip", "skip", "skip"]


def test_a_cell_that_would_overflow_the_slide_starts_a_subslide():
    tall = md("\n\n".join(["A sentence of prose that fills a line. " * 2] * 8))
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), tall, tall)
    assert slides.estimate(tall) * 2 > slides.BUDGET
    assert slides.slide_types(nb)[3:] == ["-", "subslide"]


def printing(source, lines):
    cell = code(source)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="".join(f"row {i}\n" for i in range(lines)))]
    return cell


PROSE = "A sentence of prose that fills most of one line on a slide of the deck, and more. "


def test_a_slide_shows_one_code_cell():
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), code("x = 1"), code("y = 2"),
                  md("Short."), code("z = 3"))
    assert slides.slide_types(nb)[3:] == ["-", "subslide", "-", "subslide"]


def test_a_code_cell_after_more_than_a_short_lead_in_starts_a_subslide():
    lead = md(PROSE * (slides.LEAD_LINES + 1))  # wraps to LEAD_LINES + 1 lines
    short = md(PROSE)
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), lead, code("x = 1"),
                  md("## 2. S"), short, code("y = 2"))
    assert slides.prose_lines(lead) > slides.LEAD_LINES >= slides.prose_lines(short)
    assert slides.slide_types(nb)[3:] == ["-", "subslide", "slide", "-", "-"]


def test_prose_after_code_stays_on_its_slide_only_while_the_slide_holds_little_prose():
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), md(PROSE), code("x = 1"),
                  md(PROSE * 2), md(PROSE * 2))
    assert slides.slide_types(nb)[3:] == ["-", "-", "-", "subslide"]


def test_prose_that_leads_into_the_next_code_cell_goes_with_it():
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"), code("x = 1"), md("It is 1. Now y:"),
                  code("y = 2"), md("Both:"), md("Or:"), code("x + y"))
    assert slides.slide_types(nb)[3:] == ["-", "subslide", "-", "-", "subslide", "-"]


def test_no_slide_carries_more_than_code_lines_of_code_and_output():
    half = slides.CODE_LINES // 2
    nb = notebook(md("# T"), code(SETUP), md("## 1. S"),
                  printing("print(table)", half), printing("print(table)", half + 1))
    nb.cells[4].metadata["tags"] = [slides.OUTPUT_ONLY_TAG]  # no code shown, output only
    assert slides.slide_types(nb)[3:] == ["-", "subslide"]


def test_a_wide_printed_line_counts_as_the_lines_it_wraps_to():
    cell = printing("print(row)", 0)
    cell.outputs[0].text = "x" * (2 * slides.OUTPUT_CHARS) + "\n"
    assert slides.text_lines(cell) == 1 and slides.code_lines(cell) == 1 + 2


def test_a_deck_shows_the_output_of_a_tall_cell_on_the_next_slide():
    tall = printing("\n".join(f"x{i} = {i}" for i in range(12)) + "\nprint(x0)", 10)
    nb = slides.deck_notebook(notebook(md("# T"), code(SETUP), md("## 1. S"), tall))
    shown, output = nb.cells[2], nb.cells[3]
    assert shown.outputs == [] and "x11 = 11" in shown.source
    assert slides.OUTPUT_ONLY_TAG in output.metadata["tags"] and len(output.outputs) == 1
    assert [c.metadata.slideshow.slide_type for c in nb.cells[1:]] == ["slide", "-", "subslide"]
    assert f"remove_input_tags={slides.OUTPUT_ONLY_TAG}" in " ".join(slides.NBCONVERT_ARGS)


def test_a_deck_shows_the_first_code_cell_after_the_setup_cell():
    """The deck notebook holds no set-up cell: its first code cell is lesson code (the decks
    left out every lesson's first example or computation map)."""
    nb = slides.deck_notebook(notebook(md("# T"), code(SETUP), md("## 1. S"), code("x = 1")))
    assert [c.source for c in nb.cells] == ["# T", "## 1. S", "x = 1"]
    assert nb.cells[2].metadata.slideshow.slide_type == "-"


def slides_of(nb) -> list[list]:
    """The cells of ``nb`` grouped by the slide they are drawn on."""
    groups: list[list] = []
    for cell in nb.cells:
        kind = cell.metadata.slideshow.slide_type
        if kind == "skip":
            continue
        if kind in ("slide", "subslide") or not groups:
            groups.append([])
        groups[-1].append(cell)
    return groups


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_deck_slide_that_shows_code_can_be_read_from_the_back(path):
    """Issue 19: at most one code cell, CODE_LINES lines of code and printed output and
    CODE_SLIDE_PROSE lines of prose on a slide (estimated as tools/slides.py does; the
    browser test measures the drawn slides)."""
    crowded = []
    for number, group in enumerate(slides_of(slides.deck_notebook(
            nbformat.read(path, as_version=4))), 1):
        shown = sum(slides.shows_code(c) for c in group)
        lines = sum(slides.code_lines(c) for c in group)
        prose = sum(slides.prose_lines(c) for c in group)
        one = len([c for c in group if c.cell_type == "code"]) == 1
        if shown > 1 or (lines > slides.CODE_LINES and not one) or (
                lines and prose > slides.CODE_SLIDE_PROSE):
            crowded.append(f"slide {number}: {shown} code cells, {lines} lines of code and "
                           f"output, {prose:.1f} of prose: {group[0].source[:40]!r}")
    assert crowded == [], f"{path.name}:\n" + "\n".join(crowded)


def test_check_reports_a_cell_whose_slide_type_breaks_the_rule():
    nb = slides.apply(notebook(md("# T"), md("## 1. S"), code("x"), md("footer")))
    assert slides.differences(nb) == []
    nb.cells[1].metadata["slideshow"]["slide_type"] = "-"
    assert slides.differences(nb) == ["cell 1 ('## 1. S'): slide_type '-', rule says 'slide'"]


def test_apply_twice_changes_nothing():
    nb = notebook(md("# T"), code("x", widget=True), md("footer"))
    once = nbformat.writes(slides.apply(nb))
    assert nbformat.writes(slides.apply(nbformat.reads(once, as_version=4))) == once


# -- what a static deck shows ----------------------------------------------------------

def test_the_deck_shows_code_without_the_lines_that_pin_numbers():
    source = ("w = softmax(s)\nassert w.sum() == 1\nnp.testing.assert_allclose(w, [0.5, 0.5],\n"
              "    atol=1e-9)\nwith np.testing.assert_raises(ValueError):\n    softmax([])\n"
              "with np.errstate(over='ignore'):\n    e = np.exp(s)\n    assert e.all()\nw")
    assert slides.without_checks(source) == ("w = softmax(s)\nwith np.errstate(over='ignore'):"
                                             "\n    e = np.exp(s)\nw")


def test_an_answer_stays_inside_its_closed_details_in_the_deck():
    source = ("1. How many?\n<details><summary>Answer</summary>\n\nSixteen, $\\sqrt{256}$."
              "\n</details>\n\n2. Next?")
    html = slides.details_as_html(source)
    assert "<details><summary>Answer</summary><div class=\"answer\"><p>Sixteen" in html
    assert "\n" not in re.search(r"<details>.*?</details>", html, re.S).group(0)


def test_a_long_markdown_cell_is_cut_into_slide_sized_parts_keeping_headings_with_text():
    items = "\n".join(f"- point {i}: " + "words " * 30 for i in range(12))
    parts = slides.split_markdown("## What to remember\n\n" + items + "\n\n## Check yourself"
                                  "\n\n1. A question?")
    assert len(parts) >= 2
    assert all(slides._markdown_height(p) <= slides.BUDGET for p in parts)
    assert not any(slides._is_heading(p.split("\n\n")[-1]) for p in parts)
    assert sum("## Check yourself\n\n1. A question?" in p for p in parts) == 1


def test_a_widget_becomes_its_stored_picture_and_a_line_about_the_live_widget():
    cell = code("explorer", widget=True)
    cell.outputs[0].data["image/png"] = PNG
    cell.outputs[0].data["text/plain"] = "ScalingExplorer: d_k = 64"
    nb = slides.deck_notebook(notebook(md("# T"), code(SETUP), cell))
    picture, note = nb.cells[1], nb.cells[2]
    assert list(picture.outputs[0].data) == ["image/png"]
    assert picture.outputs[0].metadata["alt"].startswith("Stored picture of the live widget")
    assert "needs the notebook" in note.source or "need the notebook" in note.source
    assert "widgets" not in nb.metadata


def test_a_check_cell_is_not_in_the_deck_notebook():
    check = code("assert x == 1")
    check.metadata["tags"] = ["check"]
    nb = slides.deck_notebook(notebook(md("# T"), code(SETUP), code("x = 1"), check))
    assert [c.source for c in nb.cells] == ["# T", "x = 1"]


def test_a_link_to_a_lesson_goes_to_its_deck_and_an_exercise_to_its_binder_launch_link():
    """The decks' folder holds no notebook: "[02](02_scores_and_softmax.ipynb)" led nowhere."""
    project = slides.launch.Project()
    text = ("Next: [02 Scores](02_scores_and_softmax.ipynb#top), then "
            "[exercises/ex01_weighted_sum.ipynb](exercises/ex01_weighted_sum.ipynb); "
            "[05](05_softmax_backward.ipynb); [docs](https://example.org/a.ipynb)")
    out = slides.deck_links(text, {"01_weighted_sum", "02_scores_and_softmax"}, project)
    exercise = project.binder("notebooks/exercises/ex01_weighted_sum.ipynb")
    assert "[02 Scores](02_scores_and_softmax.slides.html)" in out
    assert f"[exercises/ex01_weighted_sum.ipynb (on Binder)]({exercise})" in out
    assert f"({project.binder('notebooks/05_softmax_backward.ipynb')})" in out  # not exported
    assert "(https://example.org/a.ipynb)" in out
    html = slides.deck_links('<a href="02_scores_and_softmax.ipynb#x">02</a>',
                             {"02_scores_and_softmax"})
    assert html == '<a href="02_scores_and_softmax.slides.html">02</a>'


def test_the_deck_notebook_links_no_notebook():
    nb = slides.deck_notebook(notebook(md("# T\n\nNext: [02](02_scores_and_softmax.ipynb)"),
                                       code(SETUP)))
    assert "(02_scores_and_softmax.slides.html)" in nb.cells[0].source


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
@pytest.mark.timeout(900)  # the first export npm-installs reveal.js and MathJax
def test_deck_loads_reveal_from_the_vendor_folder_and_no_widget_manager(deck):
    """reveal.js is loaded by require() (not a src attribute); no widget JavaScript."""
    page = deck.read_text()
    assert f'"{slides.MODULES}/reveal.js/dist/reveal.js"' in page
    assert (deck.parent / slides.MODULES / "reveal.js/dist/reveal.js").is_file()
    assert "html-manager" not in page and "embed-amd" not in page
    assert "mermaid" not in page.lower()  # nbconvert's one unconfigurable CDN script


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_vendor_folder_is_under_30_megabytes_and_holds_only_the_listed_files(deck):
    vendor = deck.parent / slides.MODULES
    files = [p for p in vendor.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    assert size < 30 * 2**20, f"{vendor} holds {size / 2**20:.1f} MiB"
    listed = [vendor / name for name in slides.VENDOR_FILES]
    assert all(any(p == f or f in p.parents for f in listed) for p in files)
