"""`make course-collect` (tools/course_collect.py): a submission's notebook under another name
(a browser's "ex01_weighted_sum (1).ipynb") is taken as the set's notebook when it is the only
one; a folder with none or several is named, so nbgrader never skips a student silently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course_collect  # noqa: E402

A = "ex01_weighted_sum"


def submit(tmp_path: Path, student: str, names: list[str]) -> tuple[Path, Path]:
    """A course whose source has the set, and SUBMISSIONS/<student>/<set>/ holding ``names``."""
    course, submissions = tmp_path / "course", tmp_path / "in"
    (course / "source" / A).mkdir(parents=True, exist_ok=True)
    (course / "source" / A / f"{A}.ipynb").write_text("{}")
    folder = submissions / student / A
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f'{{"name": "{name}", "cells": []}}')
    return course, submissions


def notebooks(course: Path, student: str) -> list[str]:
    return sorted(p.name for p in (course / "submitted" / student / A).glob("*.ipynb"))


def test_a_browsers_second_download_is_renamed_to_the_sets_notebook(tmp_path):
    course, submissions = submit(tmp_path, "amy", [f"{A} (1).ipynb"])
    course_collect.collect(course, submissions)
    assert notebooks(course, "amy") == [f"{A}.ipynb"]
    assert (course / "submitted" / "amy" / A / f"{A}.ipynb").read_text() == \
        f'{{"name": "{A} (1).ipynb", "cells": []}}'


def test_a_renamed_notebook_is_said_in_the_collect_output(tmp_path):
    course, submissions = submit(tmp_path, "amy", [f"{A}-2.ipynb"])
    assert course_collect.collect(course, submissions) == [
        f"course_collect: amy/{A}: renamed '{A}-2.ipynb' to '{A}.ipynb' "
        "(the only notebook in the folder)"]


def test_a_folder_with_the_sets_notebook_is_left_as_it_is(tmp_path):
    course, submissions = submit(tmp_path, "amy", [f"{A}.ipynb", "scratch.ipynb"])
    assert course_collect.collect(course, submissions) == []
    assert notebooks(course, "amy") == sorted([f"{A}.ipynb", "scratch.ipynb"])


def test_a_folder_with_several_other_notebooks_is_named_and_left_alone(tmp_path):
    course, submissions = submit(tmp_path, "amy", [f"{A} (1).ipynb", f"{A} (2).ipynb"])
    assert course_collect.collect(course, submissions) == [
        f"course_collect: amy/{A}: NOT GRADABLE: no {A}.ipynb; found "
        f"'{A} (1).ipynb', '{A} (2).ipynb'"]
    assert notebooks(course, "amy") == [f"{A} (1).ipynb", f"{A} (2).ipynb"]


def test_a_folder_without_a_notebook_is_named(tmp_path):
    course, submissions = submit(tmp_path, "amy", [])
    assert course_collect.collect(course, submissions) == [
        f"course_collect: amy/{A}: NOT GRADABLE: no {A}.ipynb; found no notebook"]


def test_a_notebook_that_is_not_valid_json_is_named_with_why(tmp_path):
    """A truncated upload (issue 20's last examiner): nbgrader could not read it and the
    student was named nowhere; here collect names it, and tools/course_autograde.py records
    it with the same reason."""
    course, submissions = submit(tmp_path, "amy", [])
    (submissions / "amy" / A / f"{A}.ipynb").write_text('{"cells": [{"cell_type": "co')
    (line,) = course_collect.collect(course, submissions)
    assert line.startswith(f"course_collect: amy/{A}: NOT GRADABLE: {A}.ipynb is not valid "
                           "JSON (JSONDecodeError: Unterminated string"), line


def test_a_renamed_download_that_is_not_valid_json_is_renamed_and_named(tmp_path):
    course, submissions = submit(tmp_path, "amy", [])
    (submissions / "amy" / A / f"{A} (1).ipynb").write_bytes(b"\x89PNG\r\n")
    (line,) = course_collect.collect(course, submissions)
    assert f"renamed '{A} (1).ipynb' to '{A}.ipynb'" in line
    assert f"NOT GRADABLE: {A}.ipynb is not valid JSON" in line


def test_make_course_collect_renames_and_says_so(tmp_path):
    course, submissions = submit(tmp_path, "amy", [f"{A} (1).ipynb"])
    proc = subprocess.run(
        ["make", "--no-print-directory", "-o", f"{ROOT / '.venv'}/.installed", "course-collect",
         f"COURSE={course}", f"SUBMISSIONS={submissions}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"amy/{A}: renamed '{A} (1).ipynb' to '{A}.ipynb'" in proc.stdout
    assert notebooks(course, "amy") == [f"{A}.ipynb"]
