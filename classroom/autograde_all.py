"""Autograde every submission of one exercise set, as the instructor (run as root).

    python3 classroom/autograde_all.py ROSTER.csv ASSIGNMENT --env CLASS_ENV

`make class-autograde ASSIGNMENT=ex04_masks` runs it. It runs ``nbgrader autograde
ASSIGNMENT`` in the instructor's ``~/mha-course`` as the instructor's own Unix user, with the
class environment first on PATH (nbgrader shells out to ``alembic``), so the gradebook and the
autograded files belong to the instructor as when they grade in their own JupyterLab. From
that JupyterLab the same one action is, in a Terminal: ``cd ~/mha-course && nbgrader
autograde ASSIGNMENT``. (The Formgrader's web page autogrades one submission per click.)
It ends with one line that counts the submissions autograded and those that failed.
Only the standard library.
"""

from __future__ import annotations

import argparse
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accounts import read_roster  # noqa: E402


def summary(course: Path, assignment: str, started: float) -> str:
    """One line: how many submissions of ``assignment`` were autograded now, were graded
    before (nbgrader skips those without --force), or failed (submitted, no graded copy)."""
    submitted = sorted(p.parent.name for p in course.glob(f"submitted/*/{assignment}"))
    now = before = 0
    failed = []
    for student in submitted:
        graded = course / "autograded" / student / assignment
        if not graded.is_dir():
            failed.append(student)
        elif graded.stat().st_mtime >= started:
            now += 1
        else:
            before += 1
    line = f"{assignment}: {now} submission{'s' * (now != 1)} autograded"
    if before:
        line += f", {before} graded before (left as they were; nbgrader autograde --force " \
                "grades them again)"
    line += f", {len(failed)} failed"
    if failed:
        line += f" ({', '.join(failed)}: see the log above)"
    return line + f"; grades in the gradebook ({course / 'gradebook.db'})"


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
    env = {"PATH": f"{args.env / 'bin'}:/usr/bin:/bin", "HOME": entry.pw_dir,
           "LANG": "C.UTF-8"}
    print(f"autograding every submission of {args.assignment} as {instructor} in {course}",
          flush=True)
    started = time.time() - 1  # file times may lag the clock by a little
    done = subprocess.run([str(args.env / "bin" / "nbgrader"), "autograde", args.assignment],
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=course,
                          env=env)
    print(summary(course, args.assignment, started), flush=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
