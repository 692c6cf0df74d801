"""Slide metadata for the lessons, set by one rule so no author edits it by hand.

    python tools/slides.py [NOTEBOOK ...]          set it in place (default: every lesson)
    python tools/slides.py --check [NOTEBOOK ...]  exit 1 and name the cells that differ
    python tools/slides.py --export DIR [NOTEBOOK ...]  static HTML decks (``make slides``)

Each cell gets ``metadata.slideshow.slide_type``, read by RISE (live slides in
JupyterLab) and by ``jupyter nbconvert --to slides`` (``make slides``):

- the title cell (the first cell), every ``#`` or ``##`` heading: ``slide``;
- a ``###`` heading: ``subslide``;
- a code cell that shows a widget: ``slide`` (a widget gets a slide of its own),
  and the cell after it starts a ``subslide`` (unless it starts a slide);
- a markdown cell right after a code cell: ``subslide`` (a new idea; the code
  above stays with the markdown that introduced it);
- the footer: "What to remember" is a ``##`` heading, so a slide; the last
  markdown cell (exercise set, Previous/Next) is a ``slide`` of its own;
- everything else: ``-`` (continues the slide above), so a code cell and its
  output stay with the markdown that introduces them.

The notebook's ``metadata.rise`` turns on scrolling (a slide taller than the
screen scrolls instead of being cut) and the ``white`` theme, whose fonts
ship with reveal.js (``simple`` and others load web fonts). :func:`apply` is
deterministic, so executing an unchanged lesson twice (tools/execute_notebooks.py
calls it) leaves the file byte-identical.

``--export`` writes ``DIR/NN_topic.slides.html`` with ``jupyter nbconvert --to
slides`` and puts every script and style sheet the decks load in ``DIR/vendor``
(npm packages pinned in :data:`VENDOR`, installed once with npm): reveal.js,
require.js, jQuery, MathJax 2 and the ipywidgets HTML manager. The decks name
them by relative paths, so the folder opens offline, from a file or a server;
``tools/slides_offline.html.j2`` drops the one script nbconvert always loads
from a CDN (Mermaid, which no lesson uses).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RISE = {"scroll": True, "theme": "white", "transition": "none"}
VENDOR = ["reveal.js@4.6.0", "requirejs@2.3.8", "jquery@2.2.3", "mathjax@2.7.9",
          "@jupyter-widgets/html-manager@1.0.15"]  # html-manager 1.x renders ipywidgets 8
MODULES = "vendor/node_modules"
TEMPLATE = Path(__file__).resolve().parent / "slides_offline.html.j2"
NBCONVERT_ARGS = [
    f"--SlidesExporter.reveal_theme={RISE['theme']}",  # nbconvert's default loads web fonts
    "--SlidesExporter.reveal_width=1280",  # a 100-character code line fits (960 cuts it)
    "--SlidesExporter.reveal_scroll=True",  # a tall slide scrolls, as under RISE
    f"--reveal-prefix={MODULES}/reveal.js",
    f"--SlidesExporter.require_js_url={MODULES}/requirejs/require.js",
    f"--SlidesExporter.jquery_url={MODULES}/jquery/dist/jquery.min.js",
    f"--SlidesExporter.mathjax_url={MODULES}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    f"--SlidesExporter.widget_renderer_url={MODULES}/@jupyter-widgets/html-manager/dist/"
    "embed-amd.js",
]


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


def slide_types(nb) -> list[str]:
    """The slide type of every cell of ``nb``, by the rule in the module docstring."""
    cells = nb.cells
    last_markdown = max((i for i, c in enumerate(cells) if c.cell_type == "markdown"),
                        default=None)
    types = []
    for index, cell in enumerate(cells):
        before = cells[index - 1] if index else None
        level = heading_level(cell)
        if index == 0 or level in (1, 2) or shows_widget(cell):
            kind = "slide"
        elif index == last_markdown and index > 0:
            kind = "slide"
        elif level >= 3:
            kind = "subslide"
        elif before is not None and shows_widget(before):
            kind = "subslide"
        elif cell.cell_type == "markdown" and before is not None and before.cell_type == "code":
            kind = "subslide"
        else:
            kind = "-"
        types.append(kind)
    return types


def apply(nb):
    """Set every cell's slide type and the notebook's RISE settings; return ``nb``."""
    for cell, kind in zip(nb.cells, slide_types(nb), strict=True):
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


def install_vendor(out: Path) -> None:
    """npm-install :data:`VENDOR` into ``out/vendor`` unless already there."""
    vendor = out / "vendor"
    stamp = vendor / ".installed"
    if stamp.is_file() and stamp.read_text() == " ".join(VENDOR):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("make slides needs npm (Node.js) to fetch reveal.js and MathJax once")
    vendor.mkdir(parents=True, exist_ok=True)
    # --prefer-offline: a package already in npm's cache is not asked of the registry again.
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--silent",
                    "--prefer-offline", "--prefix", str(vendor), *VENDOR],
                   check=True, stdin=subprocess.DEVNULL)
    stamp.write_text(" ".join(VENDOR))


def export(paths: list[Path], out: Path) -> list[Path]:
    """One offline HTML deck per notebook in ``out``; returns the decks' paths."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    install_vendor(out)
    with tempfile.TemporaryDirectory() as tmp:
        copies = []  # the rule applied on the way, even to a lesson not re-executed since
        for path in paths:
            copies.append(Path(tmp) / path.name)
            nbformat.write(apply(nbformat.read(path, as_version=4)), copies[-1])
        subprocess.run([sys.executable, "-m", "nbconvert", "--to", "slides",
                        f"--template-file={TEMPLATE}", *NBCONVERT_ARGS,
                        f"--output-dir={out}", *map(str, copies)], check=True,
                       stdin=subprocess.DEVNULL)
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
