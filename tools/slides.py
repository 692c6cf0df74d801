"""Slides for the lessons, set by one rule so no author edits slide metadata by hand.

    python tools/slides.py [NOTEBOOK ...]          set it in place (default: every lesson)
    python tools/slides.py --check [NOTEBOOK ...]  exit 1 and name the cells that differ
    python tools/slides.py --export DIR [NOTEBOOK ...]  static HTML decks (``make slides``)

A deck shows what a lecturer shows: the prose, the key code, the pictures.

**What stays out** (``slide_type: skip``, which RISE and ``nbconvert --to slides``
both honour):

- check cells (tag ``check``: asserts that pin the prose's numbers, docs/AUTHORING.md);
- the launch cells tools/launch.py inserts (tags ``launch-header``, ``launch-install``);
- the set-up cell (the lesson's first other code cell: imports, seeds, print options).
  Presenting live under RISE, run the notebook first (Run > Run All Cells): the slides
  share its kernel;
- long listings: a code cell of more than :data:`LONG_SOURCE` lines, one calling
  ``show_source`` or one printing more than :data:`LONG_OUTPUT` lines;
- everything from the ``## Going deeper`` heading on (optional material, read in the
  notebook; no deck shows it).

**Where slides start**, among the cells that stay:

- the title cell, every ``#`` or ``##`` heading, a code cell that shows a widget: ``slide``;
- a ``###`` heading; the cell after a widget; the cell after a "**Predict.**" prompt
  (the answer comes after the question, on the next slide); a cell that would push the
  slide past :data:`BUDGET` estimated pixels of a 1280 x 720 slide: ``subslide``;
- everything else: ``-`` (continues the slide above).

**What a slide that shows code carries** (code is read from the back of a room: one
cell at a time, at the full font, with little prose around it):

- one code cell: a cell whose code is shown starts a ``subslide`` when the slide already
  shows code, or more than :data:`LEAD_LINES` (3) lines of prose (headings aside);
- at most :data:`CODE_LINES` (20) lines of code and printed output, long lines counted as
  the lines they wrap to (:func:`code_lines`): a cell that would pass that starts a
  ``subslide``; in a static deck, a single cell taller than that shows its code on one
  slide and its printed output (tag ``slides-output-only``) on the next;
- at most :data:`CODE_SLIDE_PROSE` (4) lines of prose (:func:`prose_lines`): prose after
  the output that would pass it starts a ``subslide``; so does prose after the output that
  leads into the next code cell (it ends with a colon), which then stands above that code;
- printed output at :data:`MIN_OUTPUT_FONT` (16 px) or larger: a table wider than the slide
  shrinks from 19 px down to that, then wraps (counted as :data:`OUTPUT_CHARS` per line).

tests/test_slides.py checks these on every deck as estimated; the browser test measures
them on the drawn slides. Most code slides are then: a short lead-in, the code, its output.

Heights are estimated from the text (:func:`estimate`: lines, wrapped at the slide's
width, and each picture's size); tests/browser/test_browser_slides.py opens every slide
of every deck at 1280 x 720 and fails on content taller or wider than the slide.

The notebook's ``metadata.rise`` sets RISE's theme (``white``, whose fonts ship with
reveal.js) and scrolling (a slide taller than the screen scrolls under RISE, which
shows live outputs of any size). :func:`apply` is deterministic, so executing an
unchanged lesson twice (tools/execute_notebooks.py calls it) leaves the file
byte-identical.

**The static decks** (``--export``, ``make slides``): :func:`deck_notebook` turns a copy
of each lesson into what the deck shows (the rule applied again to what is left, nothing
skipped twice): the skipped cells removed, assert lines taken
out of the code that stays, a long markdown cell cut into slide-sized parts, each
widget replaced by the picture it stores plus a line saying the live widget needs the
notebook (no widget JavaScript is loaded: it would draw controls that move nothing),
every picture given the alt text of tools/figure_alt_text.py, and every link to a
notebook (the folder holds none) made a link to that lesson's deck or, for an exercise set,
to its Binder launch link (:func:`deck_links`). "Check yourself" answers sit in
``<details>``: hidden until the lecturer clicks "Answer". ``jupyter
nbconvert --to slides`` with tools/slides_offline.html.j2 then writes
``DIR/NN_topic.slides.html``; ``DIR/vendor`` holds only the files the decks load
(:data:`VENDOR_FILES`, copied from npm packages pinned in :data:`VENDOR`, installed once
into ``build/slides-npm``): reveal.js, require.js, jQuery and MathJax 2 (CommonHTML
output, TeX fonts). The decks name them by relative paths, so the folder opens
offline, from a file or a server.
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import figure_alt_text  # noqa: E402
import launch  # noqa: E402

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RISE = {"scroll": True, "theme": "white", "transition": "none"}
SKIP_TAGS = {"check", launch.HEADER, launch.INSTALL}  # tools/launch.py names the launch tags
GOING_DEEPER = re.compile(r"^##\s+Going deeper\b")
LONG_SOURCE = 16  # lines of code: longer is a listing (lesson cells hold about 15)
LONG_OUTPUT = 14  # printed lines: longer is a listing
WIDGET_NOTE_TAG = "slides-widget-note"
OUTPUT_ONLY_TAG = "slides-output-only"  # the printed output of a tall cell, on its own slide
PREDICT = re.compile(r"\*\*Predict\.\*\*")  # a prompt: its answer goes on the next slide
PICTURE_ONLY_TAG = "slides-picture-only"  # a deck shows the picture, not the code drawing it

# -- the height model (px on a 1280 x 720 slide; the deck's CSS in slides_offline.html.j2) --
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
BUDGET = 560  # estimated px per slide; the rest is margin for the estimate's error
TEXT_CHARS = 92  # characters of prose per line at the deck's font size
CODE_CHARS = 100  # characters of code per line
TEXT_LINE, CODE_LINE = 31, 25  # px per line
HEADING = {1: 80, 2: 64, 3: 50, 4: 40, 5: 36, 6: 36}
PARAGRAPH_GAP, CELL_GAP = 14, 10
IMAGE_MAX_HEIGHT = 540  # the deck's CSS caps a picture's height (max-height)
IMAGE_MAX_WIDTH = 1180
DISPLAY_MATH = 64

# -- what a slide that shows code may carry (read from the back of a room) --
CODE_LINES = 20  # lines of code + printed output on one slide, wrapped as drawn
LEAD_LINES = 3  # prose lines (headings aside) that may stand above a code cell on its slide
CODE_SLIDE_PROSE = 4  # prose lines (headings aside) on a slide that shows code
MIN_OUTPUT_FONT = 16  # px: a wide printed table shrinks to this, then wraps (template's fitWide)
OUTPUT_CHARS = 120  # characters of printed output per line at MIN_OUTPUT_FONT

VENDOR = ["reveal.js@4.6.0", "requirejs@2.3.8", "jquery@2.2.3", "mathjax@2.7.9"]
NPM = ROOT / "build" / "slides-npm"
MODULES = "vendor"
# What the decks load, relative to the npm folder's node_modules (a folder: all of it).
VENDOR_FILES = [
    "reveal.js/dist/reveal.js", "reveal.js/dist/reveal.css", "reveal.js/dist/theme/white.css",
    "reveal.js/dist/theme/fonts/source-sans-pro", "reveal.js/plugin/notes/notes.js",
    "reveal.js/LICENSE",
    "requirejs/require.js", "jquery/dist/jquery.min.js",
    "mathjax/MathJax.js", "mathjax/LICENSE", "mathjax/config/TeX-AMS_CHTML-full.js",
    "mathjax/config/Safe.js", "mathjax/extensions", "mathjax/jax/input/TeX",
    "mathjax/jax/output/CommonHTML", "mathjax/jax/element", "mathjax/fonts/HTML-CSS/TeX/woff",
    "mathjax/localization/en",
]
TEMPLATE = Path(__file__).resolve().parent / "slides_offline.html.j2"
NBCONVERT_ARGS = [
    f"--SlidesExporter.reveal_theme={RISE['theme']}",  # nbconvert's default loads web fonts
    f"--SlidesExporter.reveal_width={SLIDE_WIDTH}",
    f"--SlidesExporter.reveal_height={SLIDE_HEIGHT}",
    "--SlidesExporter.reveal_scroll=False",  # no slide may need scrolling
    "--SlidesExporter.reveal_transition=none",
    "--no-prompt",  # no In [n] / Out [n]
    "--TagRemovePreprocessor.enabled=True",
    f"--TagRemovePreprocessor.remove_input_tags={PICTURE_ONLY_TAG}",
    f"--TagRemovePreprocessor.remove_input_tags={OUTPUT_ONLY_TAG}",
    f"--reveal-prefix={MODULES}/reveal.js",
    f"--SlidesExporter.require_js_url={MODULES}/requirejs/require.js",
    f"--SlidesExporter.jquery_url={MODULES}/jquery/dist/jquery.min.js",
    f"--SlidesExporter.mathjax_url={MODULES}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
]


# -- reading cells -----------------------------------------------------------------------

def shows_widget(cell) -> bool:
    return cell.cell_type == "code" and any(
        WIDGET_VIEW in out.get("data", {}) for out in cell.get("outputs", []))


def heading_level(cell) -> int:
    """1 for '# ...', 2 for '## ...', 3 for '### ...'; 0 when the cell is not a heading."""
    if cell.cell_type != "markdown":
        return 0
    first = cell.source.lstrip().split("\n", 1)[0]
    hashes = len(first) - len(first.lstrip("#"))
    return hashes if 0 < hashes <= 6 and first[hashes:hashes + 1] == " " else 0


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def text_lines(cell, width: int | None = None) -> int:
    """Lines of text a code cell prints or returns (its text outputs); with ``width``,
    each line wrapped at that many characters, as a slide draws it."""
    count = 0
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            text = out.text
        elif "text/plain" in out.get("data", {}) and not has_picture_output(out):
            text = out.data["text/plain"]
        else:
            continue
        lines = text.rstrip("\n").splitlines()
        count += sum(_wrapped(line, width) for line in lines) if width else len(lines)
    return count


def shows_code(cell) -> bool:
    """A code cell whose source the slide shows (not a picture or an output on its own)."""
    return (cell.cell_type == "code" and not tags(cell) & {PICTURE_ONLY_TAG, OUTPUT_ONLY_TAG}
            and bool(cell.source.strip()))


def code_lines(cell) -> int:
    """Lines of code and printed output ``cell`` draws on a slide, long lines wrapped."""
    if cell.cell_type != "code":
        return 0
    source = cell.source.strip() if shows_code(cell) else ""
    return (sum(_wrapped(line, CODE_CHARS) for line in source.splitlines())
            + text_lines(cell, OUTPUT_CHARS))


def prose_lines(cell) -> float:
    """Estimated lines of prose of a markdown cell, headings aside: the height
    :func:`estimate` gives it without its headings, in lines of :data:`TEXT_LINE` px."""
    if cell.cell_type != "markdown":
        return 0.0
    body = "\n".join(line for line in cell.source.splitlines()
                     if not re.match(r"\s*#{1,6} ", line))
    return max(0, _markdown_height(body) - PARAGRAPH_GAP) / TEXT_LINE


def has_picture_output(out) -> bool:
    return any(m in out.get("data", {}) for m in figure_alt_text.IMAGES + (WIDGET_VIEW,))


def is_listing(cell) -> bool:
    if cell.cell_type != "code":
        return False
    source = cell.source.strip()
    return (len(source.splitlines()) > LONG_SOURCE or "show_source(" in source
            or text_lines(cell) > LONG_OUTPUT)


def skipped(nb) -> list[bool]:
    """Which cells stay out of the slides (the module docstring's list)."""
    cells = nb.cells
    deeper = next((i for i, c in enumerate(cells)
                   if c.cell_type == "markdown" and GOING_DEEPER.match(c.source.lstrip())),
                  len(cells))
    setup = next((i for i, c in enumerate(cells)
                  if c.cell_type == "code" and not tags(c) & SKIP_TAGS), None)
    return [i >= deeper or i == setup or bool(tags(c) & SKIP_TAGS) or is_listing(c)
            for i, c in enumerate(cells)]


# -- the height model ----------------------------------------------------------------------

def _wrapped(line: str, width: int) -> int:
    return max(1, -(-len(line) // width))


def _markdown_height(source: str) -> int:
    height, in_fence, in_math = 0, False, False
    previous_blank = True
    for raw in source.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_fence = not in_fence
            height += 10
            continue
        if in_fence:
            height += CODE_LINE
            continue
        if line.startswith("$$"):
            if line.count("$$") == 1:
                in_math = not in_math
            if not in_math:
                height += DISPLAY_MATH
            continue
        if in_math:
            continue
        if not line:
            previous_blank = True
            continue
        if previous_blank:
            height += PARAGRAPH_GAP
        previous_blank = False
        hashes = len(line) - len(line.lstrip("#"))
        if 0 < hashes <= 6 and line[hashes:hashes + 1] == " ":
            height += HEADING[hashes] * _wrapped(line, TEXT_CHARS * 2 // 3)
        elif line.startswith("|"):
            height += _table_row_height(line)
        elif line.startswith("<"):
            height += 0 if re.fullmatch(r"</?(details|div|p)[^>]*>", line) else TEXT_LINE + 8
        else:
            # inline math renders shorter than its TeX source
            plain = re.sub(r"\$[^$]*\$", lambda m: "x" * max(1, len(m.group()) // 2), line)
            width = TEXT_CHARS - 6 if ITEM.match(line) or raw[:1] == " " else TEXT_CHARS
            height += TEXT_LINE * _wrapped(plain, width)
    return height


def _table_row_height(line: str) -> int:
    """A table row: 0 for the |---| rule, else its tallest cell's wrapped lines."""
    if set(line) <= set("|-: "):
        return 0
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    chars = max(8, TEXT_CHARS // max(1, len(cells)))
    plain = [re.sub(r"\$[^$]*\$", lambda m: "x" * max(1, len(m.group()) // 2), c) for c in cells]
    return 12 + 30 * max(_wrapped(c, chars) for c in plain)


def _split_table(block: str) -> list[str]:
    """A markdown table cut into tables of at most :data:`BUDGET` px, the header repeated."""
    lines = block.splitlines()
    if len(lines) < 3 or not all(line.lstrip().startswith("|") for line in lines):
        return [block]
    header, rows = lines[:2], lines[2:]
    parts, current = [], []
    for row in rows:
        if current and _markdown_height("\n".join(header + current + [row])) > BUDGET:
            parts.append("\n".join(header + current))
            current = []
        current.append(row)
    parts.append("\n".join(header + current))
    return parts


def _png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4))
    return struct.unpack(">II", raw[16:24])


def _picture_height(out) -> int:
    data = out.get("data", {})
    if "image/png" in data:
        width, height = _png_size(data["image/png"])
        height = height * min(1.0, IMAGE_MAX_WIDTH / width)
        return int(min(height, IMAGE_MAX_HEIGHT)) + CELL_GAP
    return IMAGE_MAX_HEIGHT if has_picture_output(out) else 0


def estimate(cell) -> int:
    """Estimated height in px of ``cell`` on a 1280 x 720 deck slide."""
    if cell.cell_type == "markdown":
        return _markdown_height(cell.source) + CELL_GAP
    if cell.cell_type != "code":
        return 0
    source = "" if PICTURE_ONLY_TAG in tags(cell) else cell.source.strip()
    lines = sum(_wrapped(line, CODE_CHARS) for line in source.splitlines())
    height = lines * CODE_LINE + 24 if lines else 0
    printed = text_lines(cell, OUTPUT_CHARS)
    if printed:
        height += printed * CODE_LINE + 16
    height += sum(_picture_height(out) for out in cell.get("outputs", []))
    return height + CELL_GAP


# -- the rule ------------------------------------------------------------------------------

def slide_types(nb, deck: bool = False) -> list[str]:
    """The slide type of every cell of ``nb``, by the rule in the module docstring;
    ``deck``: ``nb`` is a :func:`deck_notebook`, whose cells all stay (what stays out
    was removed; its first code cell is not the set-up cell)."""
    cells = nb.cells
    skip = [False] * len(cells) if deck else skipped(nb)
    types: list[str] = []
    used = 0  # estimated height of the slide being filled
    prose = 0.0  # its lines of prose
    printed = 0  # its lines of code and printed output
    has_code = False  # whether it shows a code cell's source
    before = None  # the last cell shown
    for index, (cell, out) in enumerate(zip(cells, skip, strict=True)):
        if out:
            types.append("skip")
            continue
        level = heading_level(cell)
        height, lines, words = estimate(cell), code_lines(cell), prose_lines(cell)
        after = next((c for c, s in zip(cells[index + 1:], skip[index + 1:], strict=True)
                      if not s), None)
        if before is None or level in (1, 2) or shows_widget(cell):
            kind = "slide"
        elif WIDGET_NOTE_TAG in tags(cell):
            kind = "-"
        elif (level >= 3 or shows_widget(before) or used + height > BUDGET
              or (before.cell_type == "markdown" and PREDICT.match(before.source.lstrip()))
              or crowds_code(cell, lines, words, has_code, printed, prose)
              or (printed and introduces(cell, after))):
            kind = "subslide"
        else:
            kind = "-"
        if kind != "-":
            used, prose, printed, has_code = 0, 0.0, 0, False
        used += height
        prose += words
        printed += lines
        has_code = has_code or shows_code(cell)
        types.append(kind)
        before = cell
    return types


def introduces(cell, after) -> bool:
    """Whether ``cell`` is prose that leads into the code cell ``after`` (it ends with a
    colon): on a slide that shows code it starts a subslide, to stand above that code."""
    return (cell.cell_type == "markdown" and after is not None and shows_code(after)
            and cell.source.rstrip().endswith(":"))


def crowds_code(cell, lines: int, words: float, has_code: bool, printed: int,
                prose: float) -> bool:
    """Whether ``cell`` (``lines`` of code and output, ``words`` lines of prose) would
    crowd a slide that already shows code (``has_code``), ``printed`` lines of code and
    output and ``prose`` lines of prose (the module docstring's code-slide rules)."""
    if shows_code(cell) and (has_code or prose > LEAD_LINES):
        return True  # one code cell per slide, after a lead-in of at most LEAD_LINES
    if lines and (printed + lines > CODE_LINES or prose > LEAD_LINES):
        return True
    return bool(printed) and words > 0 and prose + words > CODE_SLIDE_PROSE


def apply(nb, deck: bool = False):
    """Set every cell's slide type and the notebook's RISE settings; return ``nb``."""
    for cell, kind in zip(nb.cells, slide_types(nb, deck), strict=True):
        cell.metadata["slideshow"] = {"slide_type": kind}
    nb.metadata["rise"] = dict(RISE)
    return nb


def differences(nb) -> list[str]:
    """What :func:`apply` would change, one line per cell (empty when up to date)."""
    problems = []
    if nb.metadata.get("rise") != RISE:
        problems.append(f"notebook metadata rise is {nb.metadata.get('rise')!r}, not {RISE!r}")
    for index, (cell, kind) in enumerate(zip(nb.cells, slide_types(nb), strict=True)):
        have = cell.metadata.get("slideshow", {}).get("slide_type")
        if have != kind:
            first = cell.source.strip().split("\n", 1)[0][:50]
            problems.append(f"cell {index} ({first!r}): slide_type {have!r}, rule says {kind!r}")
    return problems


# -- what a static deck shows ----------------------------------------------------------------

CHECK_CALL = re.compile(r"^(np|numpy|torch)\.testing\.|\.testing\.assert_|^assert_")


def _is_check(node: ast.stmt) -> bool:
    """An assert, a ``*.testing.assert_*`` call, a ``with *.assert_raises(...)`` block, or a
    block holding only those."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return bool(CHECK_CALL.search(ast.unparse(node.value.func)))
    if isinstance(node, (ast.With, ast.AsyncWith)) and any(
            isinstance(item.context_expr, ast.Call)
            and re.search(r"assert_raises|\braises$", ast.unparse(item.context_expr.func))
            for item in node.items):
        return True
    bodies = [getattr(node, name, None) or [] for name in ("body", "orelse", "finalbody")]
    statements = [child for body in bodies for child in body]
    return bool(statements) and isinstance(node, (ast.With, ast.For, ast.If)) and all(
        _is_check(child) for child in statements)


def _check_lines(body: list[ast.stmt]) -> set[int]:
    """Line numbers of the checks in ``body``, inside blocks too (a block keeps at least
    one statement, so what is left still parses)."""
    lines: set[int] = set()
    checks = [node for node in body if _is_check(node)]
    for node in body:
        if node in checks:
            lines.update(range(node.lineno, node.end_lineno + 1))
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if inner and not all(_is_check(child) for child in inner):
                lines |= _check_lines(inner)
    return lines


def without_checks(source: str) -> str:
    """``source`` without the lines that pin numbers: assert statements, ``*.testing.assert_*``
    calls and ``assert_raises`` blocks (the deck shows the code that makes the numbers)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax: leave it as it is
        return source
    drop = _check_lines(tree.body)
    if not drop:
        return source
    kept = [line for number, line in enumerate(source.splitlines(), 1) if number not in drop]
    return "\n".join(kept).strip("\n")


ITEM = re.compile(r"(\d+\.|[-*+]) ")  # a top-level list item


def _blocks(source: str) -> list[str]:
    """Markdown blocks separated by blank lines or starting a top-level list item, keeping
    fenced code, $$ math and <details> ... </details> whole."""
    blocks, current, fence, math, details = [], [], False, False, 0
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        elif not fence and stripped.startswith("$$") and stripped.count("$$") == 1:
            math = not math
        opens = stripped.count("<details") - stripped.count("</details>")
        item = (not fence and not math and details <= 0 and bool(ITEM.match(line))
                and bool(current))
        if item or (not stripped and not fence and not math and details <= 0 and current):
            blocks.append("\n".join(current))
            current = [line] if item else []
        elif stripped or current:
            current.append(line)
        details += opens
    if current:
        blocks.append("\n".join(current))
    return blocks


def _is_heading(block: str) -> bool:
    """A heading, or a one-line lead-in ("**You will be able to**", "The rule:")."""
    line = block.strip()
    return "\n" not in line and (re.match(r"#{1,6} ", line) is not None
                                  or re.fullmatch(r"\*\*[^*]+\*\*:?", line) is not None
                                  or (line.endswith(":") and len(line) < 80))


def _fill(blocks: list[str], budget: float) -> list[str]:
    """``blocks`` packed in order into parts of at most ``budget`` estimated px; a heading
    never ends a part (it moves on with the block after it)."""
    parts, current = [], []
    for block in blocks:
        candidate = "\n\n".join([*current, block])
        if current and _markdown_height(candidate) > budget:
            carried = [current.pop()] if _is_heading(current[-1]) else []
            if current:
                parts.append("\n\n".join(current))
            current = [*carried, block]
        else:
            current.append(block)
    if current:
        parts.append("\n\n".join(current))
    return parts


def split_markdown(source: str) -> list[str]:
    """``source`` cut at block boundaries into as few parts of at most :data:`BUDGET`
    estimated px as it needs, of about equal height (no lone last line on a slide of its
    own); a block taller than that stays whole; a heading stays with the block after it."""
    blocks = [piece for whole in _blocks(source) for piece in _split_table(whole)]
    sections: list[list[str]] = []  # a '#'-'###' heading inside the cell starts a new part
    for block in blocks:
        if not sections or re.match(r"#{1,3} ", block.strip()):
            sections.append([])
        sections[-1].append(block)
    return [part for section in sections for part in _even_parts(section)] or [source]


def _even_parts(blocks: list[str]) -> list[str]:
    parts = _fill(blocks, BUDGET)
    if len(parts) > 1:
        total = sum(_markdown_height(b) for b in blocks)
        budget = total / len(parts)
        while budget < BUDGET:  # the smallest even budget that needs no more parts
            even = _fill(blocks, budget)
            if len(even) <= len(parts):
                return even
            budget += 10
    return parts


DETAILS = re.compile(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", re.S)


def _inline_html(html: str) -> str:
    """``html`` on one line (a blank line would end a markdown HTML block): newlines in
    <pre> become character references, others spaces."""
    pieces = re.split(r"(<pre>.*?</pre>)", html, flags=re.S)
    return "".join(p.replace("\n", "&#10;") if p.startswith("<pre>") else " ".join(p.split())
                   for p in pieces)


def details_as_html(source: str) -> str:
    """Each ``<details><summary>S</summary> markdown </details>`` of ``source`` as one line of
    HTML (the answer rendered): nbconvert's markdown ends an HTML block at a blank line and
    would show the answer outside the closed <details>."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    def one(match: re.Match) -> str:
        body = markdown2html_mistune(match.group(2).strip())
        return _inline_html(f"<details><summary>{match.group(1).strip()}</summary>"
                            f"<div class=\"answer\">{body}</div></details>")

    return DETAILS.sub(one, source)


WIDGET_NOTE = ("*Live widget: its controls need the notebook's kernel. Open the lesson in "
               "JupyterLab (`make lab`) or Binder to move them; this slide shows the picture "
               "stored with the notebook.*")


# A markdown link to a notebook beside the lesson: "[text](04_masks.ipynb#part)".
NOTEBOOK_LINK = re.compile(r"(\[[^\]]*\])\(((?![a-z][a-z0-9+.-]*:)[^)\s#]+\.ipynb)(#[^)\s]*)?\)",
                           re.I)
NOTEBOOK_HREF = re.compile(r'href="((?![a-z][a-z0-9+.-]*:)[^"#\s]+\.ipynb)(#[^"]*)?"', re.I)


def deck_links(source: str, decks: set[str], project: launch.Project | None = None) -> str:
    """``source`` with each link to a notebook made one that works from the decks' folder,
    which holds no notebook: a lesson whose deck is exported with it (its stem in ``decks``)
    links to that deck; any other notebook (an exercise set, a lesson left out) to its
    Binder launch link, built by tools/launch.py from ``[project.urls]``."""
    project = project or launch.Project()

    def one(match: re.Match) -> str:
        text, target = match.group(1), match.group(2)
        path = Path(target)
        if path.parent == Path(".") and path.stem in decks:
            return f"{text}({path.stem}.slides.html)"
        where = (Path("notebooks") / path).as_posix()
        return f"{text[:-1]} (on Binder)]({project.binder(where)})"

    def href(match: re.Match) -> str:  # an HTML link (a "Check yourself" answer's)
        target = Path(match.group(1))
        if target.parent == Path(".") and target.stem in decks:
            return f'href="{target.stem}.slides.html"'
        return f'href="{project.binder((Path("notebooks") / target).as_posix())}"'

    return NOTEBOOK_HREF.sub(href, NOTEBOOK_LINK.sub(one, source))


def _cell_id(base: str, part: int) -> str:
    return f"{base}-{part}"[:64]


def deck_notebook(nb, decks: set[str] | None = None):
    """A copy of ``nb`` as the static deck shows it (the module docstring's list); ``decks``:
    the stems of the lessons exported with it (default: every lesson)."""
    nb = copy.deepcopy(nb)
    decks = {p.stem for p in lessons()} if decks is None else decks
    project = launch.Project()
    cells = []
    for cell, out in zip(nb.cells, skipped(nb), strict=True):
        if out:
            continue
        if cell.cell_type == "markdown":
            source = deck_links(details_as_html(cell.source), decks, project)
            for part, text in enumerate(split_markdown(source)):
                piece = nbformat.v4.new_markdown_cell(text)
                piece.id = _cell_id(cell.get("id", "md"), part)
                cells.append(piece)
            continue
        if cell.cell_type != "code":
            continue
        widget = shows_widget(cell)
        alt = figure_alt_text.alt_text(cell) or "Figure"
        cell.source = without_checks(cell.source)
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                data.pop(WIDGET_VIEW)
                if "image/png" not in data:
                    continue
                data.pop("text/plain", None)  # the widget's summary line: the alt text says it
            if any(m in data for m in figure_alt_text.IMAGES):
                data.pop("text/plain", None)  # a figure's repr, not something to read
                output.setdefault("metadata", {})["alt"] = alt
            outputs.append(output)
        cell.outputs = outputs
        if any(has_picture_output(o) for o in outputs):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), PICTURE_ONLY_TAG]
        if not cell.source.strip() and not outputs:
            continue
        cells.append(cell)
        if shows_code(cell) and code_lines(cell) > CODE_LINES and text_lines(cell):
            printed = copy.deepcopy(cell)  # the output alone, on the next slide
            printed.metadata["tags"] = [*cell.metadata.get("tags", []), OUTPUT_ONLY_TAG]
            printed.id = _cell_id(cell.get("id", "code"), "output")
            cell.outputs = []
            cells.append(printed)
        if widget:
            note = nbformat.v4.new_markdown_cell(WIDGET_NOTE)
            note.id = _cell_id(cell.get("id", "widget"), "note")
            note.metadata["tags"] = [WIDGET_NOTE_TAG]
            cells.append(note)
    nb.cells = cells
    nb.metadata.pop("widgets", None)  # no widget manager: the stored pictures are shown
    return apply(nb, deck=True)


# -- export ----------------------------------------------------------------------------------

def install_vendor(out: Path) -> None:
    """npm-install :data:`VENDOR` into build/slides-npm once; copy :data:`VENDOR_FILES`
    into ``out/vendor`` (nothing else)."""
    modules = NPM / "node_modules"
    stamp = NPM / ".installed"
    if not (stamp.is_file() and stamp.read_text() == " ".join(VENDOR)):
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("make slides needs npm (Node.js) to fetch reveal.js and MathJax once")
        NPM.mkdir(parents=True, exist_ok=True)
        # --prefer-offline: a package already in npm's cache is not asked of the registry again.
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--silent",
                        "--prefer-offline", "--prefix", str(NPM), *VENDOR],
                       check=True, stdin=subprocess.DEVNULL)
        stamp.write_text(" ".join(VENDOR))
    vendor = out / MODULES
    shutil.rmtree(vendor, ignore_errors=True)
    for name in VENDOR_FILES:
        source, target = modules / name, vendor / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)


def export(paths: list[Path], out: Path) -> list[Path]:
    """One offline HTML deck per notebook in ``out``; returns the decks' paths."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    install_vendor(out)
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for path in paths:
            copies.append(Path(tmp) / path.name)
            nbformat.write(deck_notebook(nbformat.read(path, as_version=4),
                                         {p.stem for p in paths}), copies[-1])
        subprocess.run([sys.executable, "-m", "nbconvert", "--to", "slides",
                        f"--template-file={TEMPLATE}", *NBCONVERT_ARGS,
                        f"--output-dir={out}", *map(str, copies)], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
    return [out / (p.stem + ".slides.html") for p in paths]


def lessons() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="change nothing; report")
    parser.add_argument("--export", type=Path, metavar="DIR", help="write HTML decks to DIR")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.export:
        for deck in export(args.notebooks or lessons(), args.export):
            print(f"deck   {deck}")
        return 0
    status = 0
    for path in args.notebooks or lessons():
        nb = nbformat.read(path, as_version=4)
        problems = differences(nb)
        if args.check:
            for line in problems:
                print(f"{path.name}: {line}")
            status |= bool(problems)
        elif problems:
            nbformat.write(apply(nb), path)
            print(f"slides {path.name}: {len(problems)} change(s)")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
