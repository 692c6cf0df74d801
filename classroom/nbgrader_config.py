"""nbgrader settings every account of the class shares (installed by `make class-env` as
<class env>/etc/jupyter/nbgrader_config.py, next to the environment rather than in /etc).

The course id and the exchange root: without the course id nbgrader says "No course id
specified"; the exchange root must exist with mode 1777 (`make class-start` makes it).
The instructor's own settings (the course folder, the gradebook) are in their home:
classroom/instructor_nbgrader_config.py.
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "mha-course"
c.Exchange.root = os.environ.get("MHA_CLASS_EXCHANGE", "/srv/nbgrader/exchange")
