"""Lesson 06 in a real browser, on a 1440 x 900 screen: it runs, and its HeadExplorer fits the
screen with its controls, is drawn sharp (one PNG pixel per screen pixel), shows a picked
layer or head in under 100 ms as the browser sees it, shows the kernel's picture for that
(layer, head), and answers each control.

The stored outputs are cleared first, so the explorer seen here is a live widget of this run's
kernel. Tests pick options the way a person does (the <select> of a dropdown, typing into the
letters box), then check the caption and that the image shows different bytes (SHA-256 of the
PNG behind the <img>, not just a new blob: URL). Every head's picture is in the page, in
ipywidgets Stacks that show only the picked one: a pick puts a new <img> in the page (the
browser switches it, no round trip to the kernel), so tests read the one visible <img>. Tests
act relative to the current state, so each also passes alone (``-k``) or in another order.
"""

from __future__ import annotations

import os
import re
import statistics

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

LESSON = "06_multi_head.ipynb"
SCREEN = {"width": 1440, "height": 900}
CAPTION = re.compile(r"layer (\d+), head (\d+): previous-token score ([\d.]+), "
                     r"(no repeat in the input|induction score ([\d.]+))( \(layer (\d), head (\d) "
                     r"removed\))?")
NO_REPEAT = "18 letters, no repeat (seed 2)"  # mha.widgets.heads.SEQUENCES
REDRAW_BUDGET_MS = 100
# New letters or a removed head need the model and a full draw in the kernel; the picked view
# is drawn and sent first. Measured, not budgeted: a ceiling only catches a regression.
NEW_INPUT_CEILING_MS = 2000

# Run All has ended when every code cell that shows a prompt shows a number. Check cells are
# stored collapsed (their source hidden), and a collapsed cell shows an empty prompt, so the
# shared clear_and_run_all (which waits for every prompt to hold a number) would wait forever.
SHOWN_PROMPTS = "[...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]" \
    ".map(p => p.textContent.trim()).filter(p => p !== '')"
NONE_NUMBERED = (f"() => {{ const p = {SHOWN_PROMPTS}; "
                 r"return p.length > 0 && p.every(t => !/\d/.test(t)); }")
ALL_NUMBERED = (f"() => {{ const p = {SHOWN_PROMPTS}; "
                r"return p.length > 0 && p.every(t => /^\[\d+\]:$/.test(t)); }")

# Time one pick as the page sees it: from the <select>'s change event to a new picture decoded
# in the visible <img> (a new <img> element for a layer or head pick, a new src for new
# letters). Resolves -1 if nothing arrives within 10 s.
TIMED_PICK = r"""async ([box, select, index]) => {
    const before = box.querySelector('img.widget-image');
    const srcBefore = before && before.src;
    const start = performance.now();
    const shown = new Promise((resolve) => {
        const check = () => {
            const img = box.querySelector('img.widget-image');
            if (!img || !img.src || (img === before && img.src === srcBefore)) return;
            observer.disconnect();
            img.decode().catch(() => null).then(() => resolve(performance.now() - start));
        };
        const observer = new MutationObserver(check);
        observer.observe(box, {childList: true, subtree: true, attributes: true,
                               attributeFilter: ['src']});
    });
    const late = new Promise((resolve) => setTimeout(() => resolve(-1), 10000));
    select.selectedIndex = index;
    select.dispatchEvent(new Event('change', {bubbles: true}));
    return Promise.race([shown, late]);
}"""


@pytest.fixture(scope="module")
def lesson_06_ran(lab_server, open_recorded_page):
    with open_recorded_page() as lab_page:
        lab_page.page.set_viewport_size(SCREEN)
        try:
            lab_page.open_notebook(lab_server, LESSON)
            run_all(lab_page, timeout=600_000)
            explorer(lab_page).scroll_into_view_if_needed()
            yield lab_page
        finally:
            lab_server.stop_kernels(LESSON)


def run_all(lab_page, timeout: float) -> None:
    """Clear every output, run all cells, wait until each shown prompt has a number and the
    kernel is idle."""
    lab_page.menu("Edit", "Clear Outputs of All Cells")
    lab_page.page.wait_for_function(NONE_NUMBERED, timeout=10_000)
    lab_page.menu("Run", "Run All Cells")
    lab_page.page.wait_for_function(ALL_NUMBERED, timeout=timeout, polling=500)
    lab_page.wait_until_idle(timeout)


def explorer(lab_page):
    """The head explorer's output area: the one whose widget has the "input" dropdown."""
    return lab_page.widget_output(".widget-dropdown", has_text="input")


def dropdown(box, description: str):
    return box.locator(".widget-dropdown", has_text=re.compile(f"^{description}")).locator(
        "select")


def picture(box):
    """The visible picture (a Stack keeps only the picked view's <img> in the page)."""
    return box.locator("img.widget-image:visible")


def letters_box(box):
    return box.locator(".widget-text", has_text="letters").locator("input")


def caption_of(box) -> re.Match:
    text = box.locator(".widget-html-content").inner_text()
    match = CAPTION.search(text)
    assert match, f"the caption does not read like the head explorer's: {text!r}"
    return match


def selected(box, description: str) -> str:
    return dropdown(box, description).evaluate("s => s.selectedIndex < 0 ? '' : "
                                               "s.options[s.selectedIndex].text")


def change_and_wait(lab_page, box, act, message: str):
    """Run ``act()`` (a person's action); wait for a new caption and a new picture."""
    image = picture(box)
    before, src_before = caption_of(box).group(0), image.get_attribute("src")
    digest_before = lab_page.image_digest(image)
    act()
    after = lab_page.wait_until(lambda: (m := caption_of(box)).group(0) != before and m, 15,
                                lambda: f"the caption did not change after {message}")
    return after, digest_before, lab_page.wait_for_new_image(image, src_before)


def pick(lab_page, description: str, label: str):
    box = explorer(lab_page)
    return change_and_wait(lab_page, box, lambda: dropdown(box, description).select_option(
        label=label), f"picking {description} {label!r}")


def other(box, description: str) -> str:
    options = dropdown(box, description).locator("option").all_inner_texts()
    return next(o for o in options if o != selected(box, description))


def test_run_all_cells_finishes_without_error_output(lesson_06_ran):
    assert lesson_06_ran.error_outputs() == []
    assert lesson_06_ran.widget_errors() == 0


def test_head_explorer_renders_its_controls_an_image_and_a_caption(lesson_06_ran):
    box = explorer(lesson_06_ran)
    assert box.count() == 1, f"expected one head explorer, found {box.count()}"
    for description in ("layer", "head", "remove", "input"):
        assert dropdown(box, description).is_visible(), description
    assert letters_box(box).is_visible()
    image = picture(box)
    image.wait_for(state="visible")
    assert box.locator("img.widget-image").count() == 1  # the other views are not in the page
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    assert caption_of(box).group(1) == selected(box, "layer")


def test_the_explorer_and_its_controls_fit_a_1440_x_900_screen(lesson_06_ran):
    box = explorer(lesson_06_ran)
    widget = box.locator(".widget-vbox").first
    widget.scroll_into_view_if_needed()
    area = lesson_06_ran.page.locator(".jp-NotebookPanel .jp-Notebook").bounding_box()
    drawn = widget.bounding_box()
    assert drawn["height"] <= area["height"], (
        f"the explorer is {drawn['height']:.0f} px tall; the notebook shows {area['height']:.0f}")
    assert drawn["x"] >= area["x"] and drawn["x"] + drawn["width"] <= area["x"] + area["width"], (
        f"the explorer spans x {drawn['x']:.0f}..{drawn['x'] + drawn['width']:.0f}; the "
        f"notebook {area['x']:.0f}..{area['x'] + area['width']:.0f}")
    for part in (dropdown(box, "layer"), letters_box(box), picture(box),
                 box.locator(".widget-html-content")):
        shown = part.bounding_box()
        assert area["y"] <= shown["y"] and shown["y"] + shown["height"] <= area["y"] + area[
            "height"], "a control or the picture is outside the visible notebook area"


def test_the_picture_is_shown_at_its_own_pixel_size(lesson_06_ran):
    image = picture(explorer(lesson_06_ran))
    natural, shown, ratio = image.evaluate(
        "img => [[img.naturalWidth, img.naturalHeight], [img.clientWidth, img.clientHeight], "
        "window.devicePixelRatio]")
    assert [round(s * ratio) for s in shown] == natural, (
        f"a {natural[0]} x {natural[1]} picture is drawn at {shown[0]} x {shown[1]} CSS px "
        f"(device pixel ratio {ratio}): scaled, so blurred")


def timed_picks(lab_page, description: str, picks: int = 9) -> list[float]:
    """Milliseconds from each of ``picks`` picks of the next option of dropdown
    ``description`` to its picture decoded in the page."""
    box = explorer(lab_page)
    output, select = box.element_handle(), dropdown(box, description).element_handle()
    n_options = select.evaluate("s => s.options.length")
    times = []
    for _ in range(picks):
        index = (select.evaluate("s => s.selectedIndex") + 1) % n_options
        times.append(lab_page.page.evaluate(TIMED_PICK, [output, select, index]))
        lab_page.wait_until_idle()  # the kernel has taken the pick in before the next one
    assert -1 not in times, f"a picture never arrived within 10 s: {times}"
    return times


@pytest.mark.parametrize("description", ["head", "layer"])
def test_a_picked_layer_or_head_shows_in_under_100_ms_in_the_browser(lesson_06_ran,
                                                                     description):
    times = timed_picks(lesson_06_ran, description)
    median = statistics.median(times)
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    print(f"{description} pick to picture in the browser: median {median:.0f} ms over "
          f"{len(times)} picks {[round(t) for t in times]} ms (load average {load:.1f} on "
          f"{cores} cores)")
    assert median < REDRAW_BUDGET_MS, f"median {median:.0f} ms: {[round(t) for t in times]}"


def test_new_letters_show_the_picked_view_first(lesson_06_ran):
    # The kernel draws and sends the picked head's picture before the 7 others.
    times = timed_picks(lesson_06_ran, "input", picks=3)
    print(f"new input to picture in the browser: {[round(t) for t in times]} ms (load average "
          f"{os.getloadavg()[0]:.1f})")
    assert max(times) < NEW_INPUT_CEILING_MS, times


def test_each_pick_shows_the_kernels_picture_for_that_layer_and_head(lesson_06_ran):
    import hashlib

    from mha.widgets import HeadExplorer

    box = explorer(lesson_06_ran)
    # The same model, letters and removed head in this process: the same picture bytes.
    expected = HeadExplorer()
    expected.letters_box.value = letters_box(box).input_value()
    removed = re.fullmatch(r"layer (\d), head (\d)", selected(box, "remove"))
    expected.removed_box.value = tuple(int(g) for g in removed.groups()) if removed else ()
    digests = {(layer, head): hashlib.sha256(expected.picture(layer, head)).hexdigest()
               for layer in range(2) for head in range(4)}
    assert len(set(digests.values())) == len(digests)  # every head's picture differs
    for layer, head in digests:
        for description, label, group in (("layer", layer, 1), ("head", head, 2)):
            if caption_of(box).group(group) != str(label):
                dropdown(box, description).select_option(label=str(label))
        want = (str(layer), str(head))
        shown = lesson_06_ran.wait_until(
            lambda want=want: caption_of(box).group(1, 2) == want
            and lesson_06_ran.image_digest(picture(box)), 15,
            f"layer {layer}, head {head} was not shown")
        names = [view for view, digest in digests.items() if digest == shown]
        assert names == [(layer, head)], (
            f"picked layer {layer}, head {head}; the page shows the picture of {names}")


def test_picking_another_head_redraws_that_heads_map(lesson_06_ran):
    box = explorer(lesson_06_ran)
    before_layer, target = selected(box, "layer"), other(box, "head")
    after, digest_before, digest_after = pick(lesson_06_ran, "head", target)
    assert after.group(2) == target and after.group(1) == before_layer
    assert digest_after != digest_before


def test_picking_another_layer_redraws_that_layers_map(lesson_06_ran):
    box = explorer(lesson_06_ran)
    before_head, target = selected(box, "head"), other(box, "layer")
    after, digest_before, digest_after = pick(lesson_06_ran, "layer", target)
    assert after.group(1) == target and after.group(2) == before_head
    assert digest_after != digest_before


def test_picking_an_input_without_a_repeat_drops_the_induction_score(lesson_06_ran):
    box = explorer(lesson_06_ran)
    if letters_box(box).input_value() != "MULTIHEAD" * 2:
        pick(lesson_06_ran, "input", "MULTIHEAD twice")
    after, digest_before, digest_after = pick(lesson_06_ran, "input", NO_REPEAT)
    assert after.group(4) == "no repeat in the input"
    assert digest_after != digest_before


def test_typed_letters_are_drawn_and_scored(lesson_06_ran):
    box = explorer(lesson_06_ran)
    typed = "ABCDEFGABCDEFG" if letters_box(box).input_value() != "ABCDEFGABCDEFG" else "XYZWXYZW"

    def type_letters():
        letters_box(box).fill(typed.lower())
        letters_box(box).press("Enter")

    after, digest_before, digest_after = change_and_wait(lesson_06_ran, box, type_letters,
                                                         f"typing {typed!r}")
    assert after.group(5) is not None  # a block written twice: an induction score
    assert selected(box, "input") == ""  # no preset matches typed letters
    assert digest_after != digest_before


def test_removing_the_previous_token_head_takes_the_induction_out_of_layer_1(lesson_06_ran):
    box = explorer(lesson_06_ran)
    if caption_of(box).group(7) is not None:
        pick(lesson_06_ran, "remove", "nothing")
    if letters_box(box).input_value() != "MULTIHEAD" * 2:
        pick(lesson_06_ran, "input", "MULTIHEAD twice")
    for description, label, group in (("layer", "1", 1), ("head", "0", 2)):
        if caption_of(box).group(group) != label:
            pick(lesson_06_ran, description, label)
    assert selected(box, "remove") == "nothing"  # the dropdown shows it, not a blank
    intact = float(caption_of(box).group(5))
    after, _, _ = pick(lesson_06_ran, "remove", "layer 0, head 0")
    assert after.group(7, 8) == ("0", "0")
    assert intact > 0.9 and float(after.group(5)) < 0.2


def test_page_requests_stay_on_127_0_0_1(lesson_06_ran):
    assert lesson_06_ran.requests, "no request was recorded: the recorder is broken"
    assert lesson_06_ran.outside_requests() == []
