"""The Formgrader's submission page (the instructor's view of an autograded submission), as
Chromium shows it at 1440 and 1024 px wide: a long failed-check message wraps inside the page.

The page is rendered the way the Formgrader renders it (tests/test_feedback_page.py's
``formgrader_page``: an HTMLExporter from the course's config, nbgrader's 'formgrade' template
in the course's copy, course/feedback_page.py) and served from 127.0.0.1 with nbgrader's own
static files (bootstrap, formgrade.css, formgrade.js). Before the course's copy of the template
set `white-space: pre-wrap` on outputs, the message was one line, clipped at the panel's edge
(5,378 px of text in a 1,046 px box at 1440 px).
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
sys.path.insert(0, str(ROOT / "tests"))
from test_feedback_page import GRADE, formgrader_page  # noqa: E402

MESSAGE = ("masked_attention: the mask is applied after the softmax, so the weights of a row "
           "no longer sum to 1 and the future positions still get weight; apply it to the "
           "scores, before the softmax, by setting the masked scores to -inf. " * 3).strip()
# Every output of the page: how wide its text is against the box that shows it, and where it
# ends (a box past the page's right edge is cut off too).
MEASURE = """() => [...document.querySelectorAll('.output_area pre, .output_subarea')].map(e => ({
    text: e.innerText.slice(0, 40), scroll: e.scrollWidth, client: e.clientWidth,
    right: e.getBoundingClientRect().right, page: document.documentElement.clientWidth}))"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def submission():
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Exercise set 04: masks"),
        nbformat.v4.new_code_cell(
            "masked = masked_attention(q, k, v, causal)", metadata={"nbgrader": GRADE},
            outputs=[nbformat.v4.new_output("error", ename="CheckFailed", evalue=MESSAGE,
                                            traceback=["Not yet: " + MESSAGE])]),
    ])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The submission page on http://127.0.0.1, beside nbgrader's /formgrader/static/."""
    import nbgrader

    site = tmp_path_factory.mktemp("formgrade")
    with pytest.MonkeyPatch.context() as monkeypatch:
        html = formgrader_page(monkeypatch, tmp_path_factory.mktemp("render"),
                               notebook=submission(), base_url="")
    (site / "submission.html").write_text(html)
    (site / "formgrader").mkdir()
    os.symlink(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static",
               site / "formgrader" / "static")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/submission.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("width", [1440, 1024])
def test_a_long_checkfailed_message_wraps_in_the_submission_view(served, chromium, width):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        response = page.goto(served)
        assert response.status == 200
        page.wait_for_selector(".output_area pre")
        page.wait_for_timeout(300)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"formgrade-submission-{width}.png"))
        boxes = page.evaluate(MEASURE)
        message = page.locator(".output_area pre", has_text="Not yet").first
        lines = message.evaluate(
            "e => Math.round(e.getBoundingClientRect().height"
            " / parseFloat(getComputedStyle(e).lineHeight))")
    finally:
        context.close()
    assert boxes, "no output on the page"
    clipped = [b for b in boxes if b["scroll"] > b["client"] + 1 or b["right"] > b["page"]]
    assert clipped == [], f"at {width} px, outputs cut off: {clipped}"
    assert lines >= 3, f"the message takes {lines} line(s) at {width} px: not wrapped"
