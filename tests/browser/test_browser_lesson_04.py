"""Lesson 04 in a real browser: it runs, and its mask explorer answers clicks.

The stored outputs are cleared first, so the explorer seen here is a live
widget of this run's kernel. A pressed grid cell (blocked key) is an
ipywidgets ToggleButton with the class ``mod-active``; each grid button's
title is its tooltip, "query i, key j". "The image changed" means new bytes
(SHA-256 of the PNG behind the <img>), not just a new blob: URL.

The tests share one run of the lesson; each one that clicks first puts the
explorer in a known preset, so each also passes alone (``-k``) or in another
order.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

LESSON = "04_masks.ipynb"
T = 5
# The presets as the lesson states them, True = blocked: causal blocks the future (key j > i),
# padding blocks the last two keys for every query.
CAUSAL = {(i, j) for i in range(T) for j in range(T) if j > i}
PADDING = {(i, j) for i in range(T) for j in range(T) if j >= T - 2}
CAPTION = re.compile(r"^(causal|padding|causal \+ padding|custom): row sums, mask before softmax "
                     r"\[[\d. ]+\]; zero after softmax \[[\d. ]+\]")
PRESSED = r"""(grid) => [...grid.querySelectorAll('button.widget-toggle-button')]
    .filter(b => b.classList.contains('mod-active')).map(b => b.title)"""
TITLE = re.compile(r"^query (\d+), key (\d+)$")


@pytest.fixture(scope="module")
def lesson_04_ran(run_lesson):
    """Lesson 04 opened, cleared and run once for this module's tests."""
    with run_lesson(LESSON) as lab_page:
        yield lab_page


def explorer(lab_page):
    """The output area of the mask explorer: the one whose widget holds the 5 x 5 grid."""
    return lab_page.widget_output(f".widget-gridbox button[title='query {T - 1}, key {T - 1}']")


def cell(box, i: int, j: int):
    return box.locator(f".widget-gridbox button.widget-toggle-button[title='query {i}, key {j}']")


def preset_button(box, name: str):
    return box.locator(".widget-toggle-buttons").get_by_role("button", name=name, exact=True)


def caption_of(box) -> str:
    return box.locator(".widget-html-content").inner_text()


def pressed(box) -> set[tuple[int, int]]:
    """(query, key) of every pressed grid button."""
    titles = box.locator(".widget-gridbox").evaluate(PRESSED)
    return {tuple(int(x) for x in TITLE.match(title).groups()) for title in titles}


def choose_preset(lab_page, box, name: str, expected: set[tuple[int, int]]) -> None:
    """Show preset ``name``: its grid, and a caption without a refusal from an earlier click."""
    caption = caption_of(box)
    if caption.startswith(f"{name}:"):
        if pressed(box) == expected and "refused" not in caption:
            return
        # Clicking the selected preset sends nothing; "custom" keeps the grid, clears the refusal.
        preset_button(box, "custom").click()
        lab_page.wait_until(lambda: caption_of(box).startswith("custom:"), 15,
                            lambda: f"preset 'custom' not shown; caption {caption_of(box)!r}")
    preset_button(box, name).click()
    lab_page.wait_until(
        lambda: caption_of(box).startswith(f"{name}:") and pressed(box) == expected, 15,
        lambda: f"preset {name!r} not shown; caption {caption_of(box)!r}, "
                f"pressed {sorted(pressed(box))}")


def test_run_all_cells_finishes_without_error_output(lesson_04_ran):
    assert lesson_04_ran.error_outputs() == []
    assert lesson_04_ran.widget_errors() == 0


def test_mask_explorer_renders_a_5_by_5_grid(lesson_04_ran):
    box = explorer(lesson_04_ran)
    assert box.count() == 1, f"expected one mask explorer, found {box.count()}"
    assert box.locator(".widget-gridbox button.widget-toggle-button").count() == T * T
    image = box.locator("img.widget-image")
    image.wait_for(state="visible")
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    assert CAPTION.match(caption_of(box)), caption_of(box)


def test_grid_click_redraws_image_and_caption(lesson_04_ran):
    box = explorer(lesson_04_ran)
    choose_preset(lesson_04_ran, box, "causal", CAUSAL)
    image = box.locator("img.widget-image")
    caption_before = caption_of(box)
    src_before, digest_before = image.get_attribute("src"), lesson_04_ran.image_digest(image)
    target = cell(box, T - 1, 0)  # the last query may read every key: blocking one is allowed

    target.click()

    lesson_04_ran.wait_until(lambda: caption_of(box) != caption_before, 15,
                             "the caption did not change after the click")
    assert caption_of(box).startswith("custom:")  # no longer a preset
    assert "refused" not in caption_of(box)
    assert pressed(box) == CAUSAL | {(T - 1, 0)}
    assert lesson_04_ran.wait_for_new_image(image, src_before) != digest_before


def test_padding_preset_presses_other_grid_buttons_and_redraws(lesson_04_ran):
    box = explorer(lesson_04_ran)
    choose_preset(lesson_04_ran, box, "causal", CAUSAL)
    image = box.locator("img.widget-image")
    src_before, digest_before = image.get_attribute("src"), lesson_04_ran.image_digest(image)

    preset_button(box, "padding").click()

    # The kernel sends the 25 button values first and the caption last: wait for both.
    lesson_04_ran.wait_until(
        lambda: pressed(box) == PADDING and caption_of(box).startswith("padding:"), 15,
        lambda: f"pressed buttons {sorted(pressed(box))}, expected the padding preset "
                f"{sorted(PADDING)}; caption {caption_of(box)!r}")
    assert "mod-active" in (preset_button(box, "padding").get_attribute("class") or "")
    assert lesson_04_ran.wait_for_new_image(image, src_before) != digest_before


def test_click_that_would_block_a_whole_row_is_refused(lesson_04_ran):
    box = explorer(lesson_04_ran)
    choose_preset(lesson_04_ran, box, "causal", CAUSAL)  # query 0 reads key 0 only
    target = cell(box, 0, 0)
    assert "mod-active" not in (target.get_attribute("class") or "")
    assert "refused" not in caption_of(box)

    target.click()

    lesson_04_ran.wait_until(lambda: "refused" in caption_of(box), 15,
                             lambda: f"no refusal in the caption {caption_of(box)!r}")
    assert re.search(r"refused: blocking key 0 would leave query 0 with no key",
                     caption_of(box)), caption_of(box)
    lesson_04_ran.wait_until(lambda: "mod-active" not in (target.get_attribute("class") or ""),
                             10, "the refused button stayed pressed")
    assert pressed(box) == CAUSAL  # nothing else changed either


def test_page_requests_stay_on_127_0_0_1(lesson_04_ran):
    assert lesson_04_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_04_ran.outside_requests() == []
