"""The class workaround for widgets under RISE (tests/browser/test_browser_rise.py says
why they do not render there): the same lesson in JupyterLab's notebook view, in
Presentation Mode (View > Appearance), runs its setup cell and shows the live widget."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

LESSON = "03_scaling.ipynb"


def run_cell(lab_page, text: str):
    """Click into the first code cell showing ``text``, Shift+Enter, wait for its number."""
    cell = lab_page.page.locator(".jp-Notebook .jp-CodeCell", has_text=text).first
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-editor").click()
    lab_page.page.keyboard.press("Shift+Enter")
    lab_page.wait_until(
        lambda: re.fullmatch(r"\[\d+\]:", cell.locator(".jp-InputPrompt").inner_text().strip()),
        60, f"the cell with {text!r} did not run")
    return cell


def test_widget_renders_in_the_notebook_view_in_presentation_mode(lab_server, lab_page):
    try:
        lab_page.open_notebook(lab_server, LESSON)
        page = lab_page.page
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^View$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Appearance$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Presentation Mode$")).click()
        lab_page.wait_until(
            lambda: lab_page.page.locator("body[data-jp-presentation-mode='true'], "
                                          ".jp-mod-presentationMode").count() > 0,
            10, "Presentation Mode did not switch on")
        run_cell(lab_page, "import mha")
        cell = run_cell(lab_page, "ScalingExplorer(")
        slider = cell.locator(".widget-slider .noUi-handle")
        slider.wait_for(state="visible", timeout=30_000)
        assert cell.locator("img.widget-image").evaluate(
            "img => img.complete && img.naturalWidth > 100")
        assert lab_page.widget_errors() == 0
        assert lab_page.outside_requests() == []
    finally:
        lab_server.stop_kernels(LESSON)
