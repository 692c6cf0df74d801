"""A lesson as live RISE slides (jupyterlab-rise, /rise/<notebook>): the deck opens
offline, advances, and runs code in the lesson's kernel.

The served copy of lesson 03 gets its slide metadata from tools/slides.py first
(so the test does not depend on when the lesson was last executed). The set-up cell is
not a slide (tools/slides.py), so the lecturer runs the notebook first (Run All in the
notebook view) and presents in the same kernel: the fixture does exactly that.

Known limit, pinned by a strict xfail: an ipywidgets view does not render in the
RISE page. Cause, read from the page's console (jupyterlab-rise 0.43.1, ipywidgets
8.1.9 / jupyterlab_widgets 3.0.17, JupyterLab 4.6.6): the /rise/ page is RISE's own
prebuilt app on JupyterLab 4.3.4 core packages; it loads the installed lab
extensions, and the widget manager's fails ("Failed to create module: package:
@jupyter-widgets/jupyterlab-manager", "Shared module @jupyterlab/console doesn't
exist in shared scope default"). With no widget manager, every widget model the
kernel opens fails ("Exception opening new comm") and the output stays empty.
Upstream: jupyterlab-contrib/rise issue 119 (open). Fixing it means rebuilding
RISE's app against current JupyterLab, outside this project. Workaround for class:
run the widget slide in the JupyterLab notebook view of the same notebook (same
kernel; View > Appearance > Presentation Mode enlarges it; tested in
test_browser_rise_workaround.py), or show the static deck of `make slides`, which
draws the stored widget state offline without a kernel.
When a RISE release fixes it, the xfail turns into a failure: drop the mark.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import slides  # noqa: E402

LESSON = "03_scaling.ipynb"
PRINTING_CELL = "np.array([8.0, -8.0])"  # lesson 03's worked case: its cell prints [0.881, 0.119]


@pytest.fixture(scope="module")
def rise(lab_server, open_recorded_page):
    path = lab_server.root / LESSON
    nbformat.write(slides.apply(nbformat.read(path, as_version=4)), path)
    with open_recorded_page() as lab_page:
        try:
            lab_page.open_notebook(lab_server, LESSON)  # Run All first, as a lecturer does
            lab_page.clear_and_run_all()
            lab_page.page.goto(f"{lab_server.base}/rise/{urllib.parse.quote(LESSON)}"
                               f"?token={lab_server.token}")
            present(lab_page).wait_for(state="visible", timeout=60_000)
            yield lab_page
        finally:
            lab_server.stop_kernels(LESSON)


def present(lab_page):
    return lab_page.page.locator(".reveal .slides section.present").last


def advance_to(lab_page, text: str, presses: int = 200) -> None:
    """From the first slide, press Space (next) until the present slide shows ``text``.
    (Reloading is the sure way back to the first slide: Home did not move there.)"""
    page = lab_page.page
    page.reload()
    present(lab_page).wait_for(state="visible", timeout=60_000)
    page.keyboard.press("Escape")  # command mode: keys move the slides
    for _ in range(presses):
        if text in present(lab_page).inner_text():
            return
        page.keyboard.press("Space")
    raise AssertionError(f"no slide with {text!r} within {presses} presses")


def code_cell(lab_page, text: str):
    """The first code cell showing ``text`` (found in the whole deck: Shift+Enter moves
    to the next cell, which may be on the next slide)."""
    return lab_page.page.locator(".reveal .jp-CodeCell", has_text=text).first


def run_cell(lab_page, cell) -> None:
    """Click into ``cell``, Shift+Enter, wait (bounded) for its prompt to get a number."""
    prompt = cell.locator(".jp-InputPrompt")

    def ran():
        cell.locator(".jp-InputArea-editor").click()
        lab_page.page.keyboard.press("Shift+Enter")
        return lab_page.wait_until(
            lambda: re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip()), 20, "")

    try:
        ran()
    except AssertionError:  # the kernel was still starting: the first press was lost
        ran()


def test_rise_deck_has_the_slides_the_rule_sets(rise):
    nb = nbformat.read(ROOT / "notebooks" / LESSON, as_version=4)
    expected = sum(kind == "slide" for kind in slides.slide_types(nb))
    assert rise.page.locator(".reveal .slides > section").count() == expected


def test_rise_advances_through_slides(rise):
    page = rise.page
    page.keyboard.press("Escape")
    first = present(rise).inner_text()
    for _ in range(3):
        page.keyboard.press("Space")
    rise.wait_until(lambda: present(rise).inner_text() != first, 10,
                    "the present slide did not change after three presses of Space")


def test_rise_leaves_out_the_setup_cell(rise):
    cells = rise.page.locator(".reveal .jp-CodeCell", has_text="import mha").all()
    assert not [cell for cell in cells if cell.is_visible()]


def test_rise_runs_a_code_cell_in_the_notebook_kernel_and_shows_its_output(rise):
    advance_to(rise, PRINTING_CELL)  # it needs the set-up cell's imports: one kernel
    cell = code_cell(rise, PRINTING_CELL)
    run_cell(rise, cell)
    rise.wait_until(lambda: "[0.881, 0.119]" in cell.locator(
        ".jp-OutputArea-output").all_inner_texts()[0], 20, "the cell printed nothing")


@pytest.mark.xfail(strict=True, reason="ipywidgets views do not render in the RISE page "
                   "(module docstring: cause observed, workaround)")
def test_rise_shows_a_live_widget(rise):
    advance_to(rise, "ScalingExplorer(")
    run_cell(rise, code_cell(rise, "ScalingExplorer("))
    widget_cell = code_cell(rise, "ScalingExplorer(")
    rise.wait_until(lambda: widget_cell.locator(".widget-slider").count() > 0, 20,
                    "no slider rendered on the widget slide")


def test_rise_requests_stay_on_127_0_0_1(rise):
    assert rise.requests, "no request was recorded: the recorder is broken"
    assert rise.outside_requests() == []
