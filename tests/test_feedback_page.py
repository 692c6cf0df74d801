"""The feedback page a student opens (course/feedback_page.py): math typeset offline as
MathML, no MathJax from a CDN, long lines wrapped. The whole flow (autograde, then
generate_feedback) is run by tests/test_classroom.py and tests/test_classroom_hub.py."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

COURSE = Path(__file__).resolve().parents[1] / "course"
sys.path.insert(0, str(COURSE))
from feedback_page import (  # noqa: E402
    TEMPLATE_NAME,
    MathToMathML,
    WrapLongLines,
    markdown_math_to_mathml,
    template_dirs,
)


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


@pytest.fixture
def page(tmp_path):
    nbgrader = pytest.importorskip("nbgrader")
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from traitlets.config import Config

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(r"The scores are $q k^\top / \sqrt{d_k}$."),
        nbformat.v4.new_code_cell("raise ValueError('x' * 400)", outputs=[nbformat.v4.new_output(
            "error", ename="ValueError", evalue="x" * 400,
            traceback=["ValueError: " + "x" * 400])]),
    ])
    config = Config()
    config.HTMLExporter.template_name = TEMPLATE_NAME
    config.HTMLExporter.extra_template_basedirs = template_dirs(str(tmp_path / "templates"))
    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    # nbgrader's own GenerateFeedback adds the folder of the bootstrap.css its page inlines
    config.HTMLExporter.extra_template_paths = [
        str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")]
    exporter = HTMLExporter(config=config)
    for pre in (MathToMathML, CSSHTMLHeaderPreprocessor, WrapLongLines):
        exporter.register_preprocessor(pre, enabled=True)
    html, _ = exporter.from_notebook_node(nb, resources={"nbgrader": {
        "notebook": "ex", "score": 0.0, "max_score": 1.0, "late_penalty": 0.0}})
    return html


def test_the_page_loads_no_mathjax_from_a_cdn(page):
    assert "cdnjs" not in page and "MathJax.js" not in page


def test_the_page_shows_the_math_as_mathml(page):
    assert "<math" in page and "<msqrt>" in page


def test_the_page_wraps_long_lines(page):
    assert "white-space: pre-wrap" in page
