"""What the book adds to the committed notebooks when it renders them (never to the files).

- Alt text for every stored picture, from tools/figure_alt_text.py (the cell's
  ``mystnb.image.alt``, a widget's stored text, the figure titles in the code,
  or the first comment line); a picture with none is a build warning.
- After each widget: a line saying what the live widget does (its class
  docstring's first paragraph, read from src/mha/widgets/ without importing it)
  and that the page shows its stored picture.
- On each exercise set: a note that it runs in JupyterLab, Colab or Binder, with its links.
- Left out: check cells (tag ``check``: asserts pinning the prose's numbers) and the install
  cell tools/launch.py adds (tag ``launch-install``); the launch header with its Colab and
  Binder links stays. The index's ``<!-- launch-links -->`` becomes lesson 00's links.
- "Check yourself" answers and "Your turn" solutions stay in closed ``<details>``: an answer
  under a numbered question is indented into the list item (else the markdown parser ends
  the list and shows the answer outside its ``<details>``).
- MathJax and its CHTML font, copied from book/node_modules/ into _static/.

Every launch link comes from tools/launch.py (one address, in pyproject.toml).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from functools import cache
from pathlib import Path

from sphinx.util import logging

BOOK = Path(__file__).resolve().parents[1]
ROOT = BOOK.parent
sys.path.insert(0, str(ROOT / "tools"))
import figure_alt_text  # noqa: E402
import launch  # noqa: E402

logger = logging.getLogger(__name__)
NODE_MODULES = BOOK / "node_modules"
WIDGETS = ROOT / "src" / "mha" / "widgets"
MATHJAX_FILES = ("tex-chtml.js", "a11y", "adaptors", "input", "output", "sre", "ui", "LICENSE",
                 "package.json")

EXERCISE_NOTE = """\
:::{admonition} An exercise set: run it in a kernel
:class: exercise-note

This page is the student version of the exercise set, to read. Its answers are checked
by code, so work on it in JupyterLab (`make lab`, then open
`notebooks/exercises/%s.ipynb`), in [Colab](%s) or on [Binder](%s).
:::
"""
LEFT_OUT = {"check", launch.INSTALL}
ITEM = re.compile(r"^(\d+\.|[-*+])\s+")


def details_in_list_items(source: str) -> str:
    """Indent a ``<details>`` block that follows a list item into that item, so the answer
    stays inside the item and inside its ``<details>``."""
    lines, out, indent, inside = source.split("\n"), [], None, False
    for line in lines:
        item = ITEM.match(line)
        if item:
            indent = " " * len(item.group(0))
        elif line.startswith("<details") and indent is not None:
            inside = True
        elif line and not line[0].isspace() and not inside:
            indent = None  # a paragraph at the margin ends the list
        out.append(indent + line if inside and line else line)
        if inside and "</details>" in line:
            inside = False
    return "\n".join(out)

WIDGET_NOTE = """\
:::{admonition} Live widget
:class: widget-note

%s In JupyterLab or Binder the controls redraw the picture; this page shows the
picture stored with the notebook.
:::
"""


@cache
def widget_summaries() -> dict[str, str]:
    """{class name: first paragraph of its docstring} for every class in src/mha/widgets/."""
    summaries = {}
    for path in sorted(WIDGETS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node):
                paragraph = ast.get_docstring(node).split("\n\n")[0]
                summaries[node.name] = " ".join(paragraph.replace("``", "").split())
    return summaries


def widget_note(cell) -> str:
    text = figure_alt_text.widget_text(cell) or ""
    name = text.split(":", 1)[0].strip()
    summary = widget_summaries().get(name)
    what = f"`{name}`: {summary}" if summary else "An interactive explorer."
    return WIDGET_NOTE % what


def markdown_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def launch_links() -> str:
    project, lesson = launch.Project(), "notebooks/00_start_here.ipynb"
    return (f"[Open lesson 00 in Colab]({project.colab(lesson)}) or "
            f"[on Binder]({project.binder(lesson)}).")


def add_book_cells(app, docname: str, source: list[str]) -> None:
    """source-read: alt text, widget lines and the exercise note, in the notebook JSON."""
    if docname == "index":
        source[0] = source[0].replace("<!-- launch-links -->", launch_links())
        return
    if not docname.startswith("notebooks/"):
        return
    nb = json.loads(source[0])
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if LEFT_OUT & set(cell.get("metadata", {}).get("tags", [])):
            continue
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            cell["source"] = details_in_list_items(text) if "<details" in text else text
        cells.append(cell)
        if cell["cell_type"] != "code" or not figure_alt_text.has_picture(cell):
            continue
        alt = figure_alt_text.alt_text(cell)
        if alt is None:
            logger.warning("%s: cell %d stores a picture with no alt text (give the figure a "
                           "title, or run tools/figure_alt_text.py --set)", docname, index,
                           location=docname, type="course_pages", subtype="alt_text")
        else:
            mystnb = cell.setdefault("metadata", {}).setdefault("mystnb", {})
            mystnb.setdefault("image", {})["alt"] = alt
        if figure_alt_text.widget_text(cell) is not None:
            cells.append(markdown_cell(widget_note(cell), f"book-widget-note-{index}"))
    if docname.startswith("notebooks/exercises/"):
        name = docname.rsplit("/", 1)[1]
        path = f"notebooks/exercises/{name}.ipynb"
        project = launch.Project()
        cells.insert(1, markdown_cell(EXERCISE_NOTE % (name, project.colab(path),
                                                       project.binder(path)),
                                       "book-exercise-note"))
    nb["cells"] = cells
    source[0] = json.dumps(nb)


INLINE_MATH = re.compile(r"\\\((.*?)\\\)")


def plain_math(tex: str) -> str:
    """A title's TeX as plain text for the browser tab: \\sqrt{d_k} -> sqrt(d_k)."""
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", tex)
    text = re.sub(r"\\times\b", "x", text)
    text = re.sub(r"\\[A-Za-z]+\s*", "", text)  # other commands (\\mathbf{x} -> x)
    return text.replace("{", "").replace("}", "")


def plain_page_title(app, pagename, templatename, context, doctree) -> None:
    """html-page-context: no raw TeX in <title> (MathJax typesets the page, not the tab)."""
    if context.get("title"):
        context["title"] = INLINE_MATH.sub(lambda m: plain_math(m.group(1)), context["title"])


def copy_mathjax(app, exception) -> None:
    """build-finished: MathJax (no Node-only builds) and the CHTML font into _static/."""
    if exception is not None or app.builder.format != "html":
        return
    mathjax, font = NODE_MODULES / "mathjax", NODE_MODULES / "@mathjax" / "mathjax-newcm-font"
    if not (mathjax / "tex-chtml.js").is_file() or not (font / "chtml").is_dir():
        raise RuntimeError(f"MathJax is missing from {NODE_MODULES}: run `make book` "
                           "(npm ci --no-audit --no-fund in book/)")
    static = Path(app.outdir) / "_static"
    shutil.rmtree(static / "mathjax", ignore_errors=True)
    # tex-chtml.js and what it loads on demand (the accessibility explorer and its
    # speech rules, TeX extensions, the menu); not the other combined builds.
    for name in MATHJAX_FILES:
        if (mathjax / name).is_dir():
            shutil.copytree(mathjax / name, static / "mathjax" / name)
        else:
            (static / "mathjax").mkdir(parents=True, exist_ok=True)
            shutil.copy2(mathjax / name, static / "mathjax" / name)
    target = static / "mathjax-fonts" / "mathjax-newcm-font"
    shutil.copytree(font / "chtml", target / "chtml", dirs_exist_ok=True)
    shutil.copy2(font / "chtml.js", target / "chtml.js")
    shutil.copy2(font / "package.json", target / "package.json")


def setup(app):
    # conf.py's digest of this module, the templates, tools/figure_alt_text.py and the widget
    # docstrings: when it changes, every page is read again ("env").
    app.add_config_value("course_pages_inputs", "", "env", types=frozenset({str}))
    # MathJax on every page, also those whose body has no math (the sidebar's titles do).
    app.set_html_assets_policy("always")
    app.connect("source-read", add_book_cells)
    app.connect("html-page-context", plain_page_title)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
