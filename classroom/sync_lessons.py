"""Give a student the lessons, and keep them current without touching their edits.

    python classroom/sync_lessons.py SHIPPED_DIR HOME

Run by the hub before each student's server starts (jupyterhub_config.py), AS THE STUDENT
(never as root: the home is theirs, and a root copy would follow any link they made). For
each lesson ``NN_*.ipynb`` in SHIPPED_DIR:

* missing from HOME: copied (first login, or a lesson the student deleted);
* untouched (its content is that of the version last copied, recorded in
  ``HOME/.mha-lessons.json``) and the shipped lesson changed: replaced by the new version;
* edited by the student: left alone; when the shipped lesson changed, the new version is put
  beside it as ``NN_topic.new.ipynb`` so nothing the student wrote is lost.

"Content" is each cell's type and source: what the learner reads and writes. Outputs,
execution counts and metadata are not: opening a lesson makes JupyterLab rewrite
``metadata.language_info`` and running it changes outputs, and neither is an edit that should
stop the updates. A copy gets the running Python's version in ``metadata.language_info`` (this
script runs with the class environment's Python, the kernel's), so JupyterLab finds nothing to
rewrite and does not mark a lesson modified on opening it.

The lessons sit in the home's top folder, where nbgrader fetches each exercise set
(``~/ex04_masks/``), so an exercise's link ``../04_masks.ipynb`` opens the lesson. A lesson's
own link to its set (``exercises/ex04_masks.ipynb`` in the repository) is rewritten in the
student's copy to ``ex04_masks/ex04_masks.ipynb``, where the fetched set is, with a word on
fetching it first, and the cells that launch the lesson on Colab or Binder are left out
(:func:`for_the_class`); the shipped lesson's "content" is that of its class form, so neither
change is an edit.
Only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
from pathlib import Path

MANIFEST = ".mha-lessons.json"


def digest(path: Path) -> str:
    """The file's bytes (what the manifest recorded before content digests)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


# In the repository a set sits in notebooks/exercises/; on the hub nbgrader fetches it to ~/exNN_x/.
SET_LINK = re.compile(r"\[exercises/(ex\d\d_\w+)\.ipynb\]\(exercises/(ex\d\d_\w+)\.ipynb\)")
FETCH_FIRST = " (fetch it first: Nbgrader > Assignment List)"
SETS_FOLDER = ("live in `notebooks/exercises/`",
               "come from the Assignment List (Nbgrader menu), each into a folder of its own")


def source_of(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# The cells that open a lesson on Colab or Binder and install the package there: a student of
# the class works on the hub, where the package is installed and the exercises come from nbgrader.
LAUNCH_TAGS = {"launch-header", "launch-install"}


def for_the_class(nb: dict) -> dict:
    """The lesson as a student of the class gets it: without the Colab/Binder launch cells, and
    each markdown link to an exercise set pointing where nbgrader fetches the set, saying to
    fetch it first (until then the link opens nothing). Other cells are unchanged."""
    nb["cells"] = [cell for cell in nb.get("cells", []) if not LAUNCH_TAGS & set(
        (cell.get("metadata") or {}).get("tags") or [])]
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown":
            text = SET_LINK.sub(lambda m: f"[{m[1]}/{m[1]}.ipynb]({m[2]}/{m[2]}.ipynb)"
                                + FETCH_FIRST, source_of(cell))
            cell["source"] = text.replace(*SETS_FOLDER)
    return nb


def cells_digest(nb: dict) -> str:
    cells = [(c["cell_type"], source_of(c)) for c in nb["cells"]]
    return "cells:" + hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def content(path: Path, class_form: bool = False) -> str:
    """A digest of what the learner reads and writes: each cell's type and source (not its
    outputs, execution count or metadata); with ``class_form``, of the lesson as
    :func:`for_the_class` gives it. A file that is not a notebook: its bytes."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        return cells_digest(for_the_class(nb) if class_form else nb)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return "bytes:" + digest(path)


def copy_lesson(source: Path, dest: Path) -> None:
    """Copy a lesson in its class form (:func:`for_the_class`), with this Python's version in
    its ``language_info`` (see above)."""
    try:
        nb = for_the_class(json.loads(source.read_text(encoding="utf-8")))
        info = nb["metadata"]["language_info"]
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        shutil.copyfile(source, dest)
        return
    if info.get("name") == "python":
        info["version"] = platform.python_version()
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, dest)


def sync(shipped: Path, home: Path) -> dict[str, str]:
    """Copy or update the lessons; returns {lesson: what happened}."""
    manifest_path = home / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (FileNotFoundError, ValueError):
        manifest = {}
    done = {}
    for source in sorted(shipped.glob("[0-9][0-9]_*.ipynb")):
        dest, new = home / source.name, content(source, class_form=True)
        given = manifest.get(source.name)  # the content last copied to the student
        if given == digest(source):  # a manifest written before content digests: bytes
            given = content(source)  # (and before the class form: an untouched copy updates)
        beside = dest.with_suffix(".new.ipynb")
        if dest.is_symlink() or (dest.exists() and not dest.is_file()):
            done[source.name] = "kept (not a plain file)"
        elif not dest.exists():
            copy_lesson(source, dest)
            manifest[source.name] = new
            done[source.name] = "copied"
        elif content(dest) == new:
            manifest[source.name] = new
            done[source.name] = "current"
        elif given in (content(dest), digest(dest)):  # untouched (older manifests: bytes)
            copy_lesson(source, dest)
            manifest[source.name] = new
            done[source.name] = "updated"
        elif given == new:
            done[source.name] = "edited (the course's version has not changed)"
        else:
            if beside.is_symlink() or not beside.exists() or (
                    beside.is_file() and content(beside) != new):
                copy_lesson(source, beside)  # replaces a link, never writes through it
            done[source.name] = f"edited: new version in {beside.name}"
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, manifest_path)
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.umask(0o077)
    for name, what in sync(Path(argv[0]), Path(argv[1])).items():
        print(f"{name}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
