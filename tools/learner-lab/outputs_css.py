"""Install classroom/notebook-outputs.css as JupyterLab's custom.css for `make lab`.

JupyterLab's own CSS sets ``word-break: break-all`` on outputs, so a check's message (then
wrapped between words at 100 columns) broke inside words wherever the output area was narrower
("Input oper|and" at 1024 px with the file browser open). With ``--LabApp.custom_css=True``
JupyterLab serves ``custom/custom.css`` from ``~/.jupyter/custom/`` or, when the learner has
none there, from jupyter_server's ``static/custom/`` of the Python that runs it: this script
copies the file there (the project's own .venv; nothing of the learner's is touched; a
learner's own ~/.jupyter/custom/custom.css wins). The class hub does the same in
classroom/class_env.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jupyter_server

CSS = Path(__file__).resolve().parents[2] / "classroom" / "notebook-outputs.css"


def install() -> Path:
    target = Path(jupyter_server.__file__).parent / "static" / "custom" / "custom.css"
    target.parent.mkdir(exist_ok=True)
    if not target.exists() or target.read_bytes() != CSS.read_bytes():
        shutil.copy(CSS, target)
    return target


if __name__ == "__main__":
    install()
