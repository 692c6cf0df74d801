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
import warnings

from nbconvert.preprocessors import (
    ClearMetadataPreprocessor,
    CSSHTMLHeaderPreprocessor,
    Preprocessor,
)
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearOutput,
    DeduplicateIds,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets import Bool

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # so that `lms_collectors` and `mha_grading` import

from mha_grading import (  # noqa: E402  (this course's grading plugins, see their docstring)
    GradeOutsideKernel,
    KeepOneCopy,
    RestoreHiddenTests,
    ReviewCsvExport,
    RobustExecute,
    SaveGradingFlags,
    ScrubHiddenSource,
)

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
# After the interrupt, how long a cell may take to stop before grading restarts Python
# (mha_grading.RobustExecute); nbclient's default, 4 s, is short on a busy machine.
c.Execute.iopub_timeout = 15
# The grading kernel's channels are encrypted (CurveZMQ, which the kernel's spec declares):
# over plain TCP, ipykernel warned "Kernel is running over TCP without encryption" once per
# submission, and on a shared machine another user could listen on the loopback ports.
c.KernelManager.transport_encryption = "auto"

# nbgrader's Gradebook.add_submission builds the submission's rows linked to rows already in the
# session before adding them; SQLAlchemy 2 warns three times ("Object of type
# <SubmittedAssignment> not in session, add operation along 'Student.submissions' will not
# proceed") though the rows are added with the submission, grades included. nbgrader's code,
# not ours: that warning alone is silenced.
try:
    from sqlalchemy.exc import SAWarning
except ImportError:  # pragma: no cover (nbgrader depends on SQLAlchemy)
    pass
else:
    warnings.filterwarnings("ignore", category=SAWarning,
                            message=r"Object of type <Submitted\w+> not in session")

# Grading runs outside the student's kernel (mha_grading.py, docs/TEACHING.md): the hidden line
# of a test cell only records what the answer returned; GradeOutsideKernel judges the records
# in this process and writes the verdict as the cell's output. RestoreHiddenTests puts the
# hidden lines back before nbgrader's OverwriteCells (no "checksum has changed" warning for an
# untouched cell); RobustExecute never drops a submission whose cell hangs or kills Python.
# ClearMetadataPreprocessor stays in nbgrader's place but is off (nbconvert's `enabled` defaults
# to False and nbgrader never turns it on): the autograded copy keeps the marks grading leaves,
# each stopped cell's `mha_stopped` and the notebook's `mha_grading` flags
# (tests/test_grading_corpus.py). Turning it on would wipe them.
# KeepOneCopy runs before DeduplicateIds: a cell copied in JupyterLab (its grade id too) made
# DeduplicateIds empty the earlier copy's metadata and CheckCellMetadata stop the whole run.
c.Autograde.sanitize_preprocessors = [ClearOutput, KeepOneCopy, DeduplicateIds, OverwriteKernelspec,
                                      RestoreHiddenTests, OverwriteCells, CheckCellMetadata]
c.Autograde.autograde_preprocessors = [RobustExecute, GradeOutsideKernel, IgnorePattern,
                                       ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades,
                                       SaveGradingFlags, AssignLatePenalties, CheckCellMetadata]

# Keep hidden tests hidden in the feedback HTML too (by default nbgrader shows their source),
# and remove any hidden line a cell printed.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, ScrubHiddenSource,
                                    CSSHTMLHeaderPreprocessor]

# A released notebook carries the language_info that the kernel reports (ipykernel's, from this
# Python: on the class hub, the class environment's, which runs the students' kernels), so
# JupyterLab, which rewrites it when a kernel connects, does not mark a fresh set modified.
class KernelLanguageInfo(Preprocessor):
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        try:
            from ipykernel.ipkernel import IPythonKernel
        except ImportError:  # pragma: no cover (nbgrader's environment has ipykernel)
            return nb, resources
        nb.metadata["language_info"] = dict(IPythonKernel.language_info)
        return nb, resources


# On the class hub (classroom/nbgrader_config.py turns it on), the released set leaves out the
# Colab/Binder line and the install cell, and its intro names the imports only (class_copy.py).
# First, so nbgrader locks, checksums and saves the cells the students get. Off elsewhere.
from class_copy import ClassHubCopy  # noqa: E402

c.GenerateAssignment.preprocessors = [ClassHubCopy,
                                      *GenerateAssignment.class_traits()["preprocessors"].default(),
                                      KernelLanguageInfo]

# The export CSV gets a needs_review column (the reasons grading flagged a submission).
c.ExportApp.plugin_class = ReviewCsvExport

# The solution and hidden-test markers used in source/ (nbgrader's defaults, stated here).
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# The feedback page: math as MathML (no MathJax from a CDN), long lines wrapped, no link that
# would blank JupyterLab's HTML viewer (course/feedback_page.py). GenerateFeedback keeps its own
# preprocessors above and runs this one first, so the page shows the math typeset even inside
# JupyterLab's HTML viewer. The template is set on FeedbackExporter alone, never on every
# HTMLExporter: the Formgrader shows each submission with an HTMLExporter and its own
# 'formgrade' template, and with ours it failed (HTTP 500, TemplateNotFound bootstrap.min.css).
from feedback_page import (  # noqa: E402
    TEMPLATE_NAME,
    FeedbackExporter,
    InstructorCommentsOnly,
    MathToMathML,
    WrapLongLines,
    formgrade_template_dirs,
    template_dirs,
)

# An answer's comment on the page is the instructor's, never nbgrader's "No response."
c.GenerateFeedback.preprocessors = [
    MathToMathML,
    *(InstructorCommentsOnly if p is GetGrades else p for p in c.GenerateFeedback.preprocessors),
    WrapLongLines]
c.GenerateFeedback.exporter_class = FeedbackExporter
c.FeedbackExporter.template_name = TEMPLATE_NAME
c.FeedbackExporter.extra_template_basedirs = template_dirs()
c.FeedbackExporter.preprocessors = []  # GenerateFeedback's list above runs MathToMathML there

# The Formgrader's submission page (a plain HTMLExporter, its template name 'formgrade', which
# is left alone): the math as MathML too, and nbgrader's 'formgrade' template found first in a
# copy whose MathJax from cdnjs is replaced by a stand-in (course/feedback_page.py), so the page
# requests nothing outside the machine.
c.HTMLExporter.preprocessors = [MathToMathML]
c.HTMLExporter.extra_template_basedirs = formgrade_template_dirs()
