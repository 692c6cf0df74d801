"""`make course-autograde`: nbgrader autograde for every submission, surviving a killer.

    python tools/course_autograde.py COURSE [ASSIGNMENT] [--no-force]

Runs ``nbgrader autograde ASSIGNMENT --force`` (every set by default) in COURSE, in its own
session; with ``--no-force``, without ``--force``: submissions graded before are left as
they were (the class's `make class-autograde`, classroom/autograde_all.py, runs it so).
A student's answer cell can kill that process (``os.kill(os.getppid(), signal.SIGKILL)``):
nbgrader then stops, and every submission after it was left ungraded.
Here the submission nbgrader was grading when it died (the last "Sanitizing
.../submitted/<student>/<set>/" line of its log) is recorded in the gradebook with 0 points,
needs_manual_grade and the review reason "the grading process was killed while this
submission ran" (a feedback page says so), and nbgrader is started again without ``--force``,
so it skips what is graded and goes on with the rest. One nbgrader process for the class, one
more per killer (starting nbgrader costs about 7 s of CPU here: `nbgrader autograde` with nothing
to grade took 6.7 s user, 0.4 s sys on a loaded 2-core machine; a process per student would add
over 3 minutes to a class of 30).

A submission that takes longer than a budget (``--budget``, 600 s by default) is stopped the
same way: nbgrader is killed, the submission recorded with 0 points, needs_manual_grade and
the reason "grading stopped this submission after 600 s", and nbgrader started again without
``--force``. An answer cell that patches ``builtins.max`` (issue 20's examiner) kept grading on
one submission for 13-15 minutes (the kernel's event loop calls ``max`` in asyncio's selector:
Python stops answering without dying, and what runs after it waits for time limits); the
budget caps what one submission can cost the class, whatever the cause.

A submission folder without the notebook nbgrader expects (none, or another name that
tools/course_collect.py could not settle, e.g. two notebooks), or whose notebook is not valid
JSON (a truncated upload), makes nbgrader skip it and exit 1; it is named in the summary with
the reason ("no ex01_weighted_sum.ipynb; found ...", "ex03_scaling.ipynb is not valid JSON
(...)"), recorded in the gradebook with 0 points, needs_manual_grade and that reason, gets a
graded copy made from the released notebook whose test cells say why (so it gets a feedback
page; marked with a ``.not_gradable`` file, and removed by a later run once the folder holds a
readable notebook, so that ``--no-force`` grades the new one), and does not fail the run.

Exit status: 0 when every submission was graded or recorded as a killer's or as not gradable;
1 when nbgrader failed for another reason (its own exit status, or a death outside any
submission). A summary is printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ERROR = re.compile(r"There was an error processing assignment '([^']*)' for student '([^']*)'")
# nbgrader's other wording of the same error (a notebook it could not read): the folder
ERROR_AT = re.compile(r"There was an error processing assignment: .*?[/\\]submitted[/\\]"
                      r"([^/\\]+)[/\\]([^/\\\s]+)")
SANITIZING = re.compile(r"Sanitizing (.*?)[/\\]submitted[/\\]([^/\\]+)[/\\]([^/\\]+)[/\\]")
KILLED = "the grading process was killed while this submission ran"
REVIEW = "Flagged for review: "  # as course/mha_grading.py writes it
MAX_RUNS = 50
BUDGET = 600.0  # seconds one submission may take (--budget)
OVER_BUDGET = "grading stopped this submission after {:.0f} s, the time one submission may take"
# (student, set) -> seconds, for each submission the watchdog of run_nbgrader stopped
OVERRAN: dict = {}
# in autograded/<student>/<set>/ when that copy stands for a submission nbgrader could not read
PLACEHOLDER = ".not_gradable"


def run_nbgrader(course: Path, assignment: str, force: bool, budget: float | None = None
                 ) -> tuple[int, tuple | None, set]:
    """One ``nbgrader autograde``: its exit status, the (student, set) it was grading
    last and the (student, set) it reported errors for; its log goes to stderr as it comes.
    A submission still being graded ``budget`` seconds after nbgrader began it (its
    "Sanitizing" line) is stopped: nbgrader's session is killed and the submission noted
    in :data:`OVERRAN`."""
    nbgrader = Path(sys.executable).with_name("nbgrader")
    args = [str(nbgrader), "autograde", assignment] + (["--force"] if force else [])
    proc = subprocess.Popen(args, cwd=course, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    state = {"current": None, "since": time.monotonic()}
    done = threading.Event()

    def watchdog():
        while not done.wait(1.0):
            current = state["current"]
            if current is not None and time.monotonic() - state["since"] > budget:
                OVERRAN[current] = budget
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                return

    if budget:
        threading.Thread(target=watchdog, daemon=True).start()
    errors = set()
    try:
        for line in proc.stdout:
            sys.stderr.write(line)
            match = SANITIZING.search(line)
            if match:
                state["current"], state["since"] = (match.group(2), match.group(3)), \
                    time.monotonic()
            match = ERROR.search(line)
            if match:
                errors.add((match.group(2), match.group(1)))
            match = ERROR_AT.search(line)
            if match:
                errors.add((match.group(1), match.group(2)))
        return proc.wait(), state["current"], errors
    finally:
        done.set()


def not_gradable(course: Path, assignment: str) -> dict:
    """{(student, set): reason} for each submission folder lacking a notebook of its set
    (tools/course_collect.py says which names a set expects)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from course_collect import expected_names, problem

    found = {}
    for folder in sorted(course.glob(f"submitted/*/{assignment}")):
        if folder.is_dir() and (course / "source" / folder.name).is_dir():
            why = problem(folder, expected_names(course, folder.name))
            if why:
                found[folder.parent.name, folder.name] = why
    return found


def record_zero(course: Path, student: str, assignment: str, reason: str) -> None:
    """The submission in the gradebook with 0 points on every grade cell, needs_manual_grade,
    and ``reason`` after the review prefix in its first comment."""
    sys.path.insert(0, str(course))
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        gb.update_or_create_student(student)
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            submission = gb.add_submission(assignment, student)
        first = True
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0.0
                grade.needs_manual_grade = True
            for comment in notebook.comments:
                if first:
                    comment.auto_comment = REVIEW + reason
                    first = False
        gb.db.commit()


def record_not_gradable(course: Path, student: str, assignment: str, reason: str) -> str:
    """0 points, needs_manual_grade and ``reason`` in the gradebook, and a graded copy made
    from the released notebook whose test cells say why (so that generate_feedback makes the
    student a page); '' when recorded, else why not (the summary names the student either
    way)."""
    try:
        record_zero(course, student, assignment, reason)
    except Exception as err:  # the summary matters more than the record
        return f"not recorded in the gradebook: {type(err).__name__}: {err}"
    try:
        released_copy(course, student, assignment, reason)
    except Exception as err:
        return f"no feedback copy: {type(err).__name__}: {err}"
    return ""


def drop_placeholders(course: Path, assignment: str, unfit: dict) -> list[str]:
    """The graded copies :func:`released_copy` made for submissions that are gradable now
    (a student handed in a readable notebook since): removed, so that nbgrader without
    ``--force`` grades them instead of skipping them as graded."""
    dropped = []
    for marker in sorted(course.glob(f"autograded/*/{assignment}/{PLACEHOLDER}")):
        folder = marker.parent
        if (folder.parent.name, folder.name) not in unfit:
            shutil.rmtree(folder, ignore_errors=True)
            dropped.append(f"{folder.parent.name}/{folder.name}")
    return dropped


def released_copy(course: Path, student: str, assignment: str, reason: str) -> None:
    """autograded/<student>/<set>/ for a submission nbgrader could not read: the released
    notebook (no answers), each test cell's output the reason."""
    import nbformat
    from nbgrader import utils

    release = course / "release" / assignment
    target = course / "autograded" / student / assignment
    if not release.is_dir() or not list(release.glob("*.ipynb")):
        return
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    (target / PLACEHOLDER).write_text(reason + "\n")
    stamp = course / "submitted" / student / assignment / "timestamp.txt"
    if stamp.is_file():
        shutil.copy(stamp, target / stamp.name)
    for path in release.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                if utils.is_grade(cell):
                    cell.outputs = [nbformat.v4.new_output(
                        "error", ename="NotGraded",
                        evalue=f"your submission could not be graded: {reason}; it gets no "
                               "points until your instructor looks at it.",
                        traceback=[f"NotGraded: {reason}."])]
        nbformat.write(nb, target / path.name)


def record_killer(course: Path, student: str, assignment: str, reason: str = KILLED) -> None:
    """The killer's submission (or one stopped at the budget, ``reason``): 0 points, flagged;
    a graded copy whose test cells say why (so that nbgrader without --force skips it)."""
    sys.path.insert(0, str(course))
    import nbformat
    from nbgrader import utils

    source = course / "submitted" / student / assignment
    target = course / "autograded" / student / assignment
    reasons = [reason]
    try:  # what the scan sees in its code (the kill itself, usually)
        import mha_grading

        for path in source.glob("*.ipynb"):
            reasons += mha_grading._static_flags(nbformat.read(path, as_version=4))
    except Exception as err:  # the record matters more than the reasons
        reasons.append(f"(its code could not be scanned: {type(err).__name__})")
    record_zero(course, student, assignment, "; ".join(reasons))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for path in target.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.outputs, cell.execution_count = [], None
            if utils.is_grade(cell):
                cell.outputs = [nbformat.v4.new_output(
                    "error", ename="GradingStopped",
                    evalue=f"{reason}; it gets no points until your instructor grades it.",
                    traceback=[f"Grading stopped: {reason}."])]
        nbformat.write(nb, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", type=Path)
    parser.add_argument("assignment", nargs="?", default="*")
    parser.add_argument("--no-force", dest="force", action="store_false",
                        help="leave the submissions graded before as they are (nbgrader "
                             "autograde without --force); by default they are graded again")
    parser.add_argument("--budget", type=float, default=BUDGET,
                        help=f"seconds one submission may take before it is stopped and "
                             f"recorded with 0 points, flagged (default {BUDGET:.0f}; 0: none)")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    started = time.time() - 1  # file times may lag the clock by a little
    killers, stopped, failure = [], [], ""
    unfit = not_gradable(course, args.assignment)
    for name in drop_placeholders(course, args.assignment, unfit):
        print(f"course_autograde: {name} is gradable now; its placeholder for a notebook "
              "that could not be read is removed and it is graded", file=sys.stderr, flush=True)
    OVERRAN.clear()
    for run in range(MAX_RUNS):
        status, current, errors = run_nbgrader(course, args.assignment,
                                               force=args.force and run == 0,
                                               **({"budget": args.budget} if args.budget else {}))
        died = status < 0 or status in (128 + signal.SIGKILL, 128 + signal.SIGTERM)
        if not died:
            if status != 0 and not (status == 1 and errors and errors <= set(unfit)):
                failure = f"nbgrader autograde exited with status {status}"
            break
        if current is None or current in killers or current in stopped:
            failure = f"nbgrader autograde died (status {status}) outside a submission"
            break
        if current in OVERRAN:
            stopped.append(current)
            print(f"course_autograde: {current[0]}/{current[1]} took over {args.budget:.0f} s; "
                  "stopped, recording it with 0 and going on", file=sys.stderr, flush=True)
            record_killer(course, *current, reason=OVER_BUDGET.format(args.budget))
            continue
        killers.append(current)
        print(f"course_autograde: nbgrader died (status {status}) while grading "
              f"{current[0]}/{current[1]}; recording it and going on", file=sys.stderr, flush=True)
        record_killer(course, *current)
    else:
        failure = f"nbgrader autograde died {MAX_RUNS} times"
    recorded = {}
    for (student, assignment), why in unfit.items():
        note = record_not_gradable(course, student, assignment, why)
        recorded[f"{student}/{assignment}"] = why + (f" ({note})" if note else "")
    over = {f"{s}/{a}": OVER_BUDGET.format(args.budget) for s, a in stopped}
    copies = list((course / "autograded").glob(f"*/{args.assignment}/*.ipynb"))
    graded = sorted(str(p.parent.relative_to(course / "autograded")) for p in copies)
    before = sum(p.stat().st_mtime < started for p in copies)  # left as they were (--no-force)
    zeroed = {f"{s}/{a}" for s, a in killers + stopped} | set(recorded)  # 0 points, with why
    now = sum(p.stat().st_mtime >= started and
              str(p.parent.relative_to(course / "autograded")) not in zeroed for p in copies)
    print(json.dumps({"graded": len(graded), "killed_the_grader": [f"{s}/{a}" for s, a in killers],
                      "killed_reason": KILLED, "not_gradable": recorded, "over_budget": over,
                      "failure": failure or None}), flush=True)
    print(f"course_autograde: {now} submissions graded now"
          + (f", {before} graded before and left as they were" if before else "")
          + (f"; {len(killers)} killed the grading process and got 0, flagged for review: "
             + ", ".join(f"{s}/{a}" for s, a in killers) if killers else "")
          + (f"; {len(over)} stopped after {args.budget:.0f} s, got 0, flagged for review: "
             + ", ".join(over) if over else "")
          + (f"; {len(recorded)} not gradable (no readable notebook of the expected name), "
             "got 0, "
             "flagged for review: " + "; ".join(f"{k}: {v}" for k, v in recorded.items())
             if recorded else "")
          + (f"; FAILED: {failure}" if failure else ""), flush=True)
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())
