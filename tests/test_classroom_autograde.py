"""classroom/autograde_all.py (`make class-autograde`) ends with one line that says what
happened to every submission of the set. (It runs nbgrader as the instructor on the class
hub: tests/test_classroom_hub.py.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "classroom"))
from autograde_all import summary  # noqa: E402

A = "ex04_masks"


def course_with(tmp_path: Path, graded_now=(), graded_before=(), failed=()) -> Path:
    course = tmp_path / "mha-course"
    for student in (*graded_now, *graded_before, *failed):
        (course / "submitted" / student / A).mkdir(parents=True)
    for student in (*graded_now, *graded_before):
        (course / "autograded" / student / A).mkdir(parents=True)
    for student in graded_before:
        os.utime(course / "autograded" / student / A, (1000, 1000))
    return course


def test_the_summary_counts_the_submissions_autograded(tmp_path):
    course = course_with(tmp_path, graded_now=["amy", "bob"])
    assert summary(course, A, started=2000) == (
        f"ex04_masks: 2 submissions autograded, 0 failed; grades in the gradebook "
        f"({course / 'gradebook.db'})")


def test_the_summary_names_who_failed(tmp_path):
    course = course_with(tmp_path, graded_now=["amy"], failed=["bob"])
    assert "1 submission autograded, 1 failed (bob: see the log above)" in summary(
        course, A, started=2000)


def test_the_summary_says_which_were_graded_before(tmp_path):
    course = course_with(tmp_path, graded_now=["amy"], graded_before=["bob"])
    assert "1 submission autograded, 1 graded before" in summary(course, A, started=2000)
