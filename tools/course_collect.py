"""`make course-collect`: copy SUBMISSIONS/<student>/<set>/ into COURSE/submitted, then make
each set's notebook carry the name nbgrader expects.

    python tools/course_collect.py COURSE SUBMISSIONS

nbgrader grades only a notebook named as in ``source/<set>/`` (``<set>.ipynb``): a browser's
second download, ``ex01_weighted_sum (1).ipynb``, is skipped ("Skipping unknown notebook") and
the student gets nothing. Here a folder holding exactly one notebook under another name has it
renamed to the expected name, and the output says so; a folder with none, or several and not
the expected one, or whose notebook is not valid JSON (a truncated upload), is named in the
output (tools/course_autograde.py then records it with 0 points for review, with the same
reason, and its feedback page says it). Exit status 0 either way: the rest of the class is
collected.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def expected_names(course: Path, assignment: str) -> list[str]:
    """The notebook names nbgrader grades for ``assignment``: those of ``source/<set>/``,
    or ``<set>.ipynb`` when the set has no source here."""
    names = sorted(p.name for p in (course / "source" / assignment).glob("*.ipynb"))
    return names or [f"{assignment}.ipynb"]


def unreadable(path: Path) -> str | None:
    """Why the notebook at ``path`` cannot be read (not JSON, not a notebook), else None."""
    try:
        nb = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:  # JSONDecodeError and UnicodeDecodeError are both
        return f"{path.name} is not valid JSON ({type(err).__name__}: {str(err)[:200]})"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return f"{path.name} is JSON but not a notebook (it has no list of cells)"
    return None


def problem(folder: Path, expected: list[str]) -> str | None:
    """Why nbgrader cannot grade the notebooks in ``folder`` (None when it can): one it
    expects is missing, or cannot be read (a truncated download)."""
    missing = [name for name in expected if not (folder / name).is_file()]
    if not missing:
        broken = [why for why in (unreadable(folder / name) for name in expected) if why]
        return "; ".join(broken) or None
    found = sorted(p.name for p in folder.glob("*.ipynb"))
    return (f"no {', '.join(missing)}; found "
            + (", ".join(repr(name) for name in found) if found else "no notebook"))


def fix_names(folder: Path, expected: list[str]) -> str | None:
    """Rename the one notebook of ``folder`` to the set's one expected name when it is
    under another name; returns what was done or what is wrong (None: nothing to say)."""
    why = problem(folder, expected)
    if why is None:
        return None
    found = sorted(folder.glob("*.ipynb"))
    if len(expected) == 1 and len(found) == 1 and found[0].name != expected[0]:
        found[0].rename(folder / expected[0])
        said = f"renamed '{found[0].name}' to '{expected[0]}' (the only notebook in the folder)"
        still = problem(folder, expected)
        return said + (f"; NOT GRADABLE: {still}" if still else "")
    return f"NOT GRADABLE: {why}"


def collect(course: Path, submissions: Path) -> list[str]:
    """Copy, fix names; one line per folder that needed attention."""
    target = course / "submitted"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(submissions, target, dirs_exist_ok=True)
    lines = []
    for folder in sorted(p for p in submissions.glob("*/*") if p.is_dir()):
        student, assignment = folder.parent.name, folder.name
        said = fix_names(target / student / assignment, expected_names(course, assignment))
        if said:
            lines.append(f"course_collect: {student}/{assignment}: {said}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", type=Path)
    parser.add_argument("submissions", type=Path)
    args = parser.parse_args(argv)
    lines = collect(args.course, args.submissions)
    for line in lines:
        print(line, flush=True)
    bad = sum("NOT GRADABLE" in line for line in lines)
    print(f"course_collect: collected into {args.course / 'submitted'}"
          + (f"; {bad} folder(s) not gradable as they are (named above)" if bad else ""),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
