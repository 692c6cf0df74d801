"""Autograde every submission of one exercise set, as the instructor (run as root).

    python3 classroom/autograde_all.py ROSTER.csv ASSIGNMENT --env CLASS_ENV

`make class-autograde ASSIGNMENT=ex04_masks` runs it. It runs tools/course_autograde.py
(installed by `make class-env` as CLASS_ENV/share/mha-course/course_autograde.py) with
``--no-force`` in the instructor's ``~/mha-course`` as the instructor's own Unix user, with
the class environment's Python and that environment first on PATH (nbgrader shells out to
``alembic``), so the gradebook and the autograded files belong to the instructor as when they
grade in their own JupyterLab. That runs one ``nbgrader autograde ASSIGNMENT`` (without
``--force``: submissions graded before are left as they were); a submission that kills it is
recorded with 0 points and flagged for review with its reason, and nbgrader goes on with the
rest. From the instructor's JupyterLab the same one action is, in a Terminal: ``python
CLASS_ENV/share/mha-course/course_autograde.py ~/mha-course ASSIGNMENT --no-force``. (The
Formgrader's web page autogrades one submission per click.)
It ends with one line that counts the submissions autograded, graded before, recorded with 0
for review (killed the grading process) and failed.
Only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accounts import read_roster  # noqa: E402


def summary(course: Path, assignment: str, started: float, killers: dict | None = None) -> str:
    """One line: how many submissions of ``assignment`` were autograded now, were graded
    before (nbgrader skips those without --force), were recorded with 0 for review because
    they killed the grading process (``killers``: student -> reason), or failed (submitted, no
    graded copy)."""
    killers = killers or {}
    submitted = sorted(p.parent.name for p in course.glob(f"submitted/*/{assignment}"))
    now = before = 0
    failed, recorded = [], []
    for student in submitted:
        graded = course / "autograded" / student / assignment
        if student in killers:  # a killer's, or a folder without the set's notebook
            recorded.append(student)
        elif not graded.is_dir():
            failed.append(student)
        elif graded.stat().st_mtime >= started:
            now += 1
        else:
            before += 1
    line = f"{assignment}: {now} submission{'s' * (now != 1)} autograded"
    if before:
        line += f", {before} graded before (left as they were; nbgrader autograde --force " \
                "grades them again)"
    if recorded:
        line += f", {len(recorded)} recorded with 0 points for review (" + "; ".join(
            f"{student}: {killers[student]}" for student in recorded) + ")"
    line += f", {len(failed)} failed"
    if failed:
        line += f" ({', '.join(failed)}: see the log above)"
    return line + f"; grades in the gradebook ({course / 'gradebook.db'})"


def killers_in(report: str, assignment: str) -> dict:
    """{student: reason} from the JSON line tools/course_autograde.py prints at its end: the
    killers and the submissions without the set's notebook, each recorded with 0 points."""
    for line in reversed(report.splitlines()):
        if line.startswith("{"):
            found = json.loads(line)
            reasons = {name: found["killed_reason"] for name in found["killed_the_grader"]}
            reasons.update(found.get("not_gradable") or {})
            reasons.update(found.get("over_budget") or {})
            return {name.split("/")[0]: why for name, why in reasons.items()
                    if name.endswith(f"/{assignment}")}
    return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roster", type=Path)
    parser.add_argument("assignment")
    parser.add_argument("--env", type=Path, default=Path("/opt/mha-classroom/env"))
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("autograde_all.py runs nbgrader as the instructor: run it as root")
    roster = read_roster(args.roster)
    (instructor,) = [n for n, role in roster.items() if role == "instructor"]
    entry = pwd.getpwnam(instructor)
    course = Path(entry.pw_dir) / "mha-course"
    script = args.env / "share" / "mha-course" / "course_autograde.py"
    if not script.is_file():
        raise SystemExit(f"{script} is missing: run `make class-env` (it installs it)")
    env = {"PATH": f"{args.env / 'bin'}:/usr/bin:/bin", "HOME": entry.pw_dir,
           "LANG": "C.UTF-8"}
    print(f"autograding every submission of {args.assignment} as {instructor} in {course}",
          flush=True)
    started = time.time() - 1  # file times may lag the clock by a little
    done = subprocess.run([str(args.env / "bin" / "python"), str(script), str(course),
                           args.assignment, "--no-force"],
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=course,
                          env=env, stdout=subprocess.PIPE, text=True, errors="replace")
    report = done.stdout
    sys.stdout.write("".join(line for line in report.splitlines(keepends=True)
                             if not line.startswith("{")))  # its log went to stderr already
    print(summary(course, args.assignment, started, killers_in(report, args.assignment)),
          flush=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
