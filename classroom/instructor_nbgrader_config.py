"""The instructor's nbgrader settings, installed as ~INSTRUCTOR/nbgrader_config.py by
classroom/accounts.py (which also copies the course to ~INSTRUCTOR/mha-course).

The instructor's server starts in their home, so the formgrader reads this file. It points
at the course folder and loads that folder's own nbgrader_config.py (course/nbgrader_config.py
of the repository: gradebook, cell timeout, hidden tests kept out of the feedback), so the
formgrader and `nbgrader ...` run inside ~/mha-course behave the same.
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

COURSE = os.path.join(os.path.expanduser("~"), "mha-course")
load_subconfig(os.path.join(COURSE, "nbgrader_config.py"))  # noqa: F821 (traitlets)
c.CourseDirectory.root = COURSE
