"""Build (or bring up to date) the class environment that JupyterHub and every person's
server run from (`make class-env`, as root; needs python3-venv and npm):

    /usr/bin/python3 classroom/class_env.py --prefix /opt/mha-classroom

PREFIX/env    a venv made from /usr/bin/python3 (not pyenv's, which lives under root's 0700
              home: other users could not run it) holding PyTorch (CPU build where right,
              tools/install_torch.py), this package with the instructor extra, JupyterHub
              and nbgrader (classroom/requirements.txt);
              env/etc/jupyter/nbgrader_config.py      classroom/nbgrader_config.py
              env/etc/jupyter-student/                classroom/student-config/ (and in its
                                                      lab-settings/, lab-settings/overrides.json)
              env/etc/jupyter-instructor/             classroom/instructor-config/
              env/share/jupyter/lab/settings/         classroom/lab-settings/ (no news prompt)
              env/share/mha-course/lessons/           notebooks/NN_*.ipynb (for students)
              env/share/mha-course/*.py               classroom/sync_lessons.py,
                                                      classroom/register_students.py,
                                                      tools/course_autograde.py,
                                                      tools/course_collect.py
              nbgrader's lab extension: "(view feedback)" opens the page and leaves the
              file browser where it was, "Fetch" and "Fetch Feedback" refresh the file
              browser when done, "Validate" shows on a student's exercise sets only
              (marked edits)
              nbgrader's formgrader/static/css/nbgrader.css: classroom/formgrader-tables.css
              (tables fit the tab; dialogs: OK looks a button, logs wrap)
              nbgrader's formgrader/static/js/utils.js: classroom/formgrader-names.js
              (a name in the tables breaks only after an underscore) and
              classroom/formgrader-actions.js (the action icons say what they do)
              jupyter_server's static/custom/custom.css: classroom/notebook-outputs.css
              (outputs wrap between words; the configs turn LabApp.custom_css on)
PREFIX/proxy  configurable-http-proxy from npm.

Cached: each step runs only when what it installs changed (a content hash of its inputs
is kept in PREFIX/env/.stamps/), so a second run takes about a second. Files are made
world-readable (umask 022) whatever root's umask is. The package is installed from a clean
copy of pyproject.toml, README.md, LICENSE and src/ (not in place: no build/ left in the tree,
no stale module carried over).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHP = "configurable-http-proxy@5.3.0"
TORCH = "torch==2.13.0"


def digest(*paths: Path, extra: str = "") -> str:
    """A hash of the files (folders: every file under them, by relative path) and ``extra``."""
    h = hashlib.sha256(extra.encode())
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


class Stamps:
    def __init__(self, folder: Path):
        self.folder = folder

    def fresh(self, step: str, value: str) -> bool:
        path = self.folder / step
        return path.exists() and path.read_text() == value

    def mark(self, step: str, value: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / step).write_text(value)


def run(*args, **kwargs) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], check=True, **kwargs)


def clean_copy(tmp: Path) -> Path:
    """The package's files only, in a temporary folder, for a non-editable install."""
    dest = tmp / "mha-course"
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    return dest


def build(prefix: Path, python: str, torch_args: list[str]) -> None:
    os.umask(0o022)
    prefix.mkdir(parents=True, exist_ok=True)
    prefix.chmod(0o755)
    env = prefix / "env"
    py = env / "bin" / "python"
    stamps = Stamps(env / ".stamps")

    deps = digest(ROOT / "pyproject.toml", HERE / "requirements.txt",
                  extra=f"{python} {TORCH} {torch_args}")
    package = digest(ROOT / "pyproject.toml", ROOT / "src" / "mha")
    if not stamps.fresh("deps", deps):
        if not py.exists():
            run(python, "-m", "venv", env)
        run(py, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(py, ROOT / "tools" / "install_torch.py", TORCH, *torch_args)
        with tempfile.TemporaryDirectory() as tmp:
            src = clean_copy(Path(tmp))
            run(py, "-m", "pip", "install", "--quiet", "-r", HERE / "requirements.txt",
                f"{src}[instructor]")
        stamps.mark("deps", deps)
        stamps.mark("package", package)
    if not stamps.fresh("package", package):
        with tempfile.TemporaryDirectory() as tmp:
            src = clean_copy(Path(tmp))
            run(py, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", src)
        stamps.mark("package", package)

    proxy = prefix / "proxy"
    if not stamps.fresh("proxy", CHP) or not (proxy / "node_modules" / ".bin" /
                                              "configurable-http-proxy").exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is missing: apt-get install nodejs npm (Node >= 18)")
        run(npm, "install", "--no-fund", "--no-audit", "--loglevel=error",
            "--prefix", proxy, CHP)
        stamps.mark("proxy", CHP)

    configure(env)
    print(f"class environment ready: {env}")


def configure(env: Path) -> None:
    """Everything the class adds to an environment that already has JupyterLab and nbgrader:
    the role configs, the lessons and helper scripts, JupyterLab's settings, and the marked
    edits of nbgrader and JupyterLab. `make class-env` runs it on the hub's venv; the
    Kubernetes image (classroom/k8s/Dockerfile) runs it on repo2docker's environment
    (``class_env.py --configure ENV``)."""
    etc = env / "etc"
    (etc / "jupyter").mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "nbgrader_config.py", etc / "jupyter" / "nbgrader_config.py")
    shutil.rmtree(etc / "jupyter-student", ignore_errors=True)
    shutil.copytree(HERE / "student-config", etc / "jupyter-student")
    shutil.rmtree(etc / "jupyter-instructor", ignore_errors=True)
    shutil.copytree(HERE / "instructor-config", etc / "jupyter-instructor")
    # what the hub's pre-spawn hook hands out: the lessons, and the scripts it runs as each person
    share = env / "share" / "mha-course"
    shutil.rmtree(share, ignore_errors=True)
    (share / "lessons").mkdir(parents=True)
    for lesson in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        shutil.copy(lesson, share / "lessons" / lesson.name)
    for script in ("sync_lessons.py", "register_students.py"):
        shutil.copy(HERE / script, share / script)
    # what `make class-autograde` (autograde_all.py) runs as the instructor, and the module it
    # imports to name a submission folder without its set's notebook
    for script in ("course_autograde.py", "course_collect.py"):
        shutil.copy(ROOT / "tools" / script, share / script)
    # JupyterLab's defaults for everyone: no "Jupyter news?" prompt, no update check (both
    # would reach outside; a class needs neither)
    settings = env / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "lab-settings" / "overrides.json", settings / "overrides.json")
    # students' JupyterLab reads its defaults from jupyter-student/lab-settings/ (its
    # jupyter_server_config.py): the same, plus overrides.d/ (no "Trust HTML" button)
    shutil.copy(HERE / "lab-settings" / "overrides.json",
                etc / "jupyter-student" / "lab-settings" / "overrides.json")
    open_feedback_from_its_link(env)
    refresh_files_after_fetch(env)
    formgrader_tables_fit(env)
    formgrader_names_break_at_underscores(env)
    feedback_link_keeps_the_file_browser(env)
    validate_button_on_sets_only(env)
    notebook_outputs_wrap_between_words(env)


FEEDBACK_LINK = re.compile(
    r'(\w+)\.commands\.execute\("filebrowser:go-to-path",\{path:(\w+)\}\)')
PATCHED = "/*mha: open the feedback page*/"


def open_feedback_from_its_link(env: Path) -> None:
    """nbgrader's Assignments tab: "(view feedback)" only moves the file browser to the
    feedback folder; make it also open the feedback page(s) in JupyterLab's HTML viewer.
    A small, marked edit of nbgrader's lab extension bundle (nbgrader 0.9), made on every
    run; if nbgrader's code changed so the pattern is gone, it says so and leaves it."""
    bundles = env.glob("share/jupyter/labextensions/@jupyter/nbgrader/static/*.js")
    for bundle in bundles:
        text = bundle.read_text()
        if PATCHED in text or "(view feedback)" not in text:
            continue
        match = FEEDBACK_LINK.search(text)
        if match is None:
            print(f"warning: {bundle}: nbgrader's feedback link not found; left as it is")
            return
        app, path = match.groups()
        opened = (f'{match.group(0)}.then(function(){{return {app}.serviceManager.contents'
                  f'.get({path})}}).then(function(m){{m.content.filter(function(f){{return '
                  f'/\\.html$/.test(f.name)}}).forEach(function(f){{{app}.commands.execute('
                  f'"docmanager:open",{{path:f.path}})}})}}){PATCHED}')
        bundle.write_text(text[:match.start()] + opened + text[match.end():])
        print(f"nbgrader's (view feedback) link now opens the page: {bundle.name}")


FETCH_DONE = re.compile(
    r'(await \w+\("assignments/fetch(?:_feedback)?",\{[^{}]*\}\);(\w+)\.on_refresh\(\w+\))')
REFRESHED = "/*mha: refresh the file browser*/"


def refresh_files_after_fetch(env: Path) -> None:
    """nbgrader's Assignments tab: after "Fetch" (and "Fetch Feedback") the new folder showed
    in JupyterLab's file browser only at its next poll (every 10 s): make the button refresh
    the file browser once the fetch is done. A marked edit of nbgrader's lab extension
    bundle, like :func:`open_feedback_from_its_link`; if the pattern is gone, it says so."""
    for bundle in env.glob("share/jupyter/labextensions/@jupyter/nbgrader/static/*.js"):
        text = bundle.read_text()
        if REFRESHED in text or '"assignments/fetch"' not in text:
            continue
        patched, count = FETCH_DONE.subn(
            lambda m: (f'{m.group(1)};{m.group(2)}.app.commands.execute("filebrowser:refresh")'
                       f'.catch(function(){{}}){REFRESHED}'), text)
        if count == 0:
            print(f"warning: {bundle}: nbgrader's fetch button not found; left as it is")
            return
        bundle.write_text(patched)
        print(f"nbgrader's fetch buttons now refresh the file browser: {bundle.name}")


TABLES = "/*mha: the Formgrader's tables fit its tab*/"


def formgrader_tables_fit(env: Path) -> None:
    """Append classroom/formgrader-tables.css to the stylesheet of the Formgrader's pages
    (nbgrader's formgrader/static/css/nbgrader.css), replacing what an earlier run appended."""
    css = TABLES + "\n" + (HERE / "formgrader-tables.css").read_text()
    for sheet in env.glob("lib/python3*/site-packages/nbgrader/server_extensions/formgrader/"
                          "static/css/nbgrader.css"):
        text = sheet.read_text().split(TABLES)[0].rstrip("\n")
        sheet.write_text(text + "\n\n" + css)
        print(f"the Formgrader's tables fit its tab: {sheet}")


NAMES = "/*mha: names in the Formgrader's tables break after underscores*/"
ACTIONS = "/*mha: the Formgrader's action icons say what they do*/"


def formgrader_names_break_at_underscores(env: Path) -> None:
    """Append classroom/formgrader-names.js to nbgrader's formgrader/static/js/utils.js (every
    Formgrader page loads it), replacing what an earlier run appended: a set's name breaks only
    after an underscore, not inside a word ("ex02_scores_and_so|ftmax"). Then
    classroom/formgrader-actions.js: the action icons get tooltips, and Release's bare ✖ after
    a release (nbgrader's "unrelease") reads "✖ Unrelease", not "failed"."""
    script = (NAMES + "\n" + (HERE / "formgrader-names.js").read_text() + "\n"
              + ACTIONS + "\n" + (HERE / "formgrader-actions.js").read_text())
    for utils in env.glob("lib/python3*/site-packages/nbgrader/server_extensions/formgrader/"
                          "static/js/utils.js"):
        text = utils.read_text().split(NAMES)[0].rstrip("\n")
        utils.write_text(text + "\n\n" + script)
        print(f"the Formgrader's names break after underscores: {utils}")


FEEDBACK_OPENED = re.compile(
    r'(\w+)\.commands\.execute\("filebrowser:go-to-path",\{path:(\w+)\}\)'
    r'\.then\(function\(\)\{return \1\.serviceManager\.contents\.get\(\2\)\}\)')
KEPT = "/*mha: the file browser stays where it was*/"


def feedback_link_keeps_the_file_browser(env: Path) -> None:
    """After :func:`open_feedback_from_its_link`: "(view feedback)" opens the page(s) without
    moving the student's file browser into the feedback folder (a timestamped folder three
    levels down, which the walkthrough's students had to climb out of). A marked edit of the
    edit; if the pattern is gone, it says so and leaves it."""
    for bundle in env.glob("share/jupyter/labextensions/@jupyter/nbgrader/static/*.js"):
        text = bundle.read_text()
        if KEPT in text or PATCHED not in text:
            continue
        patched, count = FEEDBACK_OPENED.subn(
            lambda m: f"{m.group(1)}.serviceManager.contents.get({m.group(2)}){KEPT}", text)
        if count == 0:
            print(f"warning: {bundle}: the feedback link's edit not found; left as it is")
            return
        bundle.write_text(patched)
        print(f"nbgrader's (view feedback) link leaves the file browser: {bundle.name}")


VALIDATE_BUTTON = re.compile(
    r'createNew\((\w+),(\w+)\)\{let (\w+)=new \w+\(\1\),\w+=0;for[^{]*\{[^{}]*\}'
    r'return \1\.toolbar\.insertItem\(\w+,"runAll",\3\)')
SETS_ONLY = "/*mha: Validate on exercise sets only*/"
# Shown where nbgrader's "create assignment" plugin is on (the instructor's servers) or the
# notebook has a cell with nbgrader metadata (a set); hidden on a student's lessons.
SETS_ONLY_JS = (
    ',function(p,c,b){var o={};try{o=JSON.parse(document.getElementById("jupyter-config-data")'
    '.textContent).disabledExtensions||{}}catch(x){}'
    'var off=Array.isArray(o)?o.indexOf("@jupyter/nbgrader:create-assignment")>=0'
    ':!!o["@jupyter/nbgrader:create-assignment"];if(!off)return;b.hide();'
    'c.ready.then(function(){var l=p.content.model.cells;for(var i=0;i<l.length;i++)'
    'if(l.get(i).getMetadata("nbgrader")){b.show();return}})}')


def validate_button_on_sets_only(env: Path) -> None:
    """nbgrader's "Validate" toolbar button sat on every notebook, the lessons too, where it
    has nothing to check: on a student's server (nbgrader's create-assignment plugin off, as
    classroom/student-config/ sets) show it only on notebooks with a cell carrying nbgrader
    metadata (the exercise sets). Instructors keep it everywhere. A marked edit of nbgrader's
    lab extension bundle; if the pattern is gone, it says so and leaves it."""
    for bundle in env.glob("share/jupyter/labextensions/@jupyter/nbgrader/static/*.js"):
        text = bundle.read_text()
        if SETS_ONLY in text or '"Validate Assignment"' not in text:
            continue
        match = VALIDATE_BUTTON.search(text)
        if match is None:
            print(f"warning: {bundle}: nbgrader's Validate button not found; left as it is")
            return
        call = f"{SETS_ONLY_JS}({match.group(1)},{match.group(2)},{match.group(3)}){SETS_ONLY}"
        bundle.write_text(text[:match.end()] + call + text[match.end():])
        print(f"nbgrader's Validate button shows on exercise sets only: {bundle.name}")


def notebook_outputs_wrap_between_words(env: Path) -> None:
    """classroom/notebook-outputs.css as JupyterLab's custom.css (jupyter_server's
    static/custom/, which every server of the environment serves; the student and instructor
    configs turn LabApp.custom_css on): outputs wrap between words, not inside them."""
    for static in env.glob("lib/python3*/site-packages/jupyter_server/static"):
        (static / "custom").mkdir(exist_ok=True)
        shutil.copy(HERE / "notebook-outputs.css", static / "custom" / "custom.css")
        print(f"notebook outputs wrap between words: {static / 'custom' / 'custom.css'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=Path("/opt/mha-classroom"))
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="the Python the venv is made from: every user must be able to run it")
    parser.add_argument("--torch-args", default="",
                        help="extra pip arguments for PyTorch (the Makefile's PIP_TORCH_ARGS)")
    parser.add_argument("--configure", type=Path, metavar="ENV", default=None,
                        help="only add the class's configs and edits to ENV, an environment "
                             "that has JupyterLab and nbgrader (the Kubernetes image)")
    args = parser.parse_args(argv)
    if args.configure is not None:
        os.umask(0o022)
        configure(args.configure.resolve())
        return 0
    build(args.prefix.resolve(), args.python, shlex.split(args.torch_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
