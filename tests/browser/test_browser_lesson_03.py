"""Lesson 03 in a real browser: it runs, and its scaling explorer answers the page.

The stored outputs are cleared first, so the explorer seen here is a live
widget of this run's kernel. "The image changed" means new bytes (SHA-256 of
the PNG behind the <img>), not just a new blob: URL.

The tests share one run of the lesson and act relative to the explorer's
current state, so each also passes alone (``-k``) or in another order.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

LESSON = "03_scaling.ipynb"
CHECKBOX_LABEL = "divide by sqrt(d_k)"
D_K_OPTIONS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]  # ScalingExplorer.D_K_OPTIONS
CAPTION = re.compile(r"d_k=(\d+), (divided|not divided): largest weight ([\d.]+), "
                     r"gradient size \(Jacobian norm\) (\S+)")


@pytest.fixture(scope="module")
def lesson_03_ran(run_lesson):
    """Lesson 03 opened, cleared and run once for this module's tests."""
    with run_lesson(LESSON) as lab_page:
        yield lab_page


def explorer(lab_page):
    """The output area of the scaling explorer: the one whose widget has the checkbox."""
    return lab_page.widget_output(".widget-checkbox", has_text=CHECKBOX_LABEL)


def caption_of(box) -> re.Match:
    text = box.locator(".widget-html-content").inner_text()
    match = CAPTION.search(text)
    assert match, f"the caption does not read like the scaling explorer's: {text!r}"
    return match


def wait_for_caption(lab_page, box, ok, what: str) -> re.Match:
    """The caption's match once ``ok(match)`` holds (AssertionError after 15 s)."""
    def check():
        match = caption_of(box)
        return match if ok(match) else None

    return lab_page.wait_until(check, 15, lambda: f"{what}; caption {caption_of(box).group(0)!r}")


def test_run_all_cells_finishes_without_error_output(lesson_03_ran):
    assert lesson_03_ran.error_outputs() == []
    assert lesson_03_ran.widget_errors() == 0


def test_scaling_explorer_renders(lesson_03_ran):
    box = explorer(lesson_03_ran)
    assert box.count() == 1, f"expected one scaling explorer, found {box.count()}"
    box.locator(".widget-slider .noUi-handle").wait_for(state="visible")
    assert box.locator(".widget-checkbox input[type=checkbox]").is_visible()
    image = box.locator("img.widget-image")
    image.wait_for(state="visible")
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    d_k = int(caption_of(box).group(1))
    assert d_k in D_K_OPTIONS
    assert box.locator(".widget-readout").inner_text().strip() == str(d_k)


def test_checkbox_click_redraws_image_and_caption(lesson_03_ran):
    box = explorer(lesson_03_ran)
    checkbox = box.locator(".widget-checkbox input[type=checkbox]")
    image = box.locator("img.widget-image")
    before = caption_of(box)
    src_before, digest_before = image.get_attribute("src"), lesson_03_ran.image_digest(image)
    was_checked = checkbox.is_checked()
    assert was_checked == (before.group(2) == "divided")

    checkbox.click()

    after = wait_for_caption(lesson_03_ran, box, lambda m: m.group(2) != before.group(2),
                             "the caption did not switch between divided and not divided")
    assert checkbox.is_checked() != was_checked
    assert after.group(1) == before.group(1)  # same d_k
    assert float(after.group(3)) != float(before.group(3))  # the largest weight moved
    assert lesson_03_ran.wait_for_new_image(image, src_before) != digest_before


def test_arrow_key_on_d_k_slider_redraws_image_and_caption(lesson_03_ran):
    page = lesson_03_ran.page
    box = explorer(lesson_03_ran)
    handle = box.locator(".widget-slider .noUi-handle")
    image = box.locator("img.widget-image")
    before = caption_of(box)
    src_before, digest_before = image.get_attribute("src"), lesson_03_ran.image_digest(image)
    index = D_K_OPTIONS.index(int(before.group(1)))
    step = 1 if index + 1 < len(D_K_OPTIONS) else -1

    handle.focus()
    page.keyboard.press("ArrowRight" if step == 1 else "ArrowLeft")

    expected = D_K_OPTIONS[index + step]
    after = wait_for_caption(lesson_03_ran, box, lambda m: m.group(1) == str(expected),
                             f"the caption did not reach d_k={expected}")
    assert box.locator(".widget-readout").inner_text().strip() == str(expected)
    assert after.group(2) == before.group(2)  # the checkbox was not touched
    assert lesson_03_ran.wait_for_new_image(image, src_before) != digest_before


def test_page_requests_stay_on_127_0_0_1(lesson_03_ran):
    assert lesson_03_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_03_ran.outside_requests() == []
