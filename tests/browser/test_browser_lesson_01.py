"""Lesson 01 in a real browser: it runs, and its explorer answers the keyboard.

The stored outputs are cleared first, so everything checked here was produced
by the live kernel during this test: the slider is a live widget, and a new
image source means the kernel re-rendered the PNG.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

LESSON = "01_weighted_sum.ipynb"
CAPTION = re.compile(r"weights \[(-?[\d.]+), (-?[\d.]+)\] read out \[(-?[\d.]+), (-?[\d.]+)\]")


@pytest.fixture(scope="module")
def lesson_01_ran(run_lesson):
    """Lesson 01 opened, cleared and run once for this module's tests (in order)."""
    with run_lesson(LESSON) as lab_page:
        yield lab_page


def explorer(page):
    """The weighted-sum explorer's box: a slider, an image and its caption."""
    return (page.locator(".widget-vbox")
            .filter(has=page.locator(".widget-slider"))
            .filter(has=page.locator("img"))
            .filter(has_text=CAPTION)
            .last)


def caption_of(box) -> str:
    return box.locator(".widget-html", has_text=CAPTION).inner_text()


def test_run_all_cells_finishes_without_error_output(lesson_01_ran):
    assert lesson_01_ran.error_outputs() == []
    assert lesson_01_ran.widget_errors() == 0


def test_explorer_slider_renders(lesson_01_ran):
    box = explorer(lesson_01_ran.page)
    box.locator(".widget-slider .noUi-handle").wait_for(state="visible")
    assert box.locator("img").get_attribute("src")


def test_arrow_key_on_slider_redraws_image_and_caption(lesson_01_ran):
    page = lesson_01_ran.page
    box = explorer(page)
    handle = box.locator(".widget-slider .noUi-handle")
    image = box.locator("img")
    src_before, caption_before = image.get_attribute("src"), caption_of(box)
    w_before = float(CAPTION.search(caption_before).group(1))

    handle.focus()
    page.keyboard.press("ArrowRight" if w_before < 1 else "ArrowLeft")

    try:
        page.wait_for_function("([img, src]) => img.getAttribute('src') !== src",
                               arg=[image.element_handle(), src_before], timeout=15_000)
    except Exception as error:
        raise AssertionError(f"the image did not change within 15 s of the key press; "
                             f"caption now {caption_of(box)!r}") from error
    caption_after = caption_of(box)
    assert caption_after != caption_before
    w1, w2, *_ = (float(x) for x in CAPTION.search(caption_after).groups())
    assert w1 != w_before
    assert w1 + w2 == pytest.approx(1.0, abs=0.011)


def test_page_requests_stay_on_127_0_0_1(lesson_01_ran):
    assert lesson_01_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_01_ran.outside_requests() == []
