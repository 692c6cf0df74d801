"""Lesson 01 in a real browser: it runs, and its explorer's two sliders answer the keyboard.

The stored outputs are cleared first, so everything checked here was produced
by the live kernel during this test: the slider is a live widget, and a new
image source means the kernel re-rendered the PNG.
"""

from __future__ import annotations

import os
import re
import statistics

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]  # Run All on a busy 2-core machine

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


# -- fits the screen, sharp, usable, fast (issue 19) ------------------------------------------

# Time from a key press on a slider to the new picture in the page, measured in the page
# (performance.now()): the key listener runs at the press, a MutationObserver at the new src,
# and the picture counts as shown once img.decode() resolves (its pixels are ready to paint).
# Resolves [src ms, decoded ms], or null if no new src arrives within 10 s.
TIME_ONE_REDRAW = r"""async ([img, handle, key]) => {
    const start = performance.now();
    const shown = new Promise(resolve => {
        const observer = new MutationObserver(() => {
            observer.disconnect();
            const src = performance.now() - start;
            img.decode().catch(() => null).then(() => resolve([src, performance.now() - start]));
        });
        observer.observe(img, {attributes: true, attributeFilter: ['src']});
        setTimeout(() => { observer.disconnect(); resolve(null); }, 10000);
    });
    handle.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true}));
    return shown;
}"""
REDRAW_BUDGET_MS = 100
SCREEN = {"width": 1440, "height": 900}


def test_explorer_fits_a_1440_by_900_screen_with_its_controls(lesson_01_ran):
    page = lesson_01_ran.page
    page.set_viewport_size(SCREEN)
    box = explorer(page)
    box.scroll_into_view_if_needed()
    area = box.bounding_box()
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook").bounding_box()
    assert area["width"] <= notebook["width"], (area, notebook)  # no sideways scrolling
    assert area["height"] <= SCREEN["height"] - 200, area  # with JupyterLab's bars around it
    for control in box.locator(".widget-slider").all():
        rect = control.bounding_box()
        assert rect["x"] >= area["x"] - 1 and rect["x"] + rect["width"] <= area["x"] + area[
            "width"] + 1, rect


def test_explorer_picture_is_shown_at_its_natural_size_not_stretched(lesson_01_ran):
    page = lesson_01_ran.page
    page.set_viewport_size(SCREEN)
    image = explorer(page).locator("img")
    natural, shown = image.evaluate(
        "img => [[img.naturalWidth, img.naturalHeight], [img.clientWidth, img.clientHeight]]")
    assert natural[0] > 600 and shown == natural, (natural, shown)


def test_angle_slider_track_is_wide_enough_to_drag_by_the_degree(lesson_01_ran):
    # The default slider was about 120 px: a 30 px drag turned the query 85 degrees.
    page = lesson_01_ran.page
    page.set_viewport_size(SCREEN)
    box = explorer(page)
    track = box.locator(".widget-slider .noUi-target").first.bounding_box()
    assert track["width"] >= 360, track  # 360 degrees: at least a pixel per degree
    handle = box.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    h = handle.bounding_box()
    readout = box.locator(".widget-slider .widget-readout").first
    angle_before = float(readout.inner_text())
    x, y = h["x"] + h["width"] / 2, h["y"] + h["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 30, y, steps=6)
    page.mouse.up()
    angle_after = float(readout.inner_text())  # the slider's own value after the drag
    turned = angle_after - angle_before
    import math

    def caption_angle():
        qx, qy = numbers(caption_of(box))[:2]
        return math.degrees(math.atan2(qy, qx))

    # the kernel catches up: the picture's caption shows the angle the slider shows
    lesson_01_ran.wait_until(lambda: abs(caption_angle() - angle_after) < 0.5,
                             message=lambda: f"caption {caption_of(box)!r}, slider {angle_after}")
    print(f"lesson 01 explorer: a 30 px drag on a {track['width']:.0f} px track turned the "
          f"query {abs(turned):.0f} degrees")
    assert 5 <= abs(turned) <= 40, turned


def timed_presses(lab_page, box, key: str, presses: int) -> tuple[list[float], list[float]]:
    """Milliseconds from each of ``presses`` presses of ``key`` on the angle slider to the new
    picture's src, and to it decoded."""
    image, handle = box.locator("img"), box.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    to_src, to_decoded = [], []
    for _ in range(presses):
        timed = lab_page.page.evaluate(TIME_ONE_REDRAW, [image.element_handle(),
                                                         handle.element_handle(), key])
        assert timed is not None, "no new picture within 10 s of the key press"
        to_src.append(timed[0])
        to_decoded.append(timed[1])
        lab_page.wait_until_idle()  # the kernel has finished before the next press
    return to_src, to_decoded


# Above this load average per core the round trip measures the queue for the CPU, not the
# explorer (lesson 06's test has the same rule). After each redraw the kernel draws the next
# slider step ahead (Explorer.prefetch_keys: the move continued at once, the other neighbours
# after a 0.2 s pause), so each press of this test shows a picture drawn ahead; the kernel's
# redraw is then under a millisecond instead of about 20 ms, and the rest is the round trip
# page -> server -> kernel -> page and the page decoding the picture (10-25 ms). Measured on
# this 2-core machine with other helpers' work running (load 3.6-9.8, the 1-minute load average
# at the end of the run), key press to decoded picture, median of 9 presses, one run each:
# before (main, 8467b0e), 19 runs at load 1.6-8.9: 48-145 ms, the two above 100 ms (145, 142)
# at load 6.5 and 7.5, the ten at load <= 4.6 50-85 ms. After, 12 runs at load 3.6-9.8: 43-80
# ms, none above 100 ms; angles seen before 38-72 ms (before: 37-79). Command:
# PYTHONPATH=$PWD/src .venv/bin/python -m pytest tests/browser/test_browser_lesson_01.py
# -k redraws_within -s. So the budget is asserted up to 2 per core; above that a median over
# 100 ms is an xfail that keeps the numbers.
BUSY_LOAD_PER_CORE = 2.0


def test_explorer_redraws_within_100_ms_of_a_key_press_in_the_browser(lesson_01_ran):
    box = explorer(lesson_01_ran.page)
    to_src, to_decoded = timed_presses(lesson_01_ran, box, "ArrowRight", 9)  # 9 angles drawn ahead
    back_src, back_decoded = timed_presses(lesson_01_ran, box, "ArrowLeft", 9)  # seen before
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    median = statistics.median(to_decoded)
    print(f"lesson 01 explorer, key press to new picture decoded (ms): median {median:.0f}, "
          f"{[round(t) for t in to_decoded]} (to its src: {[round(t) for t in to_src]}); "
          f"angles seen before: median {statistics.median(back_decoded):.0f}, "
          f"{[round(t) for t in back_decoded]} (to src {[round(t) for t in back_src]}); "
          f"load average {load:.1f} on {cores} cores")
    if median >= REDRAW_BUDGET_MS and load > BUSY_LOAD_PER_CORE * cores:
        pytest.xfail(f"median {median:.0f} ms with load average {load:.1f} on {cores} cores: "
                     f"{[round(t) for t in to_decoded]} ms")
    assert median < REDRAW_BUDGET_MS, f"median {median:.0f} ms: {[round(t) for t in to_decoded]}"


def test_check_cells_show_collapsed_and_solutions_folded(lesson_01_ran):
    # A learner reads prose, code and pictures: the cells that only pin numbers show as a
    # collapsed placeholder, and the your-turn solutions stay folded until opened.
    page = lesson_01_ran.page
    assert page.locator(".jp-Notebook .jp-InputPlaceholder").count() >= 3
    details = page.locator(".jp-RenderedMarkdown details", has_text="Solution")
    assert details.count() == 2
    assert details.evaluate_all("ds => ds.map(d => d.open)") == [False, False]
    assert page.locator(".jp-OutputArea-output", has_text="Not yet:").count() == 2
