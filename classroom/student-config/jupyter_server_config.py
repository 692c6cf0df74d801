"""Students' JupyterLab reads its settings defaults from lab-settings/ beside this file
(classroom/class_env.py puts the class's shared overrides.json there too): overrides.d/
hides the HTML viewer's "Trust HTML" button. A student's feedback page holds no script
(course/feedback_page.py), so trusting it changes nothing; the button only made students
wonder whether they had to press it (walk19d, B22). Loaded with jupyter_server_config.json
from JUPYTER_CONFIG_PATH, which the hub points at this folder for students only."""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.LabApp.app_settings_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "lab-settings")
