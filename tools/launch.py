"""Launch links and the install cell, generated from the one address in pyproject.toml.

    python tools/launch.py --apply [NOTEBOOK ...]  insert or update the cells and README badges
    python tools/launch.py --check [NOTEBOOK ...]  exit 1 and say what differs (changes nothing)
    python tools/launch.py --show                  the address, the ref and lesson 00's links

**One address.** ``[project.urls] Repository`` in pyproject.toml names the GitHub
repository; ``[project] version`` gives the ref, ``v<version>`` (the release tag). Every
launch link is built from those two values here and nowhere else: the README's badges,
each notebook's header cell (which the book shows), and the install cell.

**The placeholder.** Until the project has a public address, ``Repository`` holds
:data:`PLACEHOLDER` (``https://github.com/OWNER/REPO``). Links are still generated from
it, so their shape is tested, and ``--check`` and ``--show`` say that the address is a
placeholder. Once a real address is set, tests/test_launch.py fails if ``OWNER/REPO`` is
left anywhere in the README, the notebooks or the book's sources.

**What goes in each notebook** (lessons ``notebooks/NN_*.ipynb``, student exercise sets
``notebooks/exercises/ex*.ipynb`` and their instructor sources ``course/source/ex*/``,
whose links point at the student notebook):

- a markdown cell (id and tag ``launch-header``) right after the title cell: "Run it
  without installing: Open in Colab | Launch on Binder" (plain links: no badge image,
  which a page would fetch from another host);
- a code cell (id and tag ``launch-install``) right after it, so it is the first code
  cell: where ``import mha`` would fail (Colab opens a notebook alone), it prints one line
  saying what it installs, then pip-installs the package from the repository at the
  notebook's tag (``--no-deps``) and the package's dependencies Colab may lack
  (:func:`runtime_requirements`: all but the JupyterLab front end). Where ``mha`` is
  importable it does nothing and prints nothing (strict nbval compares its empty
  output). The environment variable ``MHA_INSTALL_FROM`` replaces the source (a local
  clone, in tests/test_launch_colab.py). Its source is collapsed in JupyterLab.

``--apply`` is idempotent: an up-to-date notebook is not rewritten; a stale cell (another
address or version) is replaced in place, never duplicated.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "https://github.com/OWNER/REPO"
HEADER, INSTALL = "launch-header", "launch-install"
FRONT_END = {"jupyterlab", "jupyterlab-rise"}  # Colab and Binder bring their own
GITHUB = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")
BADGES = re.compile(r"^\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\].*$", re.M)


class Project:
    """The address, version and dependencies pyproject.toml states."""

    def __init__(self, pyproject: Path = ROOT / "pyproject.toml"):
        data = tomllib.loads(pyproject.read_text())
        self.url = data["project"]["urls"]["Repository"].rstrip("/")
        match = GITHUB.match(self.url)
        if not match:
            raise SystemExit(f"{pyproject}: [project.urls] Repository = {self.url!r} is not "
                             "https://github.com/<owner>/<name>")
        self.owner, self.name = match.groups()
        self.version = data["project"]["version"]
        self.ref = f"v{self.version}"
        self.distribution = data["project"]["name"]
        self.dependencies = data["project"]["dependencies"]

    @property
    def is_placeholder(self) -> bool:
        return self.url == PLACEHOLDER

    def colab(self, path: str) -> str:
        return (f"https://colab.research.google.com/github/{self.owner}/{self.name}/blob/"
                f"{self.ref}/{path}")

    def binder(self, path: str) -> str:
        return (f"https://mybinder.org/v2/gh/{self.owner}/{self.name}/{self.ref}"
                f"?urlpath=lab/tree/{path}")

    def source(self) -> str:
        """What pip installs the package from: the repository at the notebook's tag."""
        return f"git+{self.url}@{self.ref}"

    def runtime_requirements(self) -> list[str]:
        """The package's dependencies without the JupyterLab front end."""
        return [d for d in self.dependencies
                if re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower() not in FRONT_END]


def repository_path(notebook: Path) -> str:
    """The path a learner opens: an instructor source links to its student notebook."""
    notebook = notebook.resolve()
    if notebook.parent.parent.name == "source" and notebook.parent.parent.parent.name == "course":
        return f"notebooks/exercises/{notebook.name}"
    try:
        return notebook.relative_to(ROOT).as_posix()
    except ValueError:  # a copy elsewhere (tests): where it lives in the repository
        kind = "notebooks/exercises" if notebook.name.startswith("ex") else "notebooks"
        return f"{kind}/{notebook.name}"


def header_text(project: Project, path: str) -> str:
    return (f"Run it without installing anything: [Open in Colab]({project.colab(path)}) | "
            f"[Launch on Binder]({project.binder(path)}) (the next cell installs the course "
            "package where it is missing, and does nothing here otherwise).")


def install_source(project: Project) -> str:
    requirements = "".join(f'\n        "{r}",' for r in project.runtime_requirements())
    return f'''\
#@title Install the course package where it is missing (Colab); elsewhere this does nothing
import importlib.util

if importlib.util.find_spec("mha") is None:
    import os, subprocess, sys
    source = os.environ.get("MHA_INSTALL_FROM", "{project.source()}")
    print(f"Installing the course package {project.distribution} {project.version} from {{source}}")
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip,{requirements}
    ], check=True)
    subprocess.run([*pip, "--no-deps", source], check=True)
    importlib.invalidate_caches()'''


def launch_cells(project: Project, path: str) -> tuple:
    header = nbformat.v4.new_markdown_cell(header_text(project, path))
    header.id = HEADER
    header.metadata = {"tags": [HEADER]}
    install = nbformat.v4.new_code_cell(install_source(project))
    install.id = INSTALL
    install.metadata = {"tags": [INSTALL], "jupyter": {"source_hidden": True},
                        "cellView": "form"}
    return header, install


def _find(nb, tag: str) -> int | None:
    return next((i for i, c in enumerate(nb.cells)
                 if tag in c.get("metadata", {}).get("tags", []) or c.get("id") == tag), None)


def _title_end(nb) -> int:
    """Index after the title cell (a first markdown cell opening with '# '), else 0."""
    first = nb.cells[0] if nb.cells else None
    is_title = (first is not None and first.cell_type == "markdown"
                and first.source.lstrip().startswith("# "))
    return 1 if is_title else 0


def _graded(nb) -> bool:
    """An nbgrader notebook (an exercise set or its source): its other cells carry nbgrader
    metadata."""
    return any("nbgrader" in c.get("metadata", {}) for c in nb.cells
               if c.get("id") not in (HEADER, INSTALL))


def _locked(cell) -> bool:
    meta = cell.get("metadata", {})
    return meta.get("nbgrader", {}).get("locked") is True and meta.get("editable") is False


def _lock(cell) -> None:
    """A read-only cell of an exercise set, as nbgrader's other locked cells are."""
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": cell.id.replace("-", "_"),
                                 "locked": True, "schema_version": 3, "solution": False,
                                 "task": False}
    cell.metadata["editable"] = False
    cell.metadata["deletable"] = False


def apply(nb, project: Project, path: str):
    """Insert or update the header and install cells of ``nb``; return ``nb``. In an
    exercise set they are locked read-only cells, like the set's other given cells."""
    header, install = launch_cells(project, path)
    for wanted in (header, install):
        index = _find(nb, wanted.id)
        if index is None:
            continue
        cell = nb.cells[index]
        # keep what the lessons' executor stores (outputs, count, slide metadata)
        cell.source = wanted.source
        cell.metadata.update(wanted.metadata)
    if _find(nb, HEADER) is None:
        nb.cells.insert(_title_end(nb), header)
    if _find(nb, INSTALL) is None:
        nb.cells.insert(_find(nb, HEADER) + 1, install)
    # the order: header, then install, then every other code cell
    header_at, install_at = _find(nb, HEADER), _find(nb, INSTALL)
    if install_at != header_at + 1:
        nb.cells.insert(header_at + 1, nb.cells.pop(install_at))
    if _graded(nb):
        for tag in (HEADER, INSTALL):
            _lock(nb.cells[_find(nb, tag)])
    return nb


def differences(nb, project: Project, path: str) -> list[str]:
    header_at, install_at = _find(nb, HEADER), _find(nb, INSTALL)
    if header_at is None or install_at is None:
        return ["no launch header or install cell (run tools/launch.py --apply)"]
    problems = []
    header, install = launch_cells(project, path)
    if nb.cells[header_at].source != header.source:
        problems.append("the launch header's links differ from pyproject.toml's address")
    if nb.cells[install_at].source != install.source:
        problems.append("the install cell differs from pyproject.toml's address or version")
    if install_at != header_at + 1 or header_at != _title_end(nb):
        problems.append("the launch cells are not right after the title")
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    if first_code != install_at:
        problems.append("the install cell is not the first code cell")
    if _graded(nb) and not (_locked(nb.cells[header_at]) and _locked(nb.cells[install_at])):
        problems.append("the launch cells of an exercise set are not locked read-only cells")
    return problems


def readme_badges(project: Project) -> str:
    lesson = "notebooks/00_start_here.ipynb"
    return (f"[![Binder](https://mybinder.org/badge_logo.svg)]({project.binder(lesson)}) "
            f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"({project.colab(lesson)})")


def notebooks() -> list[Path]:
    return [*sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
            *sorted((ROOT / "notebooks" / "exercises").glob("ex*.ipynb")),
            *sorted((ROOT / "course" / "source").glob("ex*/ex*.ipynb"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--apply", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--show", action="store_true")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    project = Project(args.pyproject)
    note = (f"note: the address is the placeholder {PLACEHOLDER}: set [project.urls] Repository "
            "in pyproject.toml, then run tools/launch.py --apply" if project.is_placeholder
            else None)
    if args.show:
        print(f"address {project.url}\nref     {project.ref}\nsource  {project.source()}")
        print(f"colab   {project.colab('notebooks/00_start_here.ipynb')}")
        print(f"binder  {project.binder('notebooks/00_start_here.ipynb')}")
        if note:
            print(note)
        return 0
    status = 0
    for path in args.notebooks or notebooks():
        nb = nbformat.read(path, as_version=4)
        where = repository_path(path)
        problems = differences(nb, project, where)
        if args.check:
            for problem in problems:
                print(f"{path}: {problem}")
            status |= bool(problems)
        elif problems:
            nbformat.write(apply(nb, project, where), path)
            print(f"launch {path}: {problems[0]}: updated")
    if args.readme.is_file():
        text = args.readme.read_text()
        badges = readme_badges(project)
        if BADGES.search(text) is None:
            print(f"{args.readme}: no Binder badge line to update")
            status |= 1
        elif BADGES.search(text).group(0) != badges:
            if args.check:
                print(f"{args.readme}: the badges differ from pyproject.toml's address")
                status |= 1
            else:
                args.readme.write_text(BADGES.sub(lambda _: badges, text, count=1))
                print(f"launch {args.readme}: badges updated")
    if note:
        print(note)
    return status


if __name__ == "__main__":
    sys.exit(main())
