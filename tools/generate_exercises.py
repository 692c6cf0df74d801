"""Student notebooks from the instructor sources, with nbgrader.

    python tools/generate_exercises.py           # course/release/ and notebooks/exercises/
    python tools/generate_exercises.py --check   # exit 1 if a committed student notebook is stale

The first form runs ``nbgrader generate_assignment "*" --force`` in ``course/`` (so the
gradebook knows every assignment, as autograde needs) and copies each
``course/release/<set>/<set>.ipynb`` to ``notebooks/exercises/<set>.ipynb``, where learners
open it next to the lessons. ``--check`` generates into a temporary copy of the course
(``--no-db``, nothing in ``course/`` changes) and compares cell by cell what a learner and
nbgrader see: cell type, source, nbgrader metadata, editable / deletable.

nbgrader shells out to ``alembic``: this script puts the interpreter's bin folder on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"
EXERCISES = ROOT / "notebooks" / "exercises"
COURSE_FILES = ("nbgrader_config.py", "lms_collectors.py", "mha_grading.py", "feedback_page.py",
                "class_copy.py")


def nbgrader_env() -> dict:
    """The environment nbgrader needs: this interpreter's bin folder first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_nbgrader(args: list[str], course: Path, timeout: float = 600):
    """``nbgrader ARGS`` in ``course`` (its nbgrader_config.py applies); raise on failure."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def assignments(course: Path = COURSE) -> list[str]:
    return sorted(p.name for p in (course / "source").iterdir()
                  if (p / f"{p.name}.ipynb").is_file())


def generate_into(tmp: Path, course: Path = COURSE) -> dict[str, Path]:
    """Every student notebook, generated in a copy of ``course`` under ``tmp`` (no gradebook)."""
    copy = tmp / "course"
    shutil.copytree(course / "source", copy / "source")
    for name in COURSE_FILES:
        if (course / name).exists():
            shutil.copy(course / name, copy / name)
    run_nbgrader(["generate_assignment", "*", "--no-db", "--force"], copy)
    return {a: copy / "release" / a / f"{a}.ipynb" for a in assignments(copy)}


def student_view(path: Path) -> list[dict]:
    """What matters in a student notebook: per cell, its type, source and nbgrader metadata."""
    nb = json.loads(path.read_text())
    view = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {})
        view.append({
            "cell_type": cell["cell_type"],
            "source": "".join(cell["source"]),
            "nbgrader": meta.get("nbgrader"),
            "editable": meta.get("editable", True),
            "deletable": meta.get("deletable", True),
        })
    return view


def compare(fresh: dict[str, Path], exercises: Path = EXERCISES) -> list[str]:
    """One line per student notebook in ``exercises`` that differs from ``fresh`` ones."""
    problems = []
    for name, path in fresh.items():
        committed = exercises / f"{name}.ipynb"
        if not committed.exists():
            problems.append(f"{committed} is missing")
            continue
        want, have = student_view(path), student_view(committed)
        if len(want) != len(have):
            problems.append(f"{committed.name}: {len(have)} cells, the source gives {len(want)}")
            continue
        for i, (w, h) in enumerate(zip(want, have, strict=True)):
            problems += [f"{committed.name} cell {i}: {key} differs"
                         for key in w if w[key] != h[key]]
    extra = sorted({p.stem for p in exercises.glob("ex*.ipynb")} - set(fresh))
    problems += [f"{exercises / name}.ipynb has no source" for name in extra]
    return problems


def stale(exercises: Path = EXERCISES, course: Path = COURSE) -> list[str]:
    """One line per committed student notebook that differs from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        return compare(generate_into(Path(tmp), course), exercises)


def release(course: Path = COURSE, exercises: Path = EXERCISES) -> list[Path]:
    """Generate in ``course`` (recorded in its gradebook), then copy to ``exercises``."""
    run_nbgrader(["generate_assignment", "*", "--force"], course)
    exercises.mkdir(parents=True, exist_ok=True)
    written = []
    for name in assignments(course):
        dest = exercises / f"{name}.ipynb"
        shutil.copyfile(course / "release" / name / f"{name}.ipynb", dest)
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the committed student notebooks with a fresh generation")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder")
    parser.add_argument("--exercises", type=Path, default=EXERCISES,
                        help="where the student notebooks go")
    args = parser.parse_args(argv)
    course, exercises = args.course.resolve(), args.exercises.resolve()
    if args.check:
        problems = stale(exercises, course)
        for line in problems:
            print(line)
        print("stale: run `make course-release`" if problems else "student notebooks up to date")
        return 1 if problems else 0
    for path in release(course, exercises):
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
