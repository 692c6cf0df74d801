"""The feedback page a student opens: math typeset offline, long lines wrapped.

nbgrader's feedback HTML loads MathJax from a CDN (the page shows raw ``$q k^\\top$`` where
that is blocked, and inside JupyterLab's HTML viewer scripts do not run at all) and lets a
long error line run off the right edge. Here, ``MathToMathML`` turns every ``$...$`` and
``$$...$$`` of the markdown cells into MathML (latex2mathml), which the browser draws with
no script and no network; ``WrapLongLines`` adds a style that wraps long lines; and the
``feedback`` template used is nbgrader's own feedback template, read from the installed
nbgrader, without its MathJax script tag (written to ``.feedback_template/`` beside this
file, so it always matches the nbgrader that renders it). course/nbgrader_config.py turns
them on. The Formgrader's submission page gets the same: MathToMathML on its HTMLExporter and
nbgrader's ``formgrade`` template with a stand-in for MathJax (``.formgrade_template/``,
``formgrade_template_dirs``), so it requests nothing outside the machine either.

``FeedbackExporter`` renders the feedback pages, and only them (GenerateFeedback's
``exporter_class``): the template is set on it, not on every HTMLExporter, since the
Formgrader renders each submission with an HTMLExporter and its own ``formgrade`` template.
It leaves no link on the page: the page is read in JupyterLab's HTML viewer, a sandboxed
frame whose ``<base>`` is the file's download URL, so any link (an in-page anchor, the
lesson's relative link, a web address) navigates the frame to a page that refuses to be
framed, and the feedback goes blank. Each link becomes its text (``plain_links``). The cells
that open the notebook on Colab or Binder and install the package there (tagged
``launch-header`` / ``launch-install``) are left out: feedback is read, not run; the intro's
"First run the two code cells below: the install cell ..." then names the imports only
(course/class_copy.py). Nor does it hold a script (``no_scripts``): the viewer's frame would
not run it, and a student's output that brought one (JavaScript, a widget, HTML with a script)
shows a note instead.
"""

from __future__ import annotations

import copy
import html
import os
import re

from class_copy import LAUNCH_TAGS, without_launch_cells  # noqa: F401 (LAUNCH_TAGS: tests)
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import GetGrades
from traitlets import Bool, default

HERE = os.path.dirname(os.path.abspath(__file__))
# The derived template keeps nbgrader's name: the Formgrader's "generate feedback" button asks for
# 'feedback' by name (nbgrader.apps.api forces it), and the search path holds only this copy.
TEMPLATE_NAME = "feedback"
MATHJAX_CALL = "{{ mathjax() }}"  # nbgrader 0.9's feedback template loads MathJax from a CDN
# Wrapped at spaces: bootstrap's `pre { word-break: break-all }`, which the page inlines, broke
# a message mid-word ("zeroin|g"); a token longer than the line still breaks (overflow-wrap).
WRAP_CSS = """
pre, div.output_area pre, div.output_subarea pre {
  white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }
div.output_subarea { max-width: 100%; }
math { font-size: 1.05em; }
"""

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

    enabled = Bool(True).tag(config=True)  # nbconvert runs a preprocessor only when enabled

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown" and "$" in cell.source:
            cell.source = markdown_math_to_mathml(cell.source)
        return cell, resources


class WrapLongLines(Preprocessor):
    """A style that wraps long output lines (an error message, a printed array) instead of
    letting them run off the right edge; runs after nbconvert's CSSHTMLHeaderPreprocessor."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        resources.setdefault("inlining", {}).setdefault("css", []).append(WRAP_CSS)
        return nb, resources


class InstructorCommentsOnly(GetGrades):
    """nbgrader's GetGrades, but an answer's comment on the page is the instructor's own
    (the gradebook's ``manual_comment``), never the autograder's "No response." for an
    untouched answer: that put a "Comment" row in the score summary and "Comments: No
    response." under the answer, and a student wondered whether a teacher's reply was
    missing. With no instructor comment the cell has none, and nbgrader's feedback template
    shows neither."""

    def _get_comment(self, cell, resources):
        comment = self.gradebook.find_comment(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id,
            self.student_id)
        text = comment.manual_comment
        cell.metadata.nbgrader["comment"] = text if text and text.strip() else None


def template_dirs(folder: str | None = None) -> list[str]:
    """A template folder holding ``feedback``: nbgrader's installed feedback template
    without its MathJax call (the math is MathML already). Where nbgrader's template has no
    such call, it is used as it is."""
    base = folder or os.path.join(HERE, ".feedback_template")
    return [_derive(TEMPLATE_NAME, base, "<!-- math is MathML: no MathJax -->")]


# The Formgrader's submission page: nbgrader's 'formgrade' template, whose header loads
# MathJax 2.7.7 from cdnjs ({{ mathjax() }} with the macro's default address, whatever
# HTMLExporter.mathjax_url says). formgrade.js then waits for MathJax's startup signal "End"
# to select the first field (and stops where MathJax is undefined): the stand-in sends it.
FORMGRADE_NAME = "formgrade"
MATHJAX_STANDIN = """<!-- math is MathML: no MathJax; formgrade.js waits for its startup -->
<script>
window.MathJax = {Hub: {Startup: {signal: {Interest: function (f) {
  setTimeout(function () { f("End"); }, 0); }}}, Queue: function () {}}};
</script>
<!-- outputs wrap: a long CheckFailed message was one line, clipped at the panel's edge -->
<style type="text/css">""" + WRAP_CSS + "</style>"


def _derive(name: str, folder: str, replacement: str) -> str:
    """nbgrader's installed template ``name`` copied into ``folder``/``name`` with its
    MathJax call replaced; returns ``folder``."""
    import nbgrader

    source = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions",
                          "formgrader", "templates", name)
    target = os.path.join(folder, name)
    os.makedirs(target, exist_ok=True)
    for entry in os.listdir(source):
        with open(os.path.join(source, entry)) as f:
            text = f.read()
        if entry.endswith(".j2"):
            text = text.replace(MATHJAX_CALL, replacement)
        with open(os.path.join(target, entry), "w") as f:
            f.write(text)
    return folder


def formgrade_template_dirs(folder: str | None = None) -> list[str]:
    """The template folders of the Formgrader's submission page: one holding ``formgrade``,
    nbgrader's installed template with a stand-in for MathJax (the math is MathML already:
    MathToMathML runs on that page's HTMLExporter), then nbgrader's own templates folder,
    which the Formgrader sets and a setting of HTMLExporter.extra_template_basedirs replaces."""
    import nbgrader

    nbgraders = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions",
                             "formgrader", "templates")
    base = folder or os.path.join(HERE, ".formgrade_template")
    return [_derive(FORMGRADE_NAME, base, MATHJAX_STANDIN), nbgraders]


def plain_links(page: str) -> str:
    """``page`` with every link replaced by its text. A score summary entry ("Test cell",
    linking to the cell) names the cell's id instead; "(Top)" and the headings' pilcrows go;
    a web address is written after its text, a file's name after the text that links it
    ("lesson 04, masks (04_masks.ipynb)")."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, features="html.parser")
    for a in soup.find_all("a", href=True):
        href, text = a["href"].strip(), a.get_text().strip()
        if href.startswith("#"):
            if text in ("(Top)", "\u00b6", "") or "anchor-link" in (a.get("class") or []):
                a.decompose()
                continue
            if a.find_parent(id="toc") is not None:
                code = soup.new_tag("code")
                code.string = href[1:].removeprefix("comment-")
                a.insert_after(code)
                a.insert_after(" ")
        elif re.match(r"[a-z][a-z0-9+.-]*:", href, re.I):  # a web address, mailto:, ...
            if href != text:
                a.insert_after(f" ({href})")
        else:  # a relative link: a file beside the notebook (a lesson), not beside this page
            name = href.split("#")[0].split("?")[0].rstrip("/").split("/")[-1]
            if name and name != text:
                a.insert_after(f" ({name})")
        a.unwrap()
    return str(soup)


INTERACTIVE = "(interactive output: open the notebook to use it)"


def no_scripts(page: str) -> str:
    """``page`` with nothing that would run: no ``<script>`` (a JavaScript output, a widget's
    view and saved state, a script inside an HTML output), no inline handler (``onclick=``...).
    JupyterLab's HTML viewer shows the page in a frame without ``allow-scripts``, where each
    would only log "Blocked script execution" and make the viewer's "Trust HTML" look needed.
    An output left empty by this (a JavaScript output, a widget) says what it was."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, features="html.parser")
    for script in soup.find_all("script"):
        script.decompose()
    for tag in soup.find_all(True):
        for name in [a for a in tag.attrs if a.lower().startswith("on")]:
            del tag[name]
    for box in soup.select("div.output_javascript, div.output_widget_view"):
        if not box.get_text(strip=True):
            note = soup.new_tag("pre")
            note.string = INTERACTIVE
            box.append(note)
    return str(soup)


class FeedbackExporter(HTMLExporter):
    """The HTML exporter of the feedback pages (see the module's docstring)."""

    @default("exclude_anchor_links")
    def _no_heading_anchors(self):
        return True

    @property
    def default_config(self):
        # HTMLExporter states its output priority for every NbConvertBase, which nbgrader's
        # preprocessors (ClearHiddenTests, ScrubHiddenSource) redeclare without config=True:
        # each warned "Config option `display_data_priority` not recognized". Only the
        # filters that pick an output's type read it, so it is given to them alone.
        c = super().default_config
        priority = c.NbConvertBase.pop("display_data_priority", None)
        if priority is not None:
            c.DataTypeFilter.display_data_priority = priority
            c.WidgetsDataTypeFilter.display_data_priority = priority
        return c

    def from_notebook_node(self, nb, resources=None, **kw):
        nb = without_launch_cells(copy.deepcopy(nb))  # feedback is read, not run
        page, resources = super().from_notebook_node(nb, resources, **kw)
        return no_scripts(plain_links(page)), resources
