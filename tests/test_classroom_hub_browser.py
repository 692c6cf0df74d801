"""The class on JupyterHub through the screens people use, in headless Chromium.

tests/test_classroom_hub.py drives the same hub through its REST APIs; this module drives the
instructor's whole flow through the Formgrader as JupyterLab shows it (Nbgrader menu >
Formgrader, a tab framing the Formgrader page): generate, release, collect, autograde each
submission, generate and release feedback; its tables must fit its tab at 1440 x 900 and at
1024 x 768 and a submission's failed check message must wrap. One student fetches the set from
the Assignments list (its folder must show in the file browser within 3 s); both hand in through
the API, then that student opens their feedback from the "(view feedback)" link of the
Assignments list and reads a page with its math typeset, wrapped between words at 1440 and
1024 px, and no request leaving the machine (their file browser stays where it was); nbgrader's
Validate button shows on the set, not on lesson 00. Screenshots of each
step go to test-artifacts/browser/hub/.

Needs root (real Unix users) and Debian's Chromium; skipped otherwise, a failure under CI.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_classroom import MASK_AFTER_SOFTMAX  # noqa: E402
from test_classroom_hub import (  # noqa: E402
    ASSIGNMENT,
    Person,
    entry,
    make,
    require_root,
    running_class,
    work_on_it,
)
from words_on_screen import MEASURE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "browser" / "hub"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
INSTRUCTOR, RIGHT, WRONG = "mhaw-lecturer", "mhaw-ada", "mhaw-alan"
ANSWERS = {RIGHT: {}, WRONG: {"masked_attention": MASK_AFTER_SOFTMAX}}
SLOW = 240_000  # ms: a server start or a grading step on a busy 2-core machine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _browser_or_skip():
    require_root()
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is missing"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def log_in(browser, room, name):
    """A new browser context (its own cookies) logged in as ``name``, on its JupyterLab."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    outside = []
    page.on("request", lambda r: outside.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:", "about:")) else None)
    page.outside = outside
    page.goto(f"{room.base}/hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", room.passwords[name])
    page.click("#login_submit", no_wait_after=True)
    page.wait_for_url(f"**/user/{name}/lab**", timeout=SLOW)
    page.wait_for_selector("#jp-main-dock-panel", timeout=SLOW)
    return page


def menu(page, top, item):
    page.click(f".lm-MenuBar-itemLabel:text-is('{top}')")
    page.click(f".lm-Menu-itemLabel:text-is('{item}')")


def formgrader_frame(page):
    """The frame of the Formgrader tab, once it has loaded its page."""
    deadline = time.monotonic() + SLOW / 1000
    while time.monotonic() < deadline:
        found = [f for f in page.frames if "/formgrader" in f.url]
        if found:
            return found[0]
        page.wait_for_timeout(250)
    urls = [f.url for f in page.frames]
    raise AssertionError(f"no Formgrader frame within {SLOW // 1000} s: {urls}")


# The Formgrader page in its tab: how wide the page is against the tab, and each table against
# the box that holds it (DataTables' wrapper) and whether that box scrolls sideways itself.
TABLES = """() => ({page: document.documentElement.clientWidth,
    pageScroll: document.documentElement.scrollWidth,
    tables: [...document.querySelectorAll('table')].map(t => {
        const box = t.closest('.dataTables_wrapper') || t.parentElement;
        const r = t.getBoundingClientRect();
        return {width: Math.round(r.width), right: Math.round(r.right), box: box.clientWidth,
                scrolls: ['auto', 'scroll'].includes(getComputedStyle(box).overflowX)};
    }),
    outside: [...document.querySelectorAll('td a')].filter(a =>
        a.getBoundingClientRect().right > document.documentElement.clientWidth + 1).length})"""
SIZES = {1440: 900, 1024: 768}


def tables(frame, name):
    """TABLES on the Formgrader's page, once its table has rows, with the browser window at
    1440 x 900 and at 1024 x 768 (then back to 1440 x 900)."""
    frame.wait_for_selector("table tbody tr td", timeout=SLOW)
    seen = []
    for width, height in SIZES.items():
        frame.page.set_viewport_size({"width": width, "height": height})
        frame.page.wait_for_timeout(800)
        seen.append({"view": name, "width": width, **frame.evaluate(TABLES)})
        frame.page.screenshot(path=str(SHOTS / f"tables-{name}-{width}.png"))
    frame.page.set_viewport_size({"width": 1440, "height": 900})
    frame.page.wait_for_timeout(300)
    return seen


# The words of the outputs of the page in JupyterLab's HTML viewer broken inside the word,
# and the output boxes cut off (tests/words_on_screen.py).
WORDS = "(body) => (" + MEASURE + ")(body.ownerDocument, '.output_area pre')"
VALIDATE = ".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button"
BREADCRUMBS = ".jp-FileBrowser .jp-BreadCrumbs"


# The Formgrader's open dialog: its OK button (nbgrader gives it the classes "btn btn-primary
# close", and Bootstrap's .close made it 20 % opaque, with no background or border: it looked
# disabled) and each log box against the dialog (a log line of long paths ran past the dialog's
# right edge, cut off).
DIALOG = """() => {
    const modal = [...document.querySelectorAll('.modal')].find(m => m.offsetParent !== null
        || getComputedStyle(m).display === 'block');
    const content = modal.querySelector('.modal-content').getBoundingClientRect();
    const ok = modal.querySelector('.modal-footer button');
    const style = getComputedStyle(ok);
    return {page: document.documentElement.clientWidth,
        dialog: {left: Math.round(content.left), right: Math.round(content.right)},
        ok: {text: ok.innerText.trim(), opacity: style.opacity,
             background: style.backgroundColor, border: style.borderTopWidth},
        logs: [...modal.querySelectorAll('pre')].map(e => {
            const r = e.getBoundingClientRect();
            return {scroll: e.scrollWidth, client: e.clientWidth, right: Math.round(r.right),
                    text: e.innerText.slice(0, 80)};
        })};
}"""


def confirm(frame, shot, looks=None):
    """Wait for the Formgrader's result dialog, keep a screenshot, close it; its text. With
    ``looks`` (a dict), DIALOG measured at 1440 x 900 and 1024 x 768 goes to looks[shot]."""
    dialog = frame.locator("#success-modal, #error-modal").first
    dialog.wait_for(state="visible", timeout=SLOW)
    text = dialog.inner_text()
    frame.page.screenshot(path=str(SHOTS / f"{shot}.png"))
    if looks is not None:
        frame.page.wait_for_timeout(500)  # the dialog's fade-in
        for width, height in SIZES.items():
            frame.page.set_viewport_size({"width": width, "height": height})
            frame.page.wait_for_timeout(500)
            looks[f"{shot}-{width}"] = frame.evaluate(DIALOG)
            frame.page.screenshot(path=str(SHOTS / f"{shot}-{width}.png"))
        frame.page.set_viewport_size({"width": 1440, "height": 900})
        frame.page.wait_for_timeout(300)
    dialog.locator("button.close").first.click()
    dialog.wait_for(state="hidden", timeout=30_000)
    return text


@pytest.fixture(scope="module")
def flow(request):
    _browser_or_skip()
    p = request.getfixturevalue("playwright_session")

    SHOTS.mkdir(parents=True, exist_ok=True)
    make("class-env")
    users = {INSTRUCTOR: "instructor", RIGHT: "student", WRONG: "student"}
    seen = {"dialogs": {}}
    with running_class(users) as room:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        teacher = log_in(browser, room, INSTRUCTOR)
        # the instructor's first screen is the Formgrader tab, not an empty Launcher
        first = formgrader_frame(teacher)
        first.wait_for_selector("td.name", timeout=SLOW)
        seen["instructor_start"] = {
            "url": teacher.url, "active_tab": teacher.locator(
                "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").first.inner_text()}
        teacher.screenshot(path=str(SHOTS / "0-instructor-first-screen.png"))
        menu(teacher, "Nbgrader", "Formgrader")
        frame = formgrader_frame(teacher)
        frame.wait_for_selector("td.name", timeout=SLOW)
        teacher.screenshot(path=str(SHOTS / "1-formgrader-in-jupyterlab.png"))
        seen["framed"] = frame.locator("h1").all_inner_texts()
        seen["tables"] = tables(frame, "manage_assignments")
        row = frame.locator("tr", has=frame.locator("td.name", has_text=ASSIGNMENT))
        row.locator("td.assign a").click()
        seen["generate"] = confirm(frame, "2-generate", seen["dialogs"])
        row.locator("td.release a").click()
        seen["release"] = confirm(frame, "3-release")
        # after Release, nbgrader's "unrelease" button (a bare ✖) says what it is
        row.locator("td.release a .glyphicon-remove").wait_for(timeout=SLOW)
        frame.page.wait_for_timeout(500)
        release = row.locator("td.release a").first
        seen["release_cell"] = {"text": release.inner_text(),
                                "title": release.get_attribute("title") or ""}
        seen["tables"] += tables(frame, "manage_assignments_released")

        # one student fetches from the Assignments list: how long until the set's folder shows
        # in the file browser beside it (JupyterLab's file browser polls every 10 s; the class
        # environment's nbgrader refreshes it once the fetch is done)
        learner = log_in(browser, room, WRONG)
        # a student's JupyterLab opens on lesson 00; let it open before the Assignments tab,
        # or the lesson comes to the front over it
        learner.wait_for_selector(".jp-NotebookPanel", timeout=SLOW)
        learner.wait_for_timeout(2000)
        seen["student_start"] = learner.url
        seen["validate_on_lesson"] = learner.locator(VALIDATE).filter(visible=True).count()
        menu(learner, "Nbgrader", "Assignment List")
        fetch = learner.locator("#released_assignments_list button", has_text="Fetch").first
        fetch.wait_for(timeout=SLOW)
        folder = learner.locator(".jp-DirListing-item .jp-DirListing-itemText",
                                 has_text=ASSIGNMENT).first
        seen["folder_before_fetch"] = folder.count()
        start = time.monotonic()
        fetch.click()
        folder.wait_for(timeout=60_000)
        seen["fetch_to_folder_seconds"] = time.monotonic() - start
        learner.screenshot(path=str(SHOTS / "3b-fetched-in-the-file-browser.png"))

        students = {}
        for name in (RIGHT, WRONG):
            students[name] = Person(room, name)
            students[name].login(room.passwords[name])
            students[name].open_server()
            work_on_it(students[name], ANSWERS[name], fetch=name != WRONG)

        row.locator("td.collect a").click()
        seen["collect"] = confirm(frame, "4-collect", seen["dialogs"])
        row.locator("td.num-submissions a").click()
        frame.wait_for_selector("td.autograde a", timeout=SLOW)
        seen["autograde"] = []
        for index in range(frame.locator("td.autograde a").count()):
            frame.locator("td.autograde a").nth(index).click()
            seen["autograde"].append(confirm(frame, f"5-autograde-{index}"))
        frame.wait_for_timeout(1000)
        seen["scores"] = frame.locator("tr").all_inner_texts()
        teacher.screenshot(path=str(SHOTS / "6-submissions.png"))
        seen["tables"] += tables(frame, "manage_submissions")
        # Manual Grading > the set > a submission: the Formgrader renders it with its own
        # template (it failed with HTTP 500 when the course set the feedback template for all)
        formgrader = f"{room.base}/user/{INSTRUCTOR}/formgrader"
        frame.goto(f"{formgrader}/gradebook/{ASSIGNMENT}/{ASSIGNMENT}")
        link = frame.locator("a.name-hidden").first
        link.wait_for(state="attached", timeout=SLOW)
        seen["tables"] += tables(frame, "gradebook")
        teacher.screenshot(path=str(SHOTS / "6a-gradebook.png"))
        before = len(teacher.outside)
        # the submission with a failed check (its row names the student, hidden)
        href = frame.evaluate("""(who) => [...document.querySelectorAll('tr')]
            .find(r => r.textContent.includes(who))
            .querySelector('a.name-hidden').getAttribute('href')""", WRONG)
        shown = frame.goto(room.base + href)
        frame.wait_for_load_state()
        seen["submission"] = (shown.status, frame.locator("body").inner_text(timeout=SLOW))
        seen["submission_html"] = frame.content()
        seen["submission_outputs"] = frame.evaluate("""() => [...document.querySelectorAll(
            '.output_area pre')].map(e => ({text: e.innerText.slice(0, 60),
            scroll: e.scrollWidth, client: e.clientWidth}))""")
        teacher.screenshot(path=str(SHOTS / "6b-submission.png"))
        seen["submission_outside"] = teacher.outside[before:]  # its own test, below
        del teacher.outside[before:]
        frame.goto(f"{formgrader}/manage_assignments")
        frame.click("text=Manage Assignments")
        row = frame.locator("tr", has=frame.locator("td.name", has_text=ASSIGNMENT))
        row.locator("td.generate-feedback a").wait_for(timeout=SLOW)
        row.locator("td.generate-feedback a").click()
        seen["feedback"] = confirm(frame, "7-generate-feedback", seen["dialogs"])
        row.locator("td.release-feedback a").click()
        seen["release_feedback"] = confirm(frame, "8-release-feedback")
        seen["teacher_outside"] = list(teacher.outside)

        got = entry(students[WRONG].action("fetch_feedback"), "submitted")
        seen["fetched"] = got
        learner.reload()  # lesson 00 opens again, behind the restored Assignments tab
        learner.wait_for_selector(".jp-NotebookPanel", state="attached", timeout=SLOW)
        learner.wait_for_timeout(2000)
        menu(learner, "Nbgrader", "Assignment List")
        link = learner.locator("a", has_text="(view feedback)").first
        link.wait_for(timeout=SLOW)
        learner.screenshot(path=str(SHOTS / "9-assignments-list.png"))
        seen["files_before_feedback"] = learner.locator(BREADCRUMBS).inner_text()
        logged = []
        learner.on("console", lambda m: logged.append(m.text))
        link.click()
        viewer = learner.frame_locator("iframe[sandbox]").first
        viewer.locator("body").wait_for(timeout=60_000)
        seen["page"] = viewer.locator("body").inner_html(timeout=60_000)
        learner.wait_for_timeout(1000)
        learner.screenshot(path=str(SHOTS / "10-feedback-page.png"))
        # the page's toolbar offers no "Trust HTML" to a student, and reading the page (moving
        # over it, scrolling) logs no blocked script; counted before this test's own evaluate()
        # in the frame, after which Chromium logs one for each mouse move
        seen["trust_html"] = learner.locator(
            ".jp-MainAreaWidget:not(.lm-mod-hidden) .jp-Toolbar").first.get_by_text(
            "Trust HTML").filter(visible=True).count()
        box = learner.locator("iframe[sandbox]").first.bounding_box()
        learner.mouse.move(box["x"] + box["width"] / 2, box["y"] + 200)
        learner.mouse.wheel(0, 400)
        learner.wait_for_timeout(800)
        seen["blocked_scripts"] = [m for m in logged if "Blocked script execution" in m]
        seen["files_after_feedback"] = learner.locator(BREADCRUMBS).inner_text()
        seen["feedback_words"] = {}
        for width, height in SIZES.items():
            learner.set_viewport_size({"width": width, "height": height})
            learner.wait_for_timeout(800)
            message = viewer.locator(".output_area pre", has_text="Not yet").first
            message.scroll_into_view_if_needed()
            learner.screenshot(path=str(SHOTS / f"10-feedback-page-{width}.png"))
            seen["feedback_words"][width] = viewer.locator("body").evaluate(WORDS)
        # the fetched set, submitted already: nbgrader's Validate button belongs there
        learner.set_viewport_size({"width": 1440, "height": 900})
        learner.locator(".jp-DirListing-item", has_text=ASSIGNMENT).first.dblclick()
        learner.locator(".jp-DirListing-item", has_text=f"{ASSIGNMENT}.ipynb").first.dblclick()
        learner.locator(".lm-TabBar-tab.lm-mod-current",
                        has_text=f"{ASSIGNMENT}.ipynb").wait_for(timeout=SLOW)
        learner.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook",
                                  timeout=SLOW)
        learner.wait_for_timeout(3000)
        learner.screenshot(path=str(SHOTS / "11-set-with-validate.png"))
        seen["validate_on_set"] = learner.locator(VALIDATE).filter(visible=True).count()
        seen["learner_outside"] = list(learner.outside)
        browser.close()
        yield seen
    assert room.left == [], f"the class left behind: {room.left}"


def test_the_instructor_lands_on_the_formgrader_tab(flow):
    """After login the instructor sees the Formgrader (walk19d, A01: an empty Launcher beside
    mha-course/ and nbgrader_config.py, nothing pointing to Nbgrader > Formgrader)."""
    start = flow["instructor_start"]
    assert "formgrader=true" in start["url"] or "/lab" in start["url"], start
    assert start["active_tab"].strip() == "Formgrader", start


def test_the_formgrader_opens_inside_jupyterlab(flow):
    assert "Manage Assignments" in " ".join(flow["framed"])


@pytest.mark.parametrize("step,words", [
    ("generate", "Successfully created the student version"),
    ("release", "Successfully released"),
    ("collect", "Successfully collected"),
    ("feedback", "Successfully generated feedback"),
    ("release_feedback", "Successfully released feedback"),
])
def test_each_formgrader_step_succeeds_from_its_button(flow, step, words):
    assert words in flow[step], flow[step][:500]


def test_the_formgraders_dialogs_show_no_debug_lines(flow):
    """The Generate Feedback dialog listed nbconvert's template paths as [DEBUG] lines
    (walk19d, D07): the instructor's server logs at INFO (instructor-config/)."""
    for text in [flow["generate"], flow["collect"], flow["feedback"], *flow["autograde"]]:
        assert "[DEBUG]" not in text, text[:800]


@pytest.mark.parametrize("width", [1440, 1024])
@pytest.mark.parametrize("shot", ["2-generate", "4-collect", "7-generate-feedback"])
def test_the_formgraders_dialogs_ok_looks_like_a_button(flow, shot, width):
    """Every dialog's OK was pale grey text with no button shape, as if disabled (walk19e, D02,
    D07): nbgrader's classes "btn btn-primary close" got Bootstrap's .close (opacity 0.2, no
    background, no border). It is a primary button now (classroom/formgrader-tables.css)."""
    ok = flow["dialogs"][f"{shot}-{width}"]["ok"]
    assert ok["text"] == "OK", ok
    assert float(ok["opacity"]) == 1, ok
    assert ok["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), ok
    assert ok["border"] != "0px", ok


@pytest.mark.parametrize("width", [1440, 1024])
@pytest.mark.parametrize("shot", ["2-generate", "4-collect", "7-generate-feedback"])
def test_the_formgraders_dialog_logs_wrap_inside_the_dialog(flow, shot, width):
    """Generate Feedback's log lines (long paths, no spaces) ran past the dialog's right edge,
    cut off: "[INFO] Copying /home/…/timestamp.txt -> /home/" (walk19e, D07). They wrap now,
    a path anywhere, inside the dialog, and the dialog inside the tab."""
    seen = flow["dialogs"][f"{shot}-{width}"]
    assert seen["logs"], seen
    assert seen["dialog"]["left"] >= 0 and seen["dialog"]["right"] <= seen["page"], seen
    for log in seen["logs"]:
        assert log["scroll"] <= log["client"], seen
        assert log["right"] <= seen["dialog"]["right"], seen


def test_every_submission_is_autograded_from_the_submissions_page(flow):
    assert len(flow["autograde"]) == 2
    assert all("Successfully autograded" in text for text in flow["autograde"])


def test_a_fetched_set_shows_in_the_file_browser_at_once(flow):
    """JupyterLab's file browser lists a folder at its next poll (every 10 s): the fetched set
    showed 4-8 s after "Fetch" (measured on a plain JupyterLab with nbgrader 0.9.6). The class
    environment's nbgrader refreshes the file browser once the fetch is done."""
    assert flow["folder_before_fetch"] == 0
    seconds = flow["fetch_to_folder_seconds"]
    print(f"fetch to folder in the file browser: {seconds:.2f} s")
    assert seconds < 3, f"the fetched folder showed after {seconds:.1f} s"


@pytest.mark.parametrize("width", [1440, 1024])
@pytest.mark.parametrize("page", ["manage_assignments", "manage_assignments_released",
                                  "manage_submissions", "gradebook"])
def test_the_formgraders_tables_fit_its_tab(flow, page, width):
    """At 1440 x 900, Manage Assignments' table was 970 px wide in a 925 px column: its last
    column was cut off at the tab's edge and the page scrolled sideways. At 1024 x 768 nbgrader
    stacked its logo, headings and menu above a table 864 px wide in a 664 px box (Release,
    Collect, Generate and Release Feedback outside the tab). Every table fits its tab now, with
    every action link inside it: nothing to scroll sideways for."""
    (seen,) = [t for t in flow["tables"] if t["view"] == page and t["width"] == width]
    assert seen["pageScroll"] <= seen["page"], seen
    assert seen["outside"] == 0, seen
    for table in seen["tables"]:
        assert table["width"] <= table["box"] + 1 and table["right"] <= seen["page"] + 1, seen


def test_the_release_column_says_unrelease_not_a_bare_cross(flow):
    """After Release, nbgrader's Release column held a bare ✖ (its "unrelease" button), which
    the walkthrough's instructor read as "failed" (walk19d, A05): it reads "✖ Unrelease" now,
    with a tooltip saying the set is released (classroom/formgrader-actions.js)."""
    cell = flow["release_cell"]
    assert cell["text"].strip() == "Unrelease", cell
    assert cell["title"].startswith("Released.") and "unrelease" in cell["title"], cell


def test_validate_shows_on_the_set_not_on_the_lesson(flow):
    """nbgrader's Validate button was on every notebook, the lessons too."""
    assert flow["validate_on_lesson"] == 0
    assert flow["validate_on_set"] == 1


def test_view_feedback_leaves_the_file_browser_where_it_was(flow):
    """nbgrader's link moved the file browser into feedback/<timestamp>/."""
    assert flow["files_after_feedback"] == flow["files_before_feedback"], flow


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_feedback_page_wraps_between_words(flow, width):
    seen = flow["feedback_words"][width]
    assert seen["boxes"] > 0 and seen["broken"] == [] and seen["clipped"] == [], seen


def test_a_student_starts_on_lesson_00(flow):
    assert flow["student_start"].split("?")[0].endswith("/lab/tree/00_start_here.ipynb")


def test_the_formgrader_shows_a_submission(flow):
    status, text = flow["submission"]
    assert status == 200 and "encountered an error" not in text, text[:500]


def test_the_formgraders_submission_view_wraps_the_check_message(flow):
    """A long failed-check message ("Not yet: ...") was one line, cut off at the panel's edge."""
    outputs = flow["submission_outputs"]
    assert any("Not yet: " in o["text"] for o in outputs), outputs
    assert [o for o in outputs if o["scroll"] > o["client"] + 1] == [], outputs


def test_the_feedback_page_has_no_link(flow):
    """A link navigates JupyterLab's sandboxed viewer to a page that refuses framing."""
    assert "href=" not in flow["page"]


def test_the_submissions_page_lists_students_by_their_roster_names(flow):
    rows = " ".join(flow["scores"])
    assert "None" not in rows.split("Score")[-1], rows
    assert "First" + RIGHT in rows or RIGHT in rows


def test_the_students_feedback_tab_has_no_trust_html_button(flow):
    """The page holds no script: "Trust HTML" would change nothing, and a student wondered
    whether to press it (walk19d, B22)."""
    assert flow["trust_html"] == 0


def test_reading_the_feedback_page_logs_no_blocked_script(flow):
    assert flow["blocked_scripts"] == []


def test_view_feedback_opens_the_feedback_page(flow):
    assert "Grade cell" in flow["page"] or "Score" in flow["page"], flow["page"][:500]


def test_the_feedback_page_names_the_mistake_and_typesets_the_math(flow):
    assert "mask applied after softmax" in flow["page"]
    assert "<math" in flow["page"] and "$q k" not in flow["page"]


def test_the_formgraders_submission_page_requests_nothing_outside(flow):
    """nbgrader's 'formgrade' template loaded MathJax 2.7.7 from cdnjs; the course's config
    gives the page MathML and a stand-in for MathJax (course/feedback_page.py)."""
    assert flow["submission_outside"] == []


def test_the_formgraders_submission_page_shows_the_math_as_mathml(flow):
    assert "<math" in flow["submission_html"] and "\\sqrt" not in flow["submission_html"]


def test_no_screen_requests_anything_outside_the_machine(flow):
    assert flow["teacher_outside"] == [] and flow["learner_outside"] == []


def test_the_feedback_page_asks_to_run_the_imports_not_an_install_cell(flow):
    """On the hub the set has no install cell (course/class_copy.py): neither has its page."""
    text = " ".join(flow["page"].split())
    assert "First run the code cell below: the imports." in text
    assert "install cell" not in text and "Open in Colab" not in text
