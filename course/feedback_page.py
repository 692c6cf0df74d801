"""The feedback page a student opens: math typeset offline, long lines wrapped.

nbgrader's feedback HTML loads MathJax from a CDN (the page shows raw ``$q k^\\top$`` where
that is blocked, and inside JupyterLab's HTML viewer scripts do not run at all) and lets a
long error line run off the right edge. Here, ``MathToMathML`` turns every ``$...$`` and
``$$...$$`` of the markdown cells into MathML (latex2mathml), which the browser draws with
no script and no network; the ``mha_feedback`` template (feedback_template/) drops the
MathJax script tag and wraps long lines. course/nbgrader_config.py turns both on.
"""

from __future__ import annotations

import html
import os
import re

from nbconvert.preprocessors import Preprocessor

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "feedback_template")
TEMPLATE_NAME = "mha_feedback"

_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)([^$\n]+?)(?<!\\)\$")


def to_mathml(latex: str, display: bool) -> str:
    """One formula as MathML; the TeX source, escaped, where it cannot be converted."""
    from latex2mathml.converter import convert

    try:
        return convert(latex.strip(), display="block" if display else "inline")
    except Exception:  # an unusual macro: show the source rather than lose the cell
        return f"<code>{html.escape(latex)}</code>"


def markdown_math_to_mathml(text: str) -> str:
    """Every ``$$...$$`` (block) and ``$...$`` (inline) of ``text`` as MathML; code spans
    and fenced blocks are left alone."""
    parts = re.split(r"(```.*?```|`[^`\n]*`)", text, flags=re.S)
    for i in range(0, len(parts), 2):  # the even parts are outside code
        parts[i] = _DISPLAY.sub(lambda m: to_mathml(m.group(1), True), parts[i])
        parts[i] = _INLINE.sub(lambda m: to_mathml(m.group(1), False), parts[i])
    return "".join(parts)


class MathToMathML(Preprocessor):
    """Markdown cells' math to MathML, before the page is rendered."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown" and "$" in cell.source:
            cell.source = markdown_math_to_mathml(cell.source)
        return cell, resources


def template_dirs() -> list[str]:
    """Where nbconvert finds ``mha_feedback`` and the nbgrader ``feedback`` it extends."""
    import nbgrader

    nbgrader_templates = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions",
                                      "formgrader", "templates")
    return [nbgrader_templates, TEMPLATES]
