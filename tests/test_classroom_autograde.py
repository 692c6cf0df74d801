"""classroom/autograde_all.py (`make class-autograde`) ends with one line that says what
happened to every submission of the set. (It runs nbgrader as the instructor on the class
hub: tests/test_classroom_hub.py.)"""

from __future__ import annotations

import os
import sys
import time
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


def test_the_summary_reports_a_killer_recorded_with_0_and_its_reason(tmp_path):
    course = course_with(tmp_path, graded_now=["amy", "bob", "eve"])
    line = summary(course, A, started=2000, killers={"eve": "the grading process was killed"})
    assert "2 submissions autograded, 1 recorded with 0 points for review " \
           "(eve: the grading process was killed), 0 failed" in line


# -- the one run behind it: tools/course_autograde.py, as autograde_all.py runs it -------------

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import course_autograde  # noqa: E402
from autograde_all import killers_in  # noqa: E402


def fake_runs(monkeypatch, results):
    """course_autograde with nbgrader replaced: each run returns the next (status, student
    [, {(student, set) nbgrader reported an error for}]); returns the list of the --force
    flags the runs got."""
    forced, todo = [], [(*r, set()) if len(r) == 2 else r for r in results]
    monkeypatch.setattr(course_autograde, "run_nbgrader",
                        lambda course, assignment, force, **kw: forced.append(force) or todo.pop(0))
    monkeypatch.setattr(course_autograde, "record_killer", lambda course, student, a, **kw: None)
    return forced


def test_course_autograde_forces_its_first_run_by_default(monkeypatch, tmp_path):
    forced = fake_runs(monkeypatch, [(-9, ("eve", A)), (0, None)])
    assert course_autograde.main([str(tmp_path), A]) == 0
    assert forced == [True, False]


def test_course_autograde_with_no_force_never_forces(monkeypatch, tmp_path):
    forced = fake_runs(monkeypatch, [(-9, ("eve", A)), (0, None)])
    assert course_autograde.main([str(tmp_path), A, "--no-force"]) == 0
    assert forced == [False, False]


def test_the_summary_reads_the_killers_course_autograde_reports(monkeypatch, tmp_path, capsys):
    fake_runs(monkeypatch, [(-9, ("eve", A)), (0, None)])
    course_autograde.main([str(tmp_path), A, "--no-force"])
    assert killers_in(capsys.readouterr().out, A) == {"eve": course_autograde.KILLED}


def test_nbgrader_is_stopped_when_one_submission_runs_past_the_budget(monkeypatch, tmp_path):
    """A stand-in nbgrader begins eve's submission and never ends it (as one whose answer
    patched builtins.max did for 13-15 minutes): it is killed after the budget."""
    fake = tmp_path / "bin" / "nbgrader"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"[AutogradeApp | INFO] Sanitizing "
                    f"{tmp_path}/submitted/eve/{A}/{A}.ipynb\"\nsleep 120\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake.with_name("python")))
    course_autograde.OVERRAN.clear()
    start = time.monotonic()
    status, current, _ = course_autograde.run_nbgrader(tmp_path, A, force=True, budget=2)
    assert time.monotonic() - start < 30
    assert status == -9 and current == ("eve", A)
    assert course_autograde.OVERRAN == {("eve", A): 2}


def test_a_submission_past_the_budget_is_recorded_with_0_and_the_reason(
        monkeypatch, tmp_path, capsys):
    runs = [(-9, ("eve", A), set()), (0, None, set())]
    recorded = []

    def run(course, assignment, force, budget=None):
        if runs[0][1] is not None:
            course_autograde.OVERRAN[runs[0][1]] = budget
        return runs.pop(0)

    monkeypatch.setattr(course_autograde, "run_nbgrader", run)
    monkeypatch.setattr(course_autograde, "record_killer",
                        lambda course, student, a, reason=None: recorded.append((student, reason)))
    assert course_autograde.main([str(tmp_path), A, "--budget", "300"]) == 0
    reason = course_autograde.OVER_BUDGET.format(300)
    assert recorded == [("eve", reason)]
    out = capsys.readouterr().out
    assert killers_in(out, A) == {"eve": reason}
    assert "1 stopped after 300 s" in out


def course_with_misnamed(tmp_path: Path) -> Path:
    """amy's folder holds her notebook under a browser's second-download name."""
    course = tmp_path / "mha-course"
    (course / "source" / A).mkdir(parents=True)
    (course / "source" / A / f"{A}.ipynb").write_text("{}")
    (course / "submitted" / "amy" / A).mkdir(parents=True)
    (course / "submitted" / "amy" / A / f"{A} (1).ipynb").write_text("{}")
    return course


def test_a_folder_without_the_sets_notebook_does_not_fail_the_run(monkeypatch, tmp_path):
    course = course_with_misnamed(tmp_path)
    fake_runs(monkeypatch, [(1, None, {("amy", A)})])
    monkeypatch.setattr(course_autograde, "record_not_gradable", lambda *a: "")
    assert course_autograde.main([str(course), A]) == 0


def test_the_summary_names_the_student_without_the_sets_notebook_and_why(
        monkeypatch, tmp_path, capsys):
    course = course_with_misnamed(tmp_path)
    fake_runs(monkeypatch, [(1, None, {("amy", A)})])
    monkeypatch.setattr(course_autograde, "record_not_gradable", lambda *a: "")
    course_autograde.main([str(course), A])
    out = capsys.readouterr().out
    assert f"amy/{A}: no {A}.ipynb; found '{A} (1).ipynb'" in out.splitlines()[-1]
    assert killers_in(out, A) == {"amy": f"no {A}.ipynb; found '{A} (1).ipynb'"}


def test_another_students_error_still_fails_the_run(monkeypatch, tmp_path):
    course = course_with_misnamed(tmp_path)
    fake_runs(monkeypatch, [(1, None, {("amy", A), ("bob", A)})])
    monkeypatch.setattr(course_autograde, "record_not_gradable", lambda *a: "")
    assert course_autograde.main([str(course), A]) == 1


def test_the_class_summary_reports_a_folder_without_the_notebook_as_recorded(tmp_path):
    course = course_with(tmp_path, graded_now=["bob"], failed=["amy"])
    line = summary(course, A, started=2000, killers={"amy": f"no {A}.ipynb; found nothing"})
    assert f"1 submission autograded, 1 recorded with 0 points for review " \
           f"(amy: no {A}.ipynb; found nothing), 0 failed" in line


def test_a_notebook_nbgrader_cannot_read_is_named_recorded_and_does_not_fail_the_run(
        monkeypatch, tmp_path, capsys):
    """Issue 20's last examiner: a truncated notebook made nbgrader log "There was an error
    processing assignment: <path>"; the summary named nobody and the run exited 1, which
    stopped `make course-autograde course-feedback course-export`."""
    course = tmp_path / "mha-course"
    (course / "source" / A).mkdir(parents=True)
    (course / "source" / A / f"{A}.ipynb").write_text("{}")
    (course / "submitted" / "amy" / A).mkdir(parents=True)
    (course / "submitted" / "amy" / A / f"{A}.ipynb").write_text('{"cells": [')
    log = (f"[AutogradeApp | ERROR] There was an error processing assignment: "
           f"{course}/submitted/amy/{A}\n")
    seen = []
    monkeypatch.setattr(course_autograde, "record_not_gradable",
                        lambda course, student, a, why: seen.append((student, why)) or "")

    class Proc:
        stdout = iter([log])
        pid = 0

        def wait(self):
            return 1

    monkeypatch.setattr(course_autograde.subprocess, "Popen", lambda *a, **k: Proc())
    assert course_autograde.main([str(course), A, "--budget", "0"]) == 0
    (student, why), = seen
    assert student == "amy" and f"{A}.ipynb is not valid JSON" in why, why
    out = capsys.readouterr().out
    assert killers_in(out, A)["amy"].startswith(f"{A}.ipynb is not valid JSON")


def test_nbgraders_error_line_with_a_path_names_the_student():
    line = ("[AutogradeApp | ERROR] There was an error processing assignment: "
            "/c/course/submitted/e03_corrupt_json/ex03_scaling")
    assert course_autograde.ERROR_AT.search(line).groups() == ("e03_corrupt_json",
                                                               "ex03_scaling")


def test_an_unreadable_submission_gets_a_feedback_copy_saying_why(tmp_path):
    import nbformat

    course = tmp_path / "c"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(
        "check()", metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1,
                                          "solution": False, "locked": True,
                                          "schema_version": 3}})]
    (course / "release" / A).mkdir(parents=True)
    nbformat.write(nb, course / "release" / A / f"{A}.ipynb")
    course_autograde.released_copy(course, "amy", A, "it is not valid JSON")
    got = nbformat.read(course / "autograded" / "amy" / A / f"{A}.ipynb", 4)
    assert got.cells[0].outputs == []
    assert "it is not valid JSON" in got.cells[1].outputs[0]["evalue"]


def test_a_placeholder_for_an_unreadable_notebook_goes_once_the_notebook_is_readable(tmp_path):
    """With --no-force (the class hub), nbgrader skips a submission that has a graded copy:
    the placeholder made for an unreadable notebook must not keep a fixed resubmission at 0."""
    course = tmp_path / "c"
    for student in ("amy", "bob"):
        folder = course / "autograded" / student / A
        folder.mkdir(parents=True)
        (folder / course_autograde.PLACEHOLDER).write_text("not valid JSON\n")
    dropped = course_autograde.drop_placeholders(course, A, {("bob", A): "still broken"})
    assert dropped == [f"amy/{A}"]
    assert not (course / "autograded" / "amy" / A).exists()
    assert (course / "autograded" / "bob" / A).exists()
