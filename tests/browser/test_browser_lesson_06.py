"""Lesson 06 in a real browser: it runs, and its HeadExplorer answers each dropdown.

The stored outputs are cleared first, so the explorer seen here is a live widget
of this run's kernel. Each test picks another option the way a person does (the
<select> of one dropdown), then checks the caption names the new layer, head or
input, and that the image shows different bytes (SHA-256 of the PNG behind the
<img>, not just a new blob: URL). Tests act relative to the current state, so
each also passes alone (``-k``) or in another order.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

LESSON = "06_multi_head.ipynb"
CAPTION = re.compile(r"layer (\d+), head (\d+): previous-token score ([\d.]+), "
                     r"(no repeat in the input|induction score ([\d.]+))")
NO_REPEAT = "18 letters, no repeat (seed 2)"  # mha.widgets.heads.SEQUENCES


@pytest.fixture(scope="module")
def lesson_06_ran(lab_server, open_recorded_page):
    with open_recorded_page() as lab_page:
        try:
            lab_page.open_notebook(lab_server, LESSON)
            lab_page.clear_and_run_all(timeout=180_000)
            yield lab_page
        finally:
            lab_server.stop_kernels(LESSON)


def explorer(lab_page):
    """The head explorer's output area: the one whose widget has the "input" dropdown."""
    return lab_page.widget_output(".widget-dropdown", has_text="input")


def dropdown(box, description: str):
    return box.locator(".widget-dropdown", has_text=re.compile(f"^{description}")).locator(
        "select")


def caption_of(box) -> re.Match:
    text = box.locator(".widget-html-content").inner_text()
    match = CAPTION.search(text)
    assert match, f"the caption does not read like the head explorer's: {text!r}"
    return match


def pick_another(lab_page, description: str, choose):
    """Pick ``choose(options, current)`` in the dropdown; return (before, after, digests)."""
    box = explorer(lab_page)
    select = dropdown(box, description)
    image = box.locator("img.widget-image")
    before = caption_of(box)
    src_before, digest_before = image.get_attribute("src"), lab_page.image_digest(image)
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("s => s.options[s.selectedIndex].text")
    target = choose(options, current)

    select.select_option(label=target)

    after = lab_page.wait_until(
        lambda: (m := caption_of(box)).group(0) != before.group(0) and m, 15,
        lambda: f"the caption did not change after picking {description} {target!r}")
    return before, after, target, digest_before, lab_page.wait_for_new_image(image, src_before)


def other(options, current):
    return next(o for o in options if o != current)


def test_run_all_cells_finishes_without_error_output(lesson_06_ran):
    assert lesson_06_ran.error_outputs() == []
    assert lesson_06_ran.widget_errors() == 0


def test_head_explorer_renders_three_dropdowns_an_image_and_a_caption(lesson_06_ran):
    box = explorer(lesson_06_ran)
    assert box.count() == 1, f"expected one head explorer, found {box.count()}"
    for description in ("layer", "head", "input"):
        assert dropdown(box, description).is_visible(), description
    image = box.locator("img.widget-image")
    image.wait_for(state="visible")
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    match = caption_of(box)
    assert match.group(1) == dropdown(box, "layer").evaluate(
        "s => s.options[s.selectedIndex].text")


def test_picking_another_head_redraws_that_heads_map(lesson_06_ran):
    before, after, target, digest_before, digest_after = pick_another(
        lesson_06_ran, "head", other)
    assert after.group(2) == target and after.group(1) == before.group(1)
    assert digest_after != digest_before


def test_picking_another_layer_redraws_that_layers_map(lesson_06_ran):
    before, after, target, digest_before, digest_after = pick_another(
        lesson_06_ran, "layer", other)
    assert after.group(1) == target and after.group(2) == before.group(2)
    assert digest_after != digest_before


def test_picking_an_input_without_a_repeat_drops_the_induction_score(lesson_06_ran):
    box = explorer(lesson_06_ran)
    if dropdown(box, "input").evaluate("s => s.options[s.selectedIndex].text") == NO_REPEAT:
        dropdown(box, "input").select_option(index=0)
        lesson_06_ran.wait_until(lambda: caption_of(box).group(5) is not None, 15,
                                 "the caption did not show an induction score again")
    before, after, _, digest_before, digest_after = pick_another(
        lesson_06_ran, "input", lambda options, current: NO_REPEAT)
    assert before.group(5) is not None
    assert after.group(4) == "no repeat in the input"
    assert after.group(1, 2) == before.group(1, 2)  # same layer and head
    assert digest_after != digest_before


def test_page_requests_stay_on_127_0_0_1(lesson_06_ran):
    assert lesson_06_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_06_ran.outside_requests() == []
