"""nbgrader configuration of the exercise course (nbgrader 0.9.6).

Run nbgrader from this folder (the Makefile's course-* targets do), with the
venv's bin on PATH: nbgrader shells out to `alembic` to set up the gradebook.

Layout under this folder (nbgrader's defaults):
  source/<assignment>/<assignment>.ipynb      instructor versions: solutions, hidden tests
  release/<assignment>/                       what `nbgrader generate_assignment` makes
  submitted/<student>/<assignment>/           what students hand in
  autograded/, feedback/                      what autograde and generate_feedback write
  downloaded/<assignment>/archive/            LMS zip downloads for `nbgrader zip_collect`
  gradebook.db                                the SQLite gradebook (not committed)

A real database instead of SQLite: set the gradebook URL, e.g.
  c.CourseDirectory.db_url = "postgresql://nbgrader:PASSWORD@db.example.org/mha_course"
(SQLAlchemy URL; install the driver, e.g. psycopg2, into the same environment),
or pass --CourseDirectory.db_url=... on the command line.
"""

import os
import sys

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # so that `lms_collectors` (the zip_collect plugins) imports

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "mha-course"
c.CourseDirectory.root = HERE
# The gradebook: nbgrader's default name, next to this file.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")

# Students are created in the gradebook when their first submission is graded.
c.Autograde.create_student = True

# A cell that runs longer than this is interrupted and marked as an error (an
# infinite loop costs one cell, not the whole class). Exercise cells need well under 1 s, except
# `import torch` in set 07, which took 8 s on a busy 2-core machine.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# Keep hidden tests hidden in the feedback HTML too (by default nbgrader shows their source).
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# The solution and hidden-test markers used in source/ (nbgrader's defaults, stated here).
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# The feedback page: math as MathML (no MathJax from a CDN), long lines wrapped
# (course/feedback_page.py). GenerateFeedback keeps its own preprocessors above and runs this one
# first, so the page shows the math typeset even inside JupyterLab's HTML viewer.
from feedback_page import TEMPLATE_NAME, MathToMathML, WrapLongLines, template_dirs  # noqa: E402

c.GenerateFeedback.preprocessors = [MathToMathML, *c.GenerateFeedback.preprocessors, WrapLongLines]
c.HTMLExporter.template_name = TEMPLATE_NAME
c.HTMLExporter.extra_template_basedirs = template_dirs()
