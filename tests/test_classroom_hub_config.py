"""classroom/jupyterhub_config.py's pre-spawn hook, run on a stand-in spawner (no hub, no
Unix accounts: the helper it runs as each person is replaced). The whole hub is tested in
tests/test_classroom_hub.py."""

from __future__ import annotations

import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def hub_namespace(monkeypatch, tmp_path) -> dict:
    from traitlets.config import Config

    roster = tmp_path / "roster.csv"
    roster.write_text("username,role\nlecturer,instructor\nada,student\n")
    monkeypatch.setenv("MHA_CLASS_ROSTER", str(roster))
    path = ROOT / "classroom" / "jupyterhub_config.py"
    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    namespace["as_user"] = lambda *args, **kwargs: None
    namespace["pwd"] = types.SimpleNamespace(
        getpwnam=lambda name: types.SimpleNamespace(pw_dir=f"/home/{name}"))
    return namespace


def spawner(name: str):
    return types.SimpleNamespace(user=types.SimpleNamespace(name=name), environment={},
                                 default_url="/lab")


def test_a_student_starts_on_lesson_00(monkeypatch, tmp_path):
    hook = hub_namespace(monkeypatch, tmp_path)["role_settings"]
    student = spawner("ada")
    hook(student)
    assert student.default_url == "/lab/tree/00_start_here.ipynb"


def test_the_instructor_starts_on_the_formgrader_tab(monkeypatch, tmp_path):
    """Not an empty Launcher (walk19d, A01): nbgrader's lab extension opens its Formgrader tab
    for ?formgrader=true (tests/test_classroom_hub_browser.py sees the tab after login)."""
    hook = hub_namespace(monkeypatch, tmp_path)["role_settings"]
    instructor = spawner("lecturer")
    hook(instructor)
    assert instructor.default_url == "/lab?formgrader=true"


def test_the_instructors_server_logs_no_debug_lines_into_the_formgraders_dialogs():
    """nbgrader's Formgrader gives each command the level of the server's logger, and
    traitlets sets that logger to DEBUG (its handler filters): the Generate Feedback dialog
    listed every template path (walk19d, D07). The instructor's server config sets the logger
    to INFO, which the Formgrader then passes on."""
    import json
    import logging

    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    path = ROOT / "classroom" / "instructor-config" / "jupyter_server_config.json"
    ServerApp.clear_instance()
    app = ServerApp(config=Config(json.loads(path.read_text())))
    assert app.log.level == logging.INFO
