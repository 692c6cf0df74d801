"""Lesson 00 opens in JupyterLab and its markdown renders, offline."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

LESSON = "00_start_here.ipynb"


@pytest.fixture(scope="module")
def lesson_00_open(lab_server, open_recorded_page):
    if not (lab_server.root / LESSON).is_file():
        pytest.fail(f"notebooks/{LESSON} is missing")
    with open_recorded_page() as lab_page:
        lab_page.open_notebook(lab_server, LESSON)
        yield lab_page


def test_lesson_00_markdown_renders_a_heading(lesson_00_open):
    heading = lesson_00_open.page.locator(".jp-MarkdownCell .jp-RenderedMarkdown h1").first
    heading.wait_for(state="visible")
    assert heading.inner_text().strip()


def test_lesson_00_page_requests_stay_on_127_0_0_1(lesson_00_open):
    assert lesson_00_open.requests, "no request was recorded: the recorder is broken"
    assert lesson_00_open.outside_requests() == []
