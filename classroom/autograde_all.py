"""Autograde every submission of one exercise set, as the instructor (run as root).

    python3 classroom/autograde_all.py ROSTER.csv ASSIGNMENT --env CLASS_ENV

`make class-autograde ASSIGNMENT=ex04_masks` runs it. It runs ``nbgrader autograde
ASSIGNMENT`` in the instructor's ``~/mha-course`` as the instructor's own Unix user, with the
class environment first on PATH (nbgrader shells out to ``alembic``), so the gradebook and the
autograded files belong to the instructor as when they grade in their own JupyterLab. From
that JupyterLab the same one action is, in a Terminal: ``cd ~/mha-course && nbgrader
autograde ASSIGNMENT``. (The Formgrader's web page autogrades one submission per click.)
Only the standard library.
"""

from __future__ import annotations

import argparse
import os
import pwd
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accounts import read_roster  # noqa: E402


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
    done = subprocess.run([str(args.env / "bin" / "nbgrader"), "autograde", args.assignment],
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=course,
                          env=env)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
