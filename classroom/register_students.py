"""Put the roster's students, with their names, in the instructor's gradebook.

    python classroom/register_students.py COURSE_DIR < students.json

Run by the hub before the instructor's server starts (jupyterhub_config.py), AS THE
INSTRUCTOR, with the class environment's Python (it needs nbgrader). ``students.json`` is
``[{"id": ..., "first_name": ..., "last_name": ...}, ...]`` from the roster. Without this,
nbgrader adds each student when their first submission is collected, with no name, and the
Formgrader lists everyone as "None, None".
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    from nbgrader.api import Gradebook

    course = Path(argv[0])
    students = json.load(sys.stdin)
    os.chdir(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for s in students:
            gradebook.update_or_create_student(s["id"], first_name=s["first_name"],
                                               last_name=s["last_name"])
    print(f"{len(students)} student(s) in {course / 'gradebook.db'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
