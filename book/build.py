"""Build the offline book into book/_build/html from the committed notebooks (nothing is run).

    python book/build.py            (what `make book` runs)

1. ``npm ci --no-audit --no-fund`` in book/ when book/node_modules/ is missing or
   older than package-lock.json (MathJax, which the site serves itself, and
   axe-core, which the tests inject);
2. the Sphinx source folder book/_build/source/: book/index.md and conf.py's
   pages, i.e. ``notebooks/[0-9][0-9]_*.ipynb`` and ``notebooks/exercises/ex*.ipynb``
   (copies with their times kept, so an unchanged notebook is not read again;
   a copy, not a symlink, because Sphinx resolves links through symlinks);
3. ``sphinx-build -b html -a`` with book/conf.py (a notebook is read again when it, or
   conf.py's digest of the book's extension and templates, changed; every page is written).

Open book/_build/html/index.html in a browser (file:// works), or serve the
folder: ``python -m http.server -d book/_build/html -b 127.0.0.1``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
SOURCE = BOOK / "_build" / "source"
HTML = BOOK / "_build" / "html"
LESSONS = "[0-9][0-9]_*.ipynb"
EXERCISES = "exercises/ex*.ipynb"


def pages() -> list[Path]:
    """The notebooks the book shows, relative to notebooks/: lessons, then exercise sets."""
    notebooks = ROOT / "notebooks"
    return [p.relative_to(notebooks) for pattern in (LESSONS, EXERCISES)
            for p in sorted(notebooks.glob(pattern))]


def node_modules_ready() -> bool:
    marker = BOOK / "node_modules" / ".package-lock.json"  # npm writes it on every install
    lock = BOOK / "package-lock.json"
    return marker.is_file() and marker.stat().st_mtime >= lock.stat().st_mtime


def npm_ci() -> None:
    if node_modules_ready():
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is missing: the book serves MathJax from book/node_modules "
                 "(install Node.js 18+, then run make book again)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=BOOK, check=True)


def stage_sources() -> None:
    """Mirror index.md and the pages into SOURCE; drop pages that no longer exist."""
    wanted = {Path("index.md"): BOOK / "index.md"}
    wanted |= {Path("notebooks") / p: ROOT / "notebooks" / p for p in pages()}
    SOURCE.mkdir(parents=True, exist_ok=True)
    for path in SOURCE.rglob("*"):
        if path.is_file() and path.relative_to(SOURCE) not in wanted:
            path.unlink()
    for relative, original in wanted.items():
        target = SOURCE / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != original.read_bytes():
            shutil.copy2(original, target)


def build(quiet: bool = True) -> float:
    """Build the site; return the seconds it took."""
    start = time.perf_counter()
    npm_ci()
    stage_sources()
    # -a: write every page, so each page's previous/next links and sidebar list the pages
    # present now (Sphinx re-reads only changed notebooks, but a new page changes others).
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-a", "-c", str(BOOK),
               str(SOURCE), str(HTML)]
    subprocess.run(command + (["-q"] if quiet else []), check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    if sys.version_info < (3, 11):
        sys.exit(f"the book needs Python 3.11 or newer (sphinx-book-theme >= 1.4); this is "
                 f"{sys.version.split()[0]}: make book PYTHON=python3.11 VENV=.venv311")
    seconds = build(quiet="-v" not in sys.argv)
    print(f"book built in {seconds:.1f} s: open {HTML.relative_to(ROOT) / 'index.html'}")
