"""A class of 30 on one set is graded in under 3 minutes (`make course-autograde`).

30 submissions of ex04 (the solution and the corpus's ex04 answers, in turn) through the
real flow. Asserted: the CPU time of the grading processes (nbgrader and its kernels) is under
180 s; on a quiet 2-core machine the wall time equals it, as they run one after the other.
The wall time is printed too (-s): on a machine shared with other jobs it grows with the load.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from grading_corpus import CORPUS, Sub
from test_grading_corpus import build, make

ROOT = Path(__file__).resolve().parents[1]
SET = "ex04_masks"
CLASS = 30

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_a_class_of_30_on_one_set_grades_in_under_3_minutes(tmp_path):
    course, exercises, submitted = tmp_path / "course", tmp_path / "exercises", tmp_path / "subs"
    shutil.copytree(ROOT / "course" / "source" / SET, course / "source" / SET)
    for module in (ROOT / "course").glob("*.py"):  # the config and what it imports
        shutil.copy(module, course / module.name)
    make("course-release", course, EXERCISES=exercises)
    styles = [Sub("solution", SET, {})] + [s for s in CORPUS if s.assignment == SET]
    for i in range(CLASS):
        style = styles[i % len(styles)]
        folder = submitted / f"student{i:02d}" / SET
        folder.mkdir(parents=True)
        nbformat.write(build(course, exercises, style), folder / f"{SET}.ipynb")
    make("course-collect", course, SUBMISSIONS=submitted)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    make("course-autograde", course)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"\nclass of {CLASS} on {SET}: wall {wall:.0f} s, CPU {cpu:.0f} s, "
          f"load average {os.getloadavg()[0]:.1f}")
    assert cpu < 180
    assert len(list((course / "autograded").glob(f"*/{SET}/{SET}.ipynb"))) == CLASS
