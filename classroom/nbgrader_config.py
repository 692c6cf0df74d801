"""nbgrader settings every account of the class shares (installed by `make class-env` as
<class env>/etc/jupyter/nbgrader_config.py, next to the environment rather than in /etc).

The course id and the exchange root: without the course id nbgrader says "No course id
specified"; the exchange root must exist with mode 1777 (`make class-start` makes it).
The instructor's own settings (the course folder, the gradebook) are in their home:
classroom/instructor_nbgrader_config.py.

A set released here leaves out the Colab/Binder line and the install cell, and its intro asks
to run the imports only: the package is installed and the sets come from the Assignment List
(ClassHubCopy, course/class_copy.py, which the course's nbgrader_config.py runs first in
generate_assignment; off wherever this file is not loaded).
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "mha-course"
c.Exchange.root = os.environ.get("MHA_CLASS_EXCHANGE", "/srv/nbgrader/exchange")
c.ClassHubCopy.enabled = True
