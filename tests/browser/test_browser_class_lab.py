"""A student's (and an instructor's) JupyterLab as the class hub sets it up, without the hub:
nbgrader's lab extension with classroom/class_env.py's marked edits (a copy, served before the
venv's own through LabApp.extra_labextensions_path), classroom/student-config/ or
instructor-config/ as the Jupyter config, and classroom/notebook-outputs.css as custom.css.
Chromium at 1024 x 768 and 1440 x 900, the file browser open, as the walkthroughs saw it:

* a check's message in a notebook's output wraps between words (JupyterLab's own
  `word-break: break-all` broke "Input oper|and" at 1024 px), and so does the student's
  feedback page in JupyterLab's HTML viewer, with nothing cut off at the right;
* nbgrader's Validate button shows on an exercise set (cells with nbgrader metadata), not on a
  lesson, for a student; the instructor keeps it on both.

tests/test_classroom_hub_browser.py sees the same on the real hub.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import (
    ARTIFACTS,
    CHROMIUM_ARGS,  # noqa: F401  (the browser comes from the chromium fixture)
    SETTINGS,
)
from lab_server import start
from lab_server import stop as stop_lab
from words_on_screen import MEASURE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "classroom"))
sys.path.insert(0, str(ROOT / "tests"))
import class_env  # noqa: E402

nbgrader = pytest.importorskip("nbgrader")
NBGRADER_EXT = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
SHOTS = ARTIFACTS / "class-lab"

# What a student met in ex01 at 1024 x 768 (walk19b, E03): the message as the package shows it,
# wrapped between words at 100 columns (mha._wrap.wrap_for_display then; it wraps at 72 now,
# and the CSS must hold for the wider lines of older outputs and other text too).
MESSAGE = (
    "read_out: your function raised ValueError: matmul: Input operand 1 has a mismatch in\n"
    "    its core dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) (size 4 is "
    "different from 3)\n"
    "  on case 'a one-hot weight picks one value (a hard lookup)'\n"
    "  input:    [0., 1., 0.] (shape (3,), float64),\n"
    "            [[ 1. , 2. , 0. , -1. ], [ 3. , -2. , 1. , 0. ], [ 0. , 0.5, 4. , 2. ]]\n"
    "            (shape (3, 4), float64)")
GRADE = {"grade": True, "solution": False, "locked": True, "grade_id": "test_read_out",
         "points": 2.0, "schema_version": 3}

# The words of the text inside `selector` (in `doc`: the page or its iframe) broken inside
# the word, and the boxes cut off (tests/words_on_screen.py).
WORDS = ("([selector, doc]) => (" + MEASURE + ")(doc === 'frame' ? "
         "document.querySelector('iframe').contentDocument : document, selector)")


def class_notebooks(folder: Path) -> None:
    """What a student's home holds, in small: a lesson, an exercise set with a failed check's
    message stored as its output, and a feedback page."""
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", folder / "00_start_here.ipynb")
    check = nbformat.v4.new_code_cell(
        '# 2 points\nchecks.check_read_out(read_out, behaviour="values")',
        metadata={"nbgrader": GRADE}, execution_count=15,
        outputs=[nbformat.v4.new_output("error", ename="CheckFailed", evalue=MESSAGE,
                                        traceback=["Not yet: " + MESSAGE])])
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Exercise set 01", metadata={"nbgrader": {
            "grade": False, "solution": False, "locked": True, "grade_id": "intro",
            "schema_version": 3}}), check])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    (folder / "ex01").mkdir()
    nbformat.write(nb, folder / "ex01" / "ex01_weighted_sum.ipynb")
    from test_feedback_page import render_feedback

    feedback = folder / "ex01" / "feedback"
    feedback.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        graded = nbformat.from_dict(json.loads(json.dumps(nb)))
        graded.cells[1].metadata.nbgrader["score"] = 0.0
        html = render_feedback(monkeypatch, folder.parent / "render", graded)
    (feedback / "ex01_weighted_sum.html").write_text(html)


def start_lab(tmp: Path, who: str, course: bool = False):
    """JupyterLab as the class environment runs it for ``who`` (student or instructor); with
    ``course``, serving a copy of course/ (the sets' sources, its nbgrader config) with an
    exchange of its own, for the Formgrader."""
    env_dir = tmp / "env"
    ext = env_dir / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
    shutil.copytree(NBGRADER_EXT, ext)
    class_env.open_feedback_from_its_link(env_dir)
    class_env.refresh_files_after_fetch(env_dir)
    class_env.feedback_link_keeps_the_file_browser(env_dir)
    class_env.validate_button_on_sets_only(env_dir)
    config = tmp / "config"
    shutil.copytree(ROOT / "classroom" / f"{who}-config", config)
    (config / "custom").mkdir()
    # where class_env.py puts it (jupyter_server's static/custom) is the venv's here: the
    # config folder's custom/ comes first in the same search path
    shutil.copy(ROOT / "classroom" / "notebook-outputs.css", config / "custom" / "custom.css")
    home = tmp / "home"
    if course:
        home.mkdir()
        for module in (ROOT / "course").glob("*.py"):  # the config and what it imports
            shutil.copy(module, home / module.name)  # (as classroom/accounts.py copies them)
        shutil.copytree(ROOT / "course" / "source", home / "source")
        (tmp / "exchange").mkdir()
        (config / "nbgrader_config.py").write_text(
            f"c.Exchange.root = {str(tmp / 'exchange')!r}\n")
    else:
        home.mkdir()
        class_notebooks(home)
    extensions = env_dir / "share" / "jupyter" / "labextensions"
    return start(tmp, home, SETTINGS, env={
        "JUPYTER_CONFIG_DIR": str(config),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"},
        args=[f"--LabApp.extra_labextensions_path={extensions}"])


def _lab(tmp_path_factory, who):
    proc, base, token = start_lab(tmp_path_factory.mktemp(who), who)
    try:
        yield who, base, token
    finally:
        stop_lab(proc, base, token)


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory):
    yield from _lab(tmp_path_factory, "student")


@pytest.fixture(scope="module")
def instructor_lab(tmp_path_factory):
    yield from _lab(tmp_path_factory, "instructor")


def open_in_lab(chromium, lab, path, width, height):
    who, base, token = lab
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    workspace = "t" + secrets.token_hex(4)
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?token={token}")
    page.wait_for_selector(".jp-DirListing-item", timeout=60_000)  # the file browser is open
    return context, page


@pytest.mark.parametrize("width,height", [(1024, 768), (1440, 900)])
def test_a_checks_message_wraps_between_words_in_the_notebook(chromium, student_lab, width,
                                                              height):
    context, page = open_in_lab(chromium, student_lab, "ex01/ex01_weighted_sum.ipynb", width,
                                height)
    try:
        page.wait_for_selector(".jp-OutputArea-output pre", timeout=60_000)
        page.wait_for_timeout(500)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-OutputArea-output pre").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"notebook-message-{width}.png"))
        seen = page.evaluate(WORDS, [".jp-OutputArea-output pre", "page"])
    finally:
        context.close()
    assert seen["boxes"] >= 1
    assert seen["broken"] == [], f"at {width} px, words broken across lines: {seen['broken']}"
    assert seen["clipped"] == [], f"at {width} px, cut off: {seen['clipped']}"


@pytest.mark.parametrize("width,height", [(1024, 768), (1440, 900)])
def test_the_feedback_page_wraps_between_words_in_jupyterlabs_viewer(chromium, student_lab,
                                                                     width, height):
    context, page = open_in_lab(chromium, student_lab, "ex01/feedback/ex01_weighted_sum.html",
                                width, height)
    try:
        frame = page.frame_locator("iframe[sandbox]").first
        frame.locator(".output_area pre").first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        frame.locator(".output_area pre", has_text="Not yet").first.scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"feedback-page-{width}.png"))
        seen = page.evaluate(WORDS, [".output_area pre", "frame"])
    finally:
        context.close()
    assert seen["boxes"] >= 1
    assert seen["broken"] == [], f"at {width} px, words broken across lines: {seen['broken']}"
    assert seen["clipped"] == [], f"at {width} px, cut off: {seen['clipped']}"


@pytest.mark.parametrize("who", ["student", "instructor"])
def test_the_html_viewer_offers_trust_to_instructors_only(request, chromium, who):
    """The feedback page holds no script, so "Trust HTML" on its tab changes nothing; a student
    wondered whether to press it (walk19d, B22): students' JupyterLab hides it
    (classroom/student-config/lab-settings/), the instructor's keeps it. Opening the page and
    moving over it logs no "Blocked script execution" either."""
    lab = request.getfixturevalue(f"{who}_lab")
    context, page = open_in_lab(chromium, lab, "ex01/feedback/ex01_weighted_sum.html", 1440,
                                900)
    logged = []
    page.on("console", lambda m: logged.append(m.text))
    try:
        frame = page.frame_locator("iframe[sandbox]").first
        frame.locator(".output_area pre").first.wait_for(timeout=60_000)
        page.wait_for_selector(".jp-MainAreaWidget:not(.lm-mod-hidden) .jp-Toolbar-item",
                               timeout=60_000)
        page.wait_for_timeout(1500)
        box = page.locator("iframe[sandbox]").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 200)
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(500)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"feedback-toolbar-{who}.png"))
        toolbar = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .jp-Toolbar").first
        trust = toolbar.get_by_text("Trust HTML").filter(visible=True).count()
    finally:
        context.close()
    assert trust == (0 if who == "student" else 1), f"{who}: Trust HTML shown {trust} time(s)"
    assert not [m for m in logged if "Blocked script execution" in m], logged


VALIDATE = ".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button"


@pytest.mark.parametrize("who", ["student", "instructor"])
@pytest.mark.parametrize("notebook,set_", [("00_start_here.ipynb", False),
                                           ("ex01/ex01_weighted_sum.ipynb", True)])
def test_validate_shows_on_exercise_sets_and_for_instructors(request, chromium, who, notebook,
                                                             set_):
    lab = request.getfixturevalue(f"{who}_lab")
    context, page = open_in_lab(chromium, lab, notebook, 1440, 900)
    try:
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
        page.wait_for_selector(".jp-NotebookPanel-toolbar .jp-Toolbar-item", timeout=60_000)
        page.wait_for_timeout(1500)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"validate-{who}-{notebook.split('/')[-1]}.png"))
        shown = page.locator(VALIDATE).filter(visible=True).count()
    finally:
        context.close()
    expected = set_ or who == "instructor"
    assert shown == (1 if expected else 0), f"{who}: Validate shown {shown} time(s) on {notebook}"


@pytest.fixture(scope="module")
def course_lab(tmp_path_factory):
    """The instructor's JupyterLab on a copy of course/: the Formgrader lists the ten sets."""
    proc, base, token = start_lab(tmp_path_factory.mktemp("course"), "instructor", course=True)
    try:
        yield "instructor", base, token
    finally:
        stop_lab(proc, base, token)


@pytest.fixture(scope="module")
def formgrader_sheet(tmp_path_factory):
    """nbgrader's Formgrader stylesheet as class_env.py leaves it in the class environment."""
    env = tmp_path_factory.mktemp("sheet")
    sheet = (env / "lib" / "python3.11" / "site-packages" / "nbgrader" / "server_extensions"
             / "formgrader" / "static" / "css" / "nbgrader.css")
    sheet.parent.mkdir(parents=True)
    shutil.copy(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static"
                / "css" / "nbgrader.css", sheet)
    class_env.formgrader_tables_fit(env)
    return sheet.read_text()


@pytest.fixture(scope="module")
def formgrader_utils(tmp_path_factory):
    """nbgrader's Formgrader utils.js as class_env.py leaves it in the class environment."""
    env = tmp_path_factory.mktemp("utils")
    utils = (env / "lib" / "python3.11" / "site-packages" / "nbgrader" / "server_extensions"
             / "formgrader" / "static" / "js" / "utils.js")
    utils.parent.mkdir(parents=True)
    shutil.copy(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static"
                / "js" / "utils.js", utils)
    class_env.formgrader_names_break_at_underscores(env)
    return utils.read_text()


# Each set's name in the table as it is drawn: the piece each of its lines ends with, and the
# names where a line ends elsewhere than after an underscore (a break inside a word).
NAME_BREAKS = """() => [...document.querySelectorAll('td.name a')].map(a => {
    const text = a.textContent, lines = [];
    const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
    let top = null, line = '';
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.data.length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const t = Math.round(range.getBoundingClientRect().top);
            if (top !== null && t > top + 2) { lines.push(line); line = ''; }
            top = t;
            line += node.data[i];
        }
    }
    lines.push(line);
    return {name: text, lines};
})"""


# The Formgrader's page in its tab: its width, and each table's width, right edge and box, and
# every action link of the table past the tab's right edge.
FORMGRADER_TABLES = """() => ({page: document.documentElement.clientWidth,
    pageScroll: document.documentElement.scrollWidth,
    tables: [...document.querySelectorAll('table')].map(t => {
        const box = t.closest('.dataTables_wrapper') || t.parentElement;
        const r = t.getBoundingClientRect();
        return {width: Math.round(r.width), right: Math.round(r.right), top: Math.round(r.top),
                box: box.clientWidth};
    }),
    outside: [...document.querySelectorAll('td a')].filter(a =>
        a.getBoundingClientRect().right > document.documentElement.clientWidth + 1).length})"""


@pytest.mark.parametrize("width,height", [(1024, 768), (1440, 900)])
def test_manage_assignments_fits_the_formgrader_tab(chromium, course_lab, formgrader_sheet,
                                                    formgrader_utils, width, height):
    """At 1024 x 768 nbgrader stacked its logo, headings and menu above a table 864 px wide in
    a 664 px box; at 1440, the ten sets' long names made it 864 px in an 804 px box."""
    context, page = open_in_lab(chromium, course_lab, "nbgrader_config.py", width, height)
    page.route("**/formgrader/static/css/nbgrader.css*", lambda route: route.fulfill(
        status=200, content_type="text/css", body=formgrader_sheet))
    page.route("**/formgrader/static/js/utils.js*", lambda route: route.fulfill(
        status=200, content_type="application/javascript", body=formgrader_utils))
    try:
        page.reload()
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        page.wait_for_timeout(1000)
        page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
        page.click(".lm-Menu-itemLabel:text-is('Formgrader')")
        deadline = time.monotonic() + 60
        while not [f for f in page.frames if "/formgrader" in f.url]:
            assert time.monotonic() < deadline, "no Formgrader frame"
            page.wait_for_timeout(200)
        frame = [f for f in page.frames if "/formgrader" in f.url][0]
        frame.wait_for_selector("td.name", timeout=60_000)
        # every set listed and the layout settled (a busy machine draws the rows late)
        frame.wait_for_function("document.querySelectorAll('td.name').length >= 10",
                                timeout=60_000)
        seen, before = frame.evaluate(FORMGRADER_TABLES), None
        for _ in range(20):
            if seen == before:
                break
            page.wait_for_timeout(500)
            seen, before = frame.evaluate(FORMGRADER_TABLES), seen
        names = frame.evaluate(NAME_BREAKS)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"formgrader-{width}.png"))
    finally:
        context.close()
    # a name breaks only after an underscore ("ex02_scores_and_so|ftmax" before)
    assert len(names) >= 10 and any(len(n["lines"]) > 1 for n in names), names
    inside = [n for n in names if any(not line.endswith("_") for line in n["lines"][:-1])]
    assert not inside, inside
    assert seen["pageScroll"] <= seen["page"], seen
    assert seen["tables"] and seen["outside"] == 0, seen
    for table in seen["tables"]:
        assert table["width"] <= table["box"] + 1 and table["right"] <= seen["page"] + 1, seen
