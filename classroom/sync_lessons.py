"""Give a student the lessons, and keep them current without touching their edits.

    python classroom/sync_lessons.py SHIPPED_DIR HOME

Run by the hub before each student's server starts (jupyterhub_config.py), AS THE STUDENT
(never as root: the home is theirs, and a root copy would follow any link they made). For
each lesson ``NN_*.ipynb`` in SHIPPED_DIR:

* missing from HOME: copied (first login, or a lesson the student deleted);
* unchanged since the last copy (its digest is the one recorded in ``HOME/.mha-lessons.json``)
  and the shipped lesson is newer: replaced by the new version;
* edited by the student: left alone; the new version, if any, is put beside it as
  ``NN_topic.new.ipynb`` so nothing the student wrote is lost.

The lessons sit in the home's top folder, where nbgrader fetches each exercise set
(``~/ex04_masks/``), so an exercise's link ``../04_masks.ipynb`` opens the lesson.
Only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

MANIFEST = ".mha-lessons.json"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sync(shipped: Path, home: Path) -> dict[str, str]:
    """Copy or update the lessons; returns {lesson: what happened}."""
    manifest_path = home / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (FileNotFoundError, ValueError):
        manifest = {}
    done = {}
    for source in sorted(shipped.glob("[0-9][0-9]_*.ipynb")):
        dest, new = home / source.name, digest(source)
        if dest.is_symlink() or (dest.exists() and not dest.is_file()):
            done[source.name] = "kept (not a plain file)"
        elif not dest.exists():
            shutil.copyfile(source, dest)
            manifest[source.name] = new
            done[source.name] = "copied"
        elif digest(dest) == new:
            manifest[source.name] = new
            done[source.name] = "current"
        elif digest(dest) == manifest.get(source.name):
            shutil.copyfile(source, dest)
            manifest[source.name] = new
            done[source.name] = "updated"
        else:
            shutil.copyfile(source, dest.with_suffix(".new.ipynb"))
            done[source.name] = f"edited: new version in {dest.with_suffix('.new.ipynb').name}"
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
