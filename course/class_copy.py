"""The exercise sets without the cells that launch them elsewhere: the class hub's copy and
the feedback page.

Every set opens with a line that launches it on Colab or Binder and a cell that installs the
course package there (tools/launch.py writes both, tagged ``launch-header`` and
``launch-install``), and its intro says "First run the two code cells below: the install cell
(...) and the imports." On the class hub (classroom/) neither cell means anything: the package
is installed and the sets come from the Assignment List. A feedback page is read, not run.

* :func:`without_launch_cells` leaves both cells out and says "First run the code cell below:
  the imports." instead (:data:`RUN_FIRST`); any other cell is unchanged.
* :class:`ClassHubCopy`, a preprocessor of ``nbgrader generate_assignment``, does that to the
  set it releases, when turned on: ``c.ClassHubCopy.enabled = True``, which the class hub's
  nbgrader settings say (classroom/nbgrader_config.py, in the class environment). It is the
  first preprocessor, so nbgrader locks, checksums and saves in the gradebook the cells the
  students get: their copy, the gradebook and autograde agree, and course/source stays as it
  is. Off (the default), the released set keeps both cells: notebooks/exercises/, Binder and
  Colab are unchanged.
* course/feedback_page.py's exporter uses :func:`without_launch_cells` on every page.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

LAUNCH_TAGS = {"launch-header", "launch-install"}
# The intro's sentence (each set has it once), as a pattern: a reflowed line still matches.
RUN_FIRST = re.compile(
    r"First\s+run\s+the\s+two\s+code\s+cells\s+below:\s+the\s+install\s+cell\s+\(it\s+does\s+"
    r"nothing\s+where\s+the\s+course\s+package\s+is\s+installed\)\s+and\s+the\s+imports\.")
RUN_FIRST_HERE = "First run the code cell below: the imports."


def is_launch_cell(cell) -> bool:
    return bool(LAUNCH_TAGS & set((cell.get("metadata") or {}).get("tags") or []))


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def without_launch_cells(nb):
    """``nb`` (a notebook dict or nbformat node, changed in place and returned) without its
    launch cells; where it had one, the intro's "First run ..." sentence names the imports only."""
    kept = [cell for cell in nb["cells"] if not is_launch_cell(cell)]
    if len(kept) < len(nb["cells"]):
        for cell in kept:
            if cell.get("cell_type") == "markdown" and RUN_FIRST.search(_source(cell)):
                cell["source"] = RUN_FIRST.sub(RUN_FIRST_HERE, _source(cell))
    nb["cells"] = kept
    return nb


class ClassHubCopy(Preprocessor):
    """``generate_assignment``: the released set without its launch cells (see the module)."""

    enabled = Bool(False, help="leave out the Colab/Binder line and the install cell "
                               "(the class hub turns it on)").tag(config=True)

    def preprocess(self, nb, resources):
        return without_launch_cells(nb), resources
