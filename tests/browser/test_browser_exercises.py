"""An exercise notebook as a student meets it in JupyterLab: fill one answer, run its
visible test, read the feedback line.

The stub's answer cell raises NotImplementedError; the student replaces the cell's
code by typing, runs it (Shift+Enter), then runs the graded cell below it. The
feedback lines come from mha.checks: "...: correct." or a line naming the mistake.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

EXERCISE = "exercises/ex01_weighted_sum.ipynb"


def _cell_indices() -> tuple[int, int, int]:
    """The set-up cell (imports), the predicted_read_out answer and its check, found by what
    they hold (tools/launch.py puts a header and an install cell before the set-up)."""
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / EXERCISE).read_text())
    sources = ["".join(c["source"]) for c in nb["cells"]]
    setup = next(i for i, (c, src) in enumerate(zip(nb["cells"], sources, strict=True))
                 if c["cell_type"] == "code" and "import mha" in src
                 and "launch-install" not in c["metadata"].get("tags", []))
    answer = next(i for i, src in enumerate(sources) if src.lstrip().startswith(
        ("predicted_read_out =", "# YOUR CODE HERE\npredicted_read_out"))
        or "predicted_read_out = None" in src)
    return setup, answer, answer + 1


SETUP, ANSWER, TEST = _cell_indices()  # cell indices: imports, predicted_read_out, its check


@pytest.fixture
def exercise_open(lab_server, open_recorded_page):
    if not (lab_server.root / EXERCISE).is_file():
        pytest.fail(f"notebooks/{EXERCISE} is missing")
    with open_recorded_page() as lab_page:
        try:
            lab_page.open_notebook(lab_server, EXERCISE)
            yield lab_page
        finally:
            lab_server.stop_kernels(EXERCISE)


def cell(lab_page, index: int):
    return lab_page.page.locator(".jp-Notebook .jp-Cell").nth(index)


def run(lab_page, index: int) -> None:
    """Click into cell ``index``, press Shift+Enter, wait until it has run."""
    target = cell(lab_page, index)
    target.locator(".jp-InputArea-editor").click()
    lab_page.page.keyboard.press("Shift+Enter")
    lab_page.wait_until(
        lambda: re.fullmatch(r"\[\d+\]:", target.locator(".jp-InputPrompt").inner_text().strip()),
        60, lambda: f"cell {index} did not run: {target.locator('.jp-InputPrompt').inner_text()}")
    lab_page.wait_until_idle()


def type_into(lab_page, index: int, code: str) -> None:
    """Replace cell ``index``'s code by typing, as a student does."""
    page = lab_page.page
    cell(lab_page, index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Delete")
    page.keyboard.type(code)


def output_text(lab_page, index: int) -> str:
    return "\n".join(cell(lab_page, index).locator(".jp-OutputArea-output").all_inner_texts())


def test_a_filled_answer_gets_the_correct_feedback_line(exercise_open):
    assert "predicted_read_out" in cell(exercise_open, ANSWER).inner_text()
    run(exercise_open, SETUP)
    type_into(exercise_open, ANSWER, "predicted_read_out = [0.75, 0.5]")
    run(exercise_open, ANSWER)
    run(exercise_open, TEST)
    assert "read_out prediction: correct." in output_text(exercise_open, TEST)
    assert exercise_open.outside_requests() == []


def test_a_wrong_answer_gets_a_feedback_line_naming_the_mistake(exercise_open):
    run(exercise_open, SETUP)
    type_into(exercise_open, ANSWER, "predicted_read_out = [0.5, 0.5]")
    run(exercise_open, ANSWER)
    run(exercise_open, TEST)
    # the message is wrapped between words (mha._wrap): compare its words
    feedback = " ".join(output_text(exercise_open, TEST).split())
    assert "read_out prediction: not this one; got [0.5, 0.5]" in feedback
    assert "Multiply each value by its weight and add" in feedback


def test_run_all_on_the_untouched_set_runs_every_cell_and_checks_every_task(exercise_open):
    """The stubs raise NotImplementedError and every check fails on them; tagged
    raises-exception, none of them stops Run All (the kernel drops nothing queued)."""
    page = exercise_open.page
    exercise_open.menu("Run", "Run All Cells")
    prompts = ".jp-Notebook .jp-CodeCell .jp-InputPrompt:not(.jp-Placeholder-prompt)"
    page.wait_for_function(
        """(sel) => { const p = [...document.querySelectorAll(sel)].map(e => e.textContent.trim());
                      return p.length > 0 && p.every(t => /^\\[\\d+\\]:$/.test(t)); }""",
        arg=prompts, timeout=90_000, polling=250)
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / EXERCISE).read_text())
    checks = [i for i, c in enumerate(nb["cells"]) if "checks.check" in "".join(c["source"])]
    assert len(checks) >= 4
    assert [i for i in checks if "not attempted yet" not in output_text(exercise_open, i)] == []
    # each check cell starts as a lesson's verdict does, never with a class name
    shown = {i: output_text(exercise_open, i).strip() for i in checks}
    assert [t for t in shown.values() if not t.startswith("Not yet: ")
            or "NotAttempted" in t or "CheckFailed" in t] == [], shown


def test_running_an_untouched_prediction_shows_one_line_that_says_what_to_do(exercise_open,
                                                                            screenshot):
    """The walkthrough: running an unanswered prediction showed NotImplementedError's raw
    traceback (dashes, "Cell In[3], line 3", the arrow) while its test cell said "not
    attempted yet" in one line. mha.checks' IPython handler shows the stub as one line."""
    run(exercise_open, SETUP)
    run(exercise_open, ANSWER)
    shown = output_text(exercise_open, ANSWER)
    screenshot(exercise_open.page, "untouched-prediction")  # test-artifacts/browser/
    assert " ".join(shown.split()) == (
        "Not yet: this cell still has the line `raise NotImplementedError()`; "
        "replace it with your answer, then run the cell again."), shown
    assert "Traceback" not in shown and "Cell In[" not in shown
    error = cell(exercise_open, ANSWER).locator(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert error.count() == 1  # still an error output, as nbgrader and raises-exception expect
