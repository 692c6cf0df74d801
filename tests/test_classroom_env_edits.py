"""The marked edits classroom/class_env.py makes to nbgrader in the class environment, run on
copies of the installed nbgrader's files (no root, no hub): the Assignments tab's fetch
buttons refresh JupyterLab's file browser, and the Formgrader's tables fit its tab. The hub
tests (tests/test_classroom_hub_browser.py) see both in a browser."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "classroom"))
import class_env  # noqa: E402

nbgrader = pytest.importorskip("nbgrader")
BUNDLES = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
SHEET = (Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static" / "css"
         / "nbgrader.css")


@pytest.fixture
def env(tmp_path):
    """A stand-in class environment holding copies of this venv's nbgrader files."""
    static = tmp_path / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"
    static.mkdir(parents=True)
    for bundle in (BUNDLES / "static").glob("*.js"):
        shutil.copy(bundle, static / bundle.name)
    css = (tmp_path / "lib" / "python3.11" / "site-packages" / "nbgrader" / "server_extensions"
           / "formgrader" / "static" / "css")
    css.mkdir(parents=True)
    shutil.copy(SHEET, css / SHEET.name)
    (css.parent / "js").mkdir()
    shutil.copy(SHEET.parents[1] / "js" / "utils.js", css.parent / "js" / "utils.js")
    return tmp_path


def bundle_text(env) -> str:
    return "".join(p.read_text() for p in env.glob("share/**/static/*.js"))


def test_fetch_and_fetch_feedback_refresh_the_file_browser_once_done(env):
    assert class_env.REFRESHED not in bundle_text(env)
    class_env.refresh_files_after_fetch(env)
    text = bundle_text(env)
    assert text.count(class_env.REFRESHED) == 2  # "Fetch" and "Fetch Feedback"
    for action in ("fetch", "fetch_feedback"):
        at = text.index(f'"assignments/{action}"')
        after = text[at:text.index(class_env.REFRESHED, at)]
        assert ".on_refresh(" in after and 'commands.execute("filebrowser:refresh")' in after


def test_the_fetch_edit_is_made_once(env):
    class_env.refresh_files_after_fetch(env)
    class_env.refresh_files_after_fetch(env)
    assert bundle_text(env).count(class_env.REFRESHED) == 2


def test_the_formgraders_stylesheet_gets_the_table_rules_once_and_keeps_its_own(env):
    (sheet,) = env.glob("lib/**/nbgrader.css")
    original = sheet.read_text()
    class_env.formgrader_tables_fit(env)
    class_env.formgrader_tables_fit(env)
    text = sheet.read_text()
    assert text.startswith(original.rstrip("\n"))
    assert text.count(class_env.TABLES) == 1
    assert ".dataTables_wrapper { overflow-x: auto; }" in text


def test_the_formgraders_script_gets_the_name_breaks_once_and_keeps_its_own(env):
    (utils,) = env.glob("lib/**/js/utils.js")
    original = utils.read_text()
    class_env.formgrader_names_break_at_underscores(env)
    class_env.formgrader_names_break_at_underscores(env)
    text = utils.read_text()
    assert text.startswith(original.rstrip("\n"))
    assert text.count(class_env.NAMES) == 1 and "createElement(\"wbr\")" in text
    # the action icons' tooltips, and "Unrelease" beside Release's bare ✖, appended once
    assert text.count(class_env.ACTIONS) == 1 and '" Unrelease"' in text


def test_view_feedback_opens_the_page_without_moving_the_file_browser(env):
    class_env.open_feedback_from_its_link(env)
    assert 'filebrowser:go-to-path' in bundle_text(env)
    class_env.feedback_link_keeps_the_file_browser(env)
    class_env.feedback_link_keeps_the_file_browser(env)
    text = bundle_text(env)
    assert text.count(class_env.KEPT) == 1 and text.count(class_env.PATCHED) == 1
    assert 'filebrowser:go-to-path' not in text
    at = text.index("(view feedback)")
    link = text[text.rindex("onclick", 0, at):at]
    assert "serviceManager.contents.get(" in link and '"docmanager:open"' in link


def test_the_validate_button_is_wrapped_once_in_the_sets_only_rule(env):
    class_env.validate_button_on_sets_only(env)
    class_env.validate_button_on_sets_only(env)
    text = bundle_text(env)
    assert text.count(class_env.SETS_ONLY) == 1
    rule = text[text.index('"runAll"'):text.index(class_env.SETS_ONLY)]
    assert '@jupyter/nbgrader:create-assignment' in rule and 'getMetadata("nbgrader")' in rule


def test_notebook_outputs_get_the_class_custom_css_and_the_configs_turn_it_on(env):
    static = env / "lib" / "python3.11" / "site-packages" / "jupyter_server" / "static"
    static.mkdir(parents=True)
    class_env.notebook_outputs_wrap_between_words(env)
    css = (static / "custom" / "custom.css").read_text()
    assert "word-break: normal" in css
    for who in ("student", "instructor"):
        config = json.loads((ROOT / "classroom" / f"{who}-config" /
                             "jupyter_server_config.json").read_text())
        assert config["LabApp"]["custom_css"] is True


def test_students_lab_settings_hide_trust_html_and_keep_the_shared_defaults(env):
    """Students' JupyterLab reads its settings' defaults from jupyter-student/lab-settings/
    (its jupyter_server_config.py sets LabApp.app_settings_dir there): the class's shared
    overrides (no news prompt) and, for students only, no "Trust HTML" on the HTML viewer."""
    class_env.configure(env)
    student = env / "etc" / "jupyter-student"
    config = type("Config", (), {})()
    config.LabApp = type("LabApp", (), {})()
    path = student / "jupyter_server_config.py"
    exec(compile(path.read_text(), str(path), "exec"),
         {"get_config": lambda: config, "__file__": str(path)})
    settings = Path(config.LabApp.app_settings_dir)
    assert settings == student / "lab-settings"
    shared = json.loads((ROOT / "classroom" / "lab-settings" / "overrides.json").read_text())
    assert json.loads((settings / "overrides.json").read_text()) == shared
    assert json.loads((env / "share" / "jupyter" / "lab" / "settings" / "overrides.json")
                      .read_text()) == shared
    (extra,) = (settings / "overrides.d").glob("*.json")
    toolbar = json.loads(extra.read_text())["@jupyterlab/htmlviewer-extension:plugin"]["toolbar"]
    assert {"name": "trust", "disabled": True} in toolbar
    assert not (env / "etc" / "jupyter-instructor" / "jupyter_server_config.py").exists()
