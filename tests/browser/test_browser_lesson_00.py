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


def test_lesson_00_your_turn_output_says_not_yet_and_its_solution_is_folded(lesson_00_open):
    # 00 explains the your-turn cells to a learner: the stored stub's line and a closed
    # "Solution" are what they see first.
    page = lesson_00_open.page
    verdict = page.locator(".jp-OutputArea-output", has_text="Not yet: causal_mask")
    verdict.first.wait_for(state="visible")
    details = page.locator(".jp-RenderedMarkdown details", has_text="Solution")
    assert details.count() >= 1
    assert details.first.evaluate("d => d.open") is False
    assert not details.first.locator("pre").first.is_visible()


def test_lesson_00_shows_the_map_of_the_computation(lesson_00_open):
    page = lesson_00_open.page
    images = page.locator(".jp-OutputArea-output img")
    images.first.wait_for(state="visible")
    sizes = images.evaluate_all("imgs => imgs.map(i => [i.naturalWidth, i.naturalHeight])")
    assert any(w > 2.5 * h for w, h in sizes), sizes  # the wide, short map is among them
