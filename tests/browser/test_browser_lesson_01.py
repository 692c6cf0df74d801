"""Lesson 01 in a real browser: it runs, and its explorer's two sliders answer the keyboard.

The stored outputs are cleared first, so everything checked here was produced
by the live kernel during this test: the slider is a live widget, and a new
image source means the kernel re-rendered the PNG.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

LESSON = "01_weighted_sum.ipynb"
NUMBER = r"(-?[\d.]+)"
PAIR = rf"\[{NUMBER}, {NUMBER}\]"
CAPTION = re.compile(rf"query {PAIR}: scores {PAIR} weights {PAIR} read out {PAIR}")


@pytest.fixture(scope="module")
def lesson_01_ran(run_lesson):
    """Lesson 01 opened, cleared and run once for this module's tests (in order)."""
    with run_lesson(LESSON) as lab_page:
        yield lab_page


def explorer(page):
    """The weighted-sum explorer's box: two sliders, an image and its caption."""
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


def numbers(caption: str) -> list[float]:
    """query (2), scores (2), weights (2), read-out (2), as the caption states them."""
    return [float(x) for x in CAPTION.search(caption).groups()]


def test_explorer_sliders_render(lesson_01_ran):
    box = explorer(lesson_01_ran.page)
    handles = box.locator(".widget-slider .noUi-handle")
    handles.first.wait_for(state="visible")
    assert handles.count() == 2
    assert box.locator("img").get_attribute("src")


def test_explorer_picture_has_all_three_panels_drawn(lesson_01_ran):
    # Two threads drawing the one figure at once (ipykernel 7.3) once left a blank PNG of the
    # right size here while the caption was right.
    import io

    import numpy as np
    from PIL import Image

    box = explorer(lesson_01_ran.page)
    png = lesson_01_ran.image_bytes(box.locator("img"))
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    thirds = np.array_split(pixels, 3, axis=1)             # keys | weights | values
    assert [int((third < 128).sum() > 500) for third in thirds] == [1, 1, 1]


def press_and_wait(page, box, slider_index: int, key: str) -> tuple[list[float], list[float]]:
    """Press ``key`` on slider ``slider_index``; wait for a new image; caption numbers before
    and after."""
    handle = box.locator(".widget-slider .noUi-handle").nth(slider_index)
    image = box.locator("img")
    src_before, caption_before = image.get_attribute("src"), caption_of(box)
    handle.focus()
    page.keyboard.press(key)
    try:
        page.wait_for_function("([img, src]) => img.getAttribute('src') !== src",
                               arg=[image.element_handle(), src_before], timeout=15_000)
    except Exception as error:
        raise AssertionError(f"the image did not change within 15 s of the key press; "
                             f"caption now {caption_of(box)!r}") from error
    page.wait_for_function("([el, text]) => el.innerText !== text",
                           arg=[box.locator(".widget-html", has_text=CAPTION).element_handle(),
                                caption_before], timeout=15_000)
    return numbers(caption_before), numbers(caption_of(box))


def test_arrow_key_on_angle_slider_turns_the_query_and_moves_weights_and_readout(lesson_01_ran):
    page = lesson_01_ran.page
    box = explorer(page)
    before, after = press_and_wait(page, box, 0, "ArrowRight")
    assert after[:2] != before[:2]                      # the query turned
    assert after[4:6] != before[4:6]                    # the weights moved
    assert after[6:] != before[6:]                      # the read-out moved
    assert after[4] + after[5] == pytest.approx(1.0, abs=0.011)
    x, y = after[6:]
    assert x / 2 + y / 4 == pytest.approx(1.0, abs=0.01)  # still on the segment of the values


def test_arrow_key_on_length_slider_stretches_the_query_and_sharpens_the_weights(lesson_01_ran):
    page = lesson_01_ran.page
    box = explorer(page)
    before, after = press_and_wait(page, box, 1, "ArrowRight")
    length = lambda n: (n[0] ** 2 + n[1] ** 2) ** 0.5  # noqa: E731
    assert length(after) > length(before)
    assert max(after[4:6]) >= max(before[4:6])          # a longer query: the larger weight grows


def test_page_requests_stay_on_127_0_0_1(lesson_01_ran):
    assert lesson_01_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_01_ran.outside_requests() == []
