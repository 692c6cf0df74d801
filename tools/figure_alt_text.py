"""The alt text of every picture a notebook stores, as the book (book/) shows it.

    python tools/figure_alt_text.py [NOTEBOOK ...]      (default: the lessons)
    python tools/figure_alt_text.py NOTEBOOK --set CELL "alt text"

Lesson authors need not write alt text by hand: it comes from the cell, in
this order (the first that gives one wins):

1. the cell's metadata ``mystnb.image.alt`` (myst-nb's own field; ``--set``
   writes it, for a figure whose title says too little);
2. a widget view: the text form the widget stores (``HeadExplorer: layer 1,
   head 0: ...``), since the book shows the widget's stored picture;
3. the figure's titles in the cell's code: ``fig.suptitle("...")``,
   ``ax.set_title("...")``, ``title="..."`` and panel titles given as
   ``[("title", data), ...]``, in the order they appear;
4. the cell's first comment line.

The first form prints each picture's cell index and alt text and exits 1 when
a picture has none (the book's test, tests/test_book.py, fails then too).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
IMAGES = ("image/png", "image/jpeg", "image/svg+xml")
TITLE_METHODS = {"suptitle", "set_title", "title"}
MAX_CHARS = 300


def _text(node: ast.AST) -> str | None:
    """A string constant's value, or an f-string with each field shown as "..."."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [_text(v) if isinstance(v, ast.Constant) else "..." for v in node.values]
        return "".join(p or "" for p in parts)
    return None


def _panel_titles(node: ast.AST) -> list[tuple[int, int, str]]:
    """Titles given as [("title", data), ...] (lists of panels), with their positions."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    titles = []
    for element in node.elts:
        if isinstance(element, ast.Tuple) and element.elts:
            first = element.elts[0]
            if _text(first):
                titles.append((first.lineno, first.col_offset, _text(first)))
    return titles


def titles_in_code(source: str) -> list[str]:
    """Every figure title the code gives, in source order, without repeats."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: fall back to title="..." by pattern
        return re.findall(r"""title\s*[=(]\s*["']([^"']+)["']""", source)
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name in TITLE_METHODS and node.args and _text(node.args[0]):
            found.append((node.lineno, node.col_offset, _text(node.args[0])))
        for keyword in node.keywords:
            if keyword.arg == "title" and _text(keyword.value):
                found.append((keyword.value.lineno, keyword.value.col_offset,
                              _text(keyword.value)))
        for arg in node.args:
            found += _panel_titles(arg)
    titles: list[str] = []
    for _, _, title in sorted(found):
        title = " ".join(title.split())
        if title and title not in titles:
            titles.append(title)
    return titles


def first_comment(source: str) -> str | None:
    for line in source.splitlines():
        if "#" in line:
            comment = line.split("#", 1)[1].strip()
            if comment:
                return comment
    return None


def has_picture(cell) -> bool:
    return any(any(m in out.get("data", {}) for m in IMAGES) for out in cell.get("outputs", []))


def widget_text(cell) -> str | None:
    """The text/plain of the cell's first widget view (what the widget's picture shows)."""
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if WIDGET_VIEW in data and "text/plain" in data:
            text = data["text/plain"]
            return " ".join((text if isinstance(text, str) else "".join(text)).split())
    return None


def alt_text(cell) -> str | None:
    """The alt text for the pictures of a code cell (None when the cell gives none)."""
    override = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
    if override and override.strip():
        return override.strip()
    widget = widget_text(cell)
    if widget:
        return f"Stored picture of the live widget. {widget}"[:MAX_CHARS]
    source = cell.get("source", "")
    source = source if isinstance(source, str) else "".join(source)
    titles = titles_in_code(source)
    if titles:
        return ("Figure: " + "; ".join(titles))[:MAX_CHARS]
    comment = first_comment(source)
    if comment:
        return f"Figure: {comment}"[:MAX_CHARS]
    return None


def pictures(nb) -> list[tuple[int, str | None]]:
    """(cell index, alt text or None) for every code cell that stores a picture."""
    return [(i, alt_text(cell)) for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and has_picture(cell)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--set", nargs=2, metavar=("CELL", "TEXT"),
                        help="store TEXT as the alt text of code cell CELL (its index)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.set:
        if len(paths) != 1:
            parser.error("--set takes exactly one notebook")
        nb = nbformat.read(paths[0], as_version=4)
        index, text = int(args.set[0]), args.set[1].strip()
        cell = nb.cells[index]
        if cell.cell_type != "code" or not has_picture(cell):
            parser.error(f"cell {index} of {paths[0]} stores no picture")
        cell.metadata.setdefault("mystnb", {}).setdefault("image", {})["alt"] = text
        nbformat.write(nb, paths[0])
        print(f"{paths[0]} cell {index}: {text}")
        return 0
    missing = 0
    for path in paths:
        for index, text in pictures(nbformat.read(path, as_version=4)):
            missing += text is None
            print(f"{path.name} cell {index}: {text or 'MISSING (add a title or --set one)'}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
