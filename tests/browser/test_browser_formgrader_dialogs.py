"""The Formgrader's result dialogs (Generate, Release, Collect, Autograde, Generate Feedback...),
as Chromium shows them in the Formgrader's tab, without the hub: nbgrader's own page template
(formgrader/templates/base.tpl) and static files, its stylesheet with the rules the class
environment appends (class_env.formgrader_tables_fit: classroom/formgrader-tables.css), and
nbgrader's createLogModal() (static/js/utils.js) called as Generate Feedback calls it.

Before classroom/formgrader-tables.css styled them (walk19e, D02, D07):
- the OK button (classes "btn btn-primary close") was pale grey text with no button shape, as
  if disabled: Bootstrap's .close made it 20 % opaque, took its background and border;
- a log line of long paths ran past the dialog's right edge, cut off ("[INFO] Copying
  /home/…/timestamp.txt -> /home/"): a <pre> does not wrap.

The tests/test_classroom_hub_browser.py flow checks the same on the hub's real dialogs.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
sys.path.insert(0, str(ROOT / "classroom"))
import class_env  # noqa: E402

HOME = "/home/w19eprof/mha-course"
LOG = "\n".join(
    line for who in ("w19eann", "w19ebob") for line in (
        f"[INFO] Copying {HOME}/autograded/{who}/ex04_masks/timestamp.txt -> "
        f"{HOME}/feedback/{who}/ex04_masks/timestamp.txt",
        f"[INFO] Copying {HOME}/autograded/{who}/ex04_masks/submission_secret.txt -> "
        f"{HOME}/feedback/{who}/ex04_masks/submission_secret.txt",
        f"[INFO] Converting notebook {HOME}/autograded/{who}/ex04_masks/ex04_masks.ipynb",
        f"[INFO] Writing 141380 bytes to {HOME}/feedback/{who}/ex04_masks/ex04_masks.html",
        "[INFO] Setting destination file permissions to 644"))
# The Formgrader's tab (its frame) with the file browser open, for the browser window at
# 1024 x 768 (694 px wide, walk19e's screenshots) and at 1440 x 900; and the page on its own.
TABS = {"1024x768": (694, 700), "1440x900": (1110, 830), "page-1440": (1440, 900)}
# The open dialog: its OK button, and each log box against the dialog and the dialog against
# the page.
DIALOG = """() => {
    const modal = document.querySelector('.modal.in');
    const content = modal.querySelector('.modal-content').getBoundingClientRect();
    const ok = modal.querySelector('.modal-footer button');
    const style = getComputedStyle(ok);
    const box = ok.getBoundingClientRect();
    return {page: document.documentElement.clientWidth,
        dialog: {left: content.left, right: content.right},
        ok: {text: ok.innerText.trim(), opacity: style.opacity, float: style.cssFloat,
             background: style.backgroundColor, color: style.color,
             border: style.borderTopWidth, radius: style.borderTopLeftRadius,
             width: box.width, height: box.height, right: box.right},
        logs: [...modal.querySelectorAll('pre')].map(e => {
            const r = e.getBoundingClientRect();
            return {scroll: e.scrollWidth, client: e.clientWidth, right: r.right,
                    height: r.height, text: e.innerText};
        })};
}"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A Formgrader page (base.tpl) on http://127.0.0.1 with the class environment's
    stylesheet: nbgrader.css as class_env.configure() leaves it."""
    import jinja2
    import nbgrader

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    env = tmp_path_factory.mktemp("env")
    static = (env / "lib" / "python3.11" / "site-packages" / "nbgrader" / "server_extensions"
              / "formgrader" / "static")
    (static / "css").mkdir(parents=True)
    shutil.copy(formgrader / "static" / "css" / "nbgrader.css", static / "css")
    for name in ("js", "node_modules"):
        os.symlink(formgrader / "static" / name, static / name)
    class_env.formgrader_tables_fit(env)
    page = jinja2.Environment(loader=jinja2.FileSystemLoader(formgrader / "templates"))
    (static.parent / "dialog.html").write_text(
        page.get_template("base.tpl").render(base_url=""))
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(static.parents[1])))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/formgrader/dialog.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module", params=list(TABS))
def dialog(request, served, chromium):
    """DIALOG on Generate Feedback's success dialog, in a tab of TABS[param]."""
    width, height = TABS[request.param]
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        assert page.goto(served).status == 200
        page.evaluate("""(log) => createLogModal('success-modal', 'Success',
            "Successfully generated feedback of 'ex04_masks'.", log)""", LOG)
        page.wait_for_selector(".modal.in .modal-footer button", state="visible")
        page.wait_for_timeout(600)  # the fade-in
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"formgrader-dialog-{request.param}.png"))
        seen = page.evaluate(DIALOG)
        page.hover(".modal.in .modal-footer button")
        page.wait_for_timeout(300)
        seen["hovered"] = page.evaluate(DIALOG)["ok"]
        page.click(".modal.in .modal-footer button")
        page.wait_for_selector(".modal", state="detached", timeout=5000)
    finally:
        context.close()
    return seen


def test_the_ok_button_looks_like_a_button(dialog):
    """nbgrader's OK ("btn btn-primary close") took Bootstrap's .close: opacity 0.2, no
    background, no border, floated. Now a primary button, at rest and under the pointer, and it
    still closes the dialog (the fixture clicks it)."""
    for ok in (dialog["ok"], dialog["hovered"]):
        assert ok["text"] == "OK", ok
        assert float(ok["opacity"]) == 1, ok
        assert ok["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), ok
        assert ok["color"] == "rgb(255, 255, 255)", ok
        assert ok["border"] == "1px" and ok["radius"] != "0px", ok
    assert dialog["ok"]["float"] == "none", dialog["ok"]
    assert dialog["ok"]["right"] <= dialog["dialog"]["right"], dialog


def test_the_log_wraps_inside_the_dialog(dialog):
    """Each log line of long paths wraps (a path anywhere: it has no space), so no line runs
    past the log's box, the box stays inside the dialog and the dialog inside the tab."""
    (log,) = dialog["logs"]
    assert log["text"] == LOG  # the text is as nbgrader wrote it: only its display wraps
    assert log["scroll"] <= log["client"], log
    assert log["right"] <= dialog["dialog"]["right"], dialog
    assert 0 <= dialog["dialog"]["left"] and dialog["dialog"]["right"] <= dialog["page"], dialog
