"""The feedback page a student opens (course/feedback_page.py): math typeset offline as
MathML, no MathJax from a CDN, long lines wrapped, no link; and the Formgrader, which renders
submissions with its own template under the same config. The whole flow (autograde, then
generate_feedback) is run by tests/test_classroom.py and tests/test_classroom_hub.py."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import nbformat
import pytest

COURSE = Path(__file__).resolve().parents[1] / "course"
sys.path.insert(0, str(COURSE))
from feedback_page import FeedbackExporter, markdown_math_to_mathml, plain_links  # noqa: E402


def test_inline_math_becomes_inline_mathml():
    out = markdown_math_to_mathml(r"The scores are $q k^\top / \sqrt{d_k}$.")
    assert out.startswith("The scores are <math") and 'display="inline"' in out
    assert "<msqrt>" in out and "$" not in out


def test_display_math_becomes_block_mathml():
    assert 'display="block"' in markdown_math_to_mathml(r"$$\sum_j w_j v_j$$")


def test_code_spans_and_prices_are_left_alone():
    text = "Call `f($x$)` and pay 5 dollars."
    assert markdown_math_to_mathml(text) == text


def test_math_that_cannot_be_converted_is_shown_as_its_source():
    assert "<code>" in markdown_math_to_mathml(r"$\begin{nonsense$")


def course_app(monkeypatch, tmp_path):
    """An nbgrader app that has read course/nbgrader_config.py, as nbgrader run from course/
    (and the Formgrader, whose course folder it is) reads it."""
    pytest.importorskip("nbgrader")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.chdir(COURSE)
    from nbgrader.apps.baseapp import NbGrader

    app = NbGrader()
    app.initialize([])
    return app


GRADE = {"grade": True, "solution": False, "locked": True, "grade_id": "test_causal",
         "points": 2.0, "score": 0.0, "schema_version": 3}


def feedback_notebook():
    """A graded notebook as GetGrades leaves it: a heading, the lesson's link, a web link,
    math, a test cell with its score and a long error line."""
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(
            "# Exercise set 04: masks\n\nPractice for [lesson 04, masks](../04_masks.ipynb). "
            "Run it on [Colab](https://colab.research.google.com/x)."),
        nbformat.v4.new_markdown_cell(r"The scores are $q k^\top / \sqrt{d_k}$."),
        nbformat.v4.new_code_cell(
            "checks.check_causal_mask(causal)", metadata={"nbgrader": GRADE},
            outputs=[nbformat.v4.new_output(
                "error", ename="ValueError", evalue="x" * 400,
                traceback=["ValueError: " + "x" * 400])]),
    ])


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def rendered(monkeypatch, tmp_path):
    """(page, warnings): the feedback page rendered by the exporter and preprocessors that
    GenerateFeedback builds from the course's config (those that read the gradebook left out)."""
    return render_feedback(monkeypatch, tmp_path, feedback_notebook(), warnings=True)


def render_feedback(monkeypatch, tmp_path, notebook, warnings=False):
    """The feedback page of ``notebook`` (and, with ``warnings``, what was logged), as
    ``rendered`` says; tests/browser/test_browser_class_lab.py shows it in JupyterLab."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.preprocessors import GetGrades

    app = course_app(monkeypatch, tmp_path)
    logged = Warnings()
    app.log.addHandler(logged)
    converter = GenerateFeedback(coursedir=app.coursedir, parent=app)
    exporter = converter.exporter_class(parent=converter, config=converter.config)
    for pre in converter.preprocessors:
        if not issubclass(pre, GetGrades) and pre.__name__ != "ScrubHiddenSource":
            exporter.register_preprocessor(pre)
    html, _ = exporter.from_notebook_node(notebook, resources={"nbgrader": {
        "notebook": "ex", "score": 0.0, "max_score": 2.0, "late_penalty": 0.0}})
    app.log.removeHandler(logged)
    return (html, logged.messages) if warnings else html


@pytest.fixture
def page(rendered):
    return rendered[0]


def formgrader_page(monkeypatch, tmp_path, notebook=None, base_url="/user/prof") -> str:
    """The Formgrader's submission page (its SubmissionHandler) for a notebook (by default
    ``feedback_notebook()``): rendered with an HTMLExporter built from the course's config and
    the Formgrader's 'formgrade' template."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.chdir(COURSE)
    formgrader = FormgradeExtension()
    formgrader.root_dir = str(COURSE)
    formgrader.initialize([])
    path = tmp_path / "ex04_masks.ipynb"
    nbformat.write(notebook or feedback_notebook(), path)
    html, _ = HTMLExporter(config=formgrader.config).from_filename(str(path), resources={
        "assignment_id": "ex04_masks", "notebook_id": "ex04_masks", "submission_id": "1",
        "index": 0, "total": 1, "base_url": base_url, "student": "bob",
        "last_name": "B", "first_name": "Bob", "notebook_path": "mha-course/x.ipynb"})
    return html


def test_the_formgrader_shows_a_submission_with_the_course_config(monkeypatch, tmp_path):
    """The feedback template set for every HTMLExporter made it fail (HTTP 500)."""
    html = formgrader_page(monkeypatch, tmp_path)
    assert "formgrader" in html and "check_causal_mask" in html
    assert "formgrade.js" in html and 'id="notebook"' in html  # its own template, not ours


def test_the_formgraders_submission_page_loads_no_mathjax_from_a_cdn(monkeypatch, tmp_path):
    html = formgrader_page(monkeypatch, tmp_path)
    assert "cdnjs" not in html and "MathJax.js" not in html and "latest.js" not in html


def test_the_formgraders_submission_page_shows_the_math_as_mathml(monkeypatch, tmp_path):
    html = formgrader_page(monkeypatch, tmp_path)
    assert "<math" in html and "<msqrt>" in html and r"\sqrt" not in html


def test_the_formgraders_submission_page_tells_formgrade_js_that_math_is_ready(
        monkeypatch, tmp_path):
    """formgrade.js selects the first field once MathJax 2 signals "End" (and fails where
    MathJax is undefined): a stand-in on the page sends it."""
    html = formgrader_page(monkeypatch, tmp_path)
    assert "window.MathJax" in html and 'f("End")' in html


def test_the_feedback_template_is_set_on_the_feedback_exporter_alone(monkeypatch, tmp_path):
    from nbgrader.converters import GenerateFeedback

    app = course_app(monkeypatch, tmp_path)
    assert "template_name" not in app.config.HTMLExporter
    converter = GenerateFeedback(coursedir=app.coursedir, parent=app)
    assert converter.exporter_class is FeedbackExporter


def test_the_page_loads_no_mathjax_from_a_cdn(page):
    assert "cdnjs" not in page and "MathJax.js" not in page


def test_the_page_shows_the_math_as_mathml(page):
    assert "<math" in page and "<msqrt>" in page


def test_the_page_wraps_long_lines(page):
    assert "white-space: pre-wrap" in page


def test_the_page_wraps_at_spaces_not_mid_word(page):
    """bootstrap.min.css, inlined first, says `pre { word-break: break-all }`; the page's own
    style, inlined after it, says otherwise."""
    assert page.index("word-break:break-all") < page.index("word-break: normal")


def test_the_page_has_no_link_that_would_blank_jupyterlabs_viewer(page):
    """Every href navigates JupyterLab's sandboxed HTML viewer away (a page that refuses
    framing): the page has none."""
    assert "href=" not in re.sub(r"<link[^>]*>", "", page)


def test_the_page_holds_no_script(page):
    """JupyterLab's HTML viewer shows the page in a frame without allow-scripts: a script
    there only logs "Blocked script execution" (and tempts a student to press Trust HTML)."""
    assert "<script" not in page.lower()


def scripted_notebook():
    """A graded notebook whose student left outputs that bring scripts: JavaScript, HTML with
    a script and an inline handler, a widget (with its state saved in the notebook)."""
    nb = feedback_notebook()
    view = {"model_id": "m1", "version_major": 2, "version_minor": 0}
    nb.cells.append(nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", data={
            "application/javascript": "console.log('hi')", "text/plain": "<js>"}),
        nbformat.v4.new_output("display_data", data={
            "text/html": '<b onmouseover="alert(1)">bold</b><script>alert(2)</script>',
            "text/plain": "bold"}),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": view,
            "text/plain": "IntSlider(value=3)"})]))
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0}}
    return nb


def test_outputs_that_bring_scripts_leave_none_on_the_page(monkeypatch, tmp_path):
    page = render_feedback(monkeypatch, tmp_path, scripted_notebook())
    assert "<script" not in page.lower()
    assert not re.search(r"\son[a-z]+\s*=", re.sub(r"<style.*?</style>", "", page, flags=re.S))
    assert "<b>bold</b>" in page  # the output's HTML stays, without what would run
    assert "interactive output: open the notebook to use it" in page


def test_the_score_summary_names_each_test_cell(page):
    assert "Test cell <code>test_causal</code> (Score: 0.0 / 2.0)" in page
    assert "(Top)" not in page


def test_the_lesson_link_becomes_the_lessons_name_and_file(page):
    assert "lesson 04, masks (04_masks.ipynb)" in page


def test_a_web_link_is_written_out(page):
    assert "Colab (https://colab.research.google.com/x)" in page


def test_rendering_the_page_warns_about_no_config_option(rendered):
    assert not [m for m in rendered[1] if "not recognized" in m]


def test_plain_links_keeps_text_around_links():
    out = plain_links('<p>See <a href="#x">here</a> and <a href="a/b.ipynb">b</a>.</p>')
    assert out == "<p>See here and b (b.ipynb).</p>"


def test_the_page_leaves_out_the_cells_that_launch_and_install_elsewhere():
    from feedback_page import FeedbackExporter

    nb = feedback_notebook()
    nb.cells[1:1] = [
        nbformat.v4.new_markdown_cell("Run it without installing anything: [Open in Colab](x)",
                                      metadata={"tags": ["launch-header"]}),
        nbformat.v4.new_code_cell("#@title Install the course package where it is missing",
                                  metadata={"tags": ["launch-install"]})]
    page, _ = FeedbackExporter().from_notebook_node(nb)
    assert "Open in Colab" not in page and "Install the course package" not in page
    assert "lesson 04, masks" in page  # the rest stays


def test_every_sets_launch_cells_carry_the_tags_the_page_leaves_out():
    from feedback_page import LAUNCH_TAGS

    sets = sorted((COURSE.parent / "notebooks" / "exercises").glob("ex*.ipynb"))
    assert sets
    for path in sets:
        nb = nbformat.read(path, as_version=4)
        launch = [c for c in nb.cells if "colab.research.google.com" in c.source
                  or "MHA_INSTALL_FROM" in c.source]
        assert launch and all(LAUNCH_TAGS & set(c.metadata.get("tags", [])) for c in launch), \
            path.name


# -- the intro's "First run the two code cells below: the install cell ..." (course/class_copy.py)

SETS = sorted((COURSE.parent / "notebooks" / "exercises").glob("ex*.ipynb"))
SOURCES = sorted((COURSE / "source").glob("ex*/ex*.ipynb"))


def intro_of(nb) -> str:
    return next(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", SETS + SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sets_intro_says_once_to_run_the_install_cell_in_words_class_copy_rewrites(path):
    """All ten sets, released and source: if the sentence is reworded, the class hub's copy and
    the feedback page would keep telling students to run an install cell they do not have."""
    from class_copy import RUN_FIRST

    nb = nbformat.read(path, as_version=4)
    assert len(RUN_FIRST.findall(intro_of(nb))) == 1, intro_of(nb)
    assert sum(len(RUN_FIRST.findall(c.source)) for c in nb.cells) == 1


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_without_the_launch_cells_no_cell_mentions_an_install_cell_or_a_launch(path):
    from class_copy import RUN_FIRST_HERE, without_launch_cells

    nb = nbformat.read(path, as_version=4)
    before = len(nb.cells)
    nb = without_launch_cells(nb)
    assert len(nb.cells) == before - 2
    assert RUN_FIRST_HERE in intro_of(nb)
    text = "\n".join(c.source for c in nb.cells)
    for word in ("install cell", "colab.research.google.com", "mybinder.org", "MHA_INSTALL_FROM"):
        assert word not in text, word
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "from mha import checks" in first_code.source  # "the code cell below: the imports"


def test_the_page_of_a_set_with_launch_cells_says_to_run_the_imports_only():
    """The walkthrough: the page left the install cell out but its intro still said "First run
    the two code cells below: the install cell ...". Rendered from a released set as it is
    outside the hub (both launch cells present)."""
    from class_copy import RUN_FIRST_HERE

    nb = nbformat.read(COURSE.parent / "notebooks" / "exercises" / "ex04_masks.ipynb", 4)
    page, _ = FeedbackExporter().from_notebook_node(nb)
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "install cell" not in text and "two code cells" not in text
    assert RUN_FIRST_HERE in text
    assert "Install the course package" not in text and "Open in Colab" not in text


# -- the label before a test cell's failure: the lessons' "Not yet: ", not a class name ----------

def graded_test_cell(task: str, variable: str, answer):
    """A test cell of ``task`` as autograde leaves it: its hidden line's records of ``answer``,
    then GradeOutsideKernel's verdict in place of its outputs."""
    import json

    import mha_grading

    from mha.checks import grading

    records = []
    original = grading._emit
    grading._emit = lambda r: records.append(json.loads(json.dumps(r)))
    try:
        grading.record(task, answer)
    finally:
        grading._emit = original
    cell = nbformat.v4.new_code_cell(
        f'checks.check_{task}({variable})\n_grading.record("{task}", {variable})',
        metadata={"nbgrader": {**GRADE, "grade_id": f"test_{variable}"}},
        outputs=[nbformat.v4.new_output("display_data", data={grading.MIME: r, "text/plain": ""})
                 for r in records])
    mha_grading.GradeOutsideKernel().grade(cell, [])
    return cell


def causal_stub(t):
    raise NotImplementedError()


def causal_not_strict(t):  # the diagonal masked too
    import numpy as np
    return np.triu(np.ones((t, t), bool))


@pytest.mark.parametrize("answer, said", [
    (causal_stub, "Not yet: causal: not attempted yet"),
    (causal_not_strict, "Not yet: causal: "),
])
def test_the_page_labels_a_failed_test_cell_as_the_lessons_do_not_by_its_class(
        monkeypatch, tmp_path, answer, said):
    """The page said "NotAttempted: causal: ..." and "CheckFailed: causal: ...": code names,
    where a lesson's your-turn cell says "Not yet: ". The error output keeps its ename (the
    exception's class: tests, nbgrader) and message; the page shows the traceback."""
    from bs4 import BeautifulSoup

    cell = graded_test_cell("causal_mask", "causal", answer)
    (out,) = cell.outputs
    assert out.output_type == "error"
    assert out.ename == ("NotAttempted" if answer is causal_stub else "CheckFailed")
    assert out.traceback == ["Not yet: " + out.evalue]
    nb = nbformat.v4.new_notebook(cells=[cell])
    page = render_feedback(monkeypatch, tmp_path, nb)
    shown = BeautifulSoup(page, features="html.parser").select_one(".output_error").get_text()
    assert " ".join(shown.split()).startswith(said), shown
    assert "NotAttempted" not in page and "CheckFailed" not in page
