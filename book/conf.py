"""Sphinx configuration of the offline book: the lessons and exercise sets as web pages.

    make book      (npm ci for MathJax and axe-core, then sphinx-build into book/_build/html)

The pages come from the committed notebooks with their stored outputs; nothing
is executed. Nothing is fetched from the network when a page opens: MathJax and
its font are copied from book/node_modules/ into the site (see _ext/course_pages.py),
widgets show their stored picture, and the theme's own assets are bundled.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parent
sys.path.insert(0, str(BOOK / "_ext"))

project = "Multi-head attention, from one weighted sum to the KV cache"
author = "the mha-course authors"
copyright = "the mha-course authors, MIT licence"

extensions = ["myst_nb", "course_pages"]
# What the pages depend on beyond the notebooks and this file: a change to any of these
# changes this value, and Sphinx then reads and writes every page again.
course_pages_inputs = hashlib.sha256(b"".join(
    path.read_bytes() for path in sorted([*(BOOK / "_ext").glob("*.py"),
                                          *(BOOK / "_templates").glob("*.html"),
                                          BOOK.parent / "tools" / "figure_alt_text.py",
                                          BOOK.parent / "tools" / "launch.py",
                                          BOOK.parent / "pyproject.toml",
                                          *(BOOK.parent / "src" / "mha" / "widgets").glob("*.py")])
)).hexdigest()

root_doc = "index"
# book/notebooks is a symlink to ../notebooks: the pages are the committed notebooks.
include_patterns = ["index.md", "notebooks/[0-9][0-9]_*.ipynb", "notebooks/exercises/ex*.ipynb"]
exclude_patterns = ["_build", "node_modules", "**/.ipynb_checkpoints"]

# -- notebooks: stored outputs only ---------------------------------------------------
nb_execution_mode = "off"
nb_output_stderr = "show"
# No require.js and no widget manager from a CDN: a widget shows the PNG stored with it.
nb_ipywidgets_js = {}
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# -- math: MathJax 4 from the site itself ---------------------------------------------
mathjax_path = "mathjax/tex-chtml.js"  # under _static/, copied by course_pages
mathjax3_config = {  # becomes window.MathJax (myst-nb adds options.processHtmlClass)
    # The font from the local copy: by default MathJax 4 fetches it from a CDN.
    "loader": {"paths": {"fonts": "[mathjax]/../mathjax-fonts"}},
    "tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
    # Screen readers get hidden MathML beside each formula. MathJax's own speech runs in a
    # web worker, which a page opened from file:// cannot start (MathJax then never ends
    # its start-up); it is off, and a reader can switch it on in MathJax's menu.
    "options": {"menuOptions": {"settings": {
        "assistiveMml": True, "speech": False, "braille": False}}},
}
# course_pages sets the HTML assets policy to "always": MathJax on every page.

# -- HTML -------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "Multi-head attention"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_favicon = "_static/favicon.svg"  # else the browser asks for /favicon.ico (a 404)
templates_path = ["_templates"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_context = {"default_mode": "light"}
# The sidebar holds the list of pages only: the theme's logo block sat outside every landmark
# (axe-core's "region") and its search button repeats the one in the header bar. The list's
# first entry is the home page.
html_sidebars = {"**": ["sbt-sidebar-nav.html"]}
