"""Launch links (Colab, Binder) and the install cell come from one address, and agree.

tools/launch.py builds them from ``[project.urls] Repository`` and the version in
pyproject.toml (its docstring says how). These tests check the tool on copies of the
notebooks in temporary folders, and the committed notebooks, README and book against it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import launch  # noqa: E402

PROJECT = launch.Project()
NOTEBOOKS = launch.notebooks()
LINK = re.compile(r"https://(?:colab\.research\.google\.com|mybinder\.org)/[^\s)\"'<>]+")


def lesson_copy(tmp_path, name="03_scaling.ipynb") -> Path:
    target = tmp_path / "notebooks" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "notebooks" / name, target)
    return target


def real_pyproject(tmp_path, url="https://github.com/example-org/attention-course") -> Path:
    text = (ROOT / "pyproject.toml").read_text().replace(launch.PLACEHOLDER, url)
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return path


# -- the one address ---------------------------------------------------------------------

def test_pyproject_names_the_repository_once():
    text = (ROOT / "pyproject.toml").read_text()
    assert launch.GITHUB.match(PROJECT.url), PROJECT.url
    assert text.count(PROJECT.url) == 1


def test_links_point_at_the_notebook_at_the_version_tag():
    path = "notebooks/03_scaling.ipynb"
    assert PROJECT.colab(path) == (f"https://colab.research.google.com/github/{PROJECT.owner}/"
                                   f"{PROJECT.name}/blob/v{PROJECT.version}/{path}")
    assert PROJECT.binder(path).endswith(f"/v{PROJECT.version}?urlpath=lab/tree/{path}")
    assert PROJECT.source() == f"git+{PROJECT.url}@v{PROJECT.version}"


def test_the_install_leaves_out_the_jupyterlab_front_end_only():
    names = [re.split(r"[<>=!~;\s]", r, maxsplit=1)[0] for r in PROJECT.runtime_requirements()]
    assert "jupyterlab" not in names and "jupyterlab-rise" not in names
    assert {"numpy", "torch", "matplotlib", "ipywidgets"} <= set(names)


def test_an_instructor_source_links_to_the_student_notebook():
    source = ROOT / "course" / "source" / "ex03_scaling" / "ex03_scaling.ipynb"
    assert launch.repository_path(source) == "notebooks/exercises/ex03_scaling.ipynb"


# -- the tool on copies -------------------------------------------------------------------

def test_apply_inserts_the_header_after_the_title_and_the_install_cell_first_among_code(
        tmp_path):
    path = lesson_copy(tmp_path)
    assert launch.main(["--apply", "--readme", str(tmp_path / "none.md"), str(path)]) == 0
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].source.startswith("# 03")
    assert nb.cells[1].id == launch.HEADER and nb.cells[2].id == launch.INSTALL
    assert [c for c in nb.cells if c.cell_type == "code"][0].id == launch.INSTALL
    assert PROJECT.colab("notebooks/03_scaling.ipynb") in nb.cells[1].source
    assert launch.differences(nb, PROJECT, "notebooks/03_scaling.ipynb") == []


def test_apply_twice_leaves_the_file_byte_identical(tmp_path):
    path = lesson_copy(tmp_path)
    launch.main(["--apply", "--readme", str(tmp_path / "none.md"), str(path)])
    once = path.read_bytes()
    launch.main(["--apply", "--readme", str(tmp_path / "none.md"), str(path)])
    assert path.read_bytes() == once


def test_a_new_address_updates_the_cells_in_place_without_duplicating_them(tmp_path):
    path = lesson_copy(tmp_path)
    launch.main(["--apply", "--readme", str(tmp_path / "none.md"), str(path)])
    before = len(nbformat.read(path, as_version=4).cells)
    pyproject = real_pyproject(tmp_path)
    assert launch.main(["--check", "--pyproject", str(pyproject), "--readme",
                        str(tmp_path / "none.md"), str(path)]) == 1
    launch.main(["--apply", "--pyproject", str(pyproject), "--readme",
                 str(tmp_path / "none.md"), str(path)])
    nb = nbformat.read(path, as_version=4)
    assert len(nb.cells) == before
    text = path.read_text()
    assert "OWNER/REPO" not in text
    assert "example-org/attention-course" in text


def test_check_reports_a_notebook_without_launch_cells(tmp_path, capsys):
    path = lesson_copy(tmp_path)
    nb = json.loads(path.read_text())  # the committed lesson has them: take them out
    nb["cells"] = [c for c in nb["cells"]
                   if not {"launch-header", "launch-install"} & set(c["metadata"].get("tags", []))]
    path.write_text(json.dumps(nb))
    assert launch.main(["--check", "--readme", str(tmp_path / "none.md"), str(path)]) == 1
    assert "no launch header or install cell" in capsys.readouterr().out


def test_readme_badges_follow_the_address(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# T\n\n[![Binder](https://mybinder.org/badge_logo.svg)](https://"
                      "mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath=lab/tree/x.ipynb)\n\nText\n")
    pyproject = real_pyproject(tmp_path)
    launch.main(["--apply", "--pyproject", str(pyproject), "--readme", str(readme),
                 str(lesson_copy(tmp_path))])
    text = readme.read_text()
    assert "OWNER/REPO" not in text and text.endswith("\n\nText\n")
    assert "colab-badge.svg" in text and text.count("example-org/attention-course") == 2


def test_the_install_cell_does_nothing_and_prints_nothing_where_mha_is_installed(tmp_path):
    source = launch.install_source(PROJECT)
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_the_install_cell_says_what_it_installs_where_mha_is_missing(tmp_path):
    """With ``mha`` hidden and pip replaced by a stub, the cell prints one line and calls
    pip twice: the dependencies, then the package from MHA_INSTALL_FROM without them."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(
        "import importlib.util, subprocess, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'mha' else real(n, *a)\n"
        "subprocess.run = lambda args, **kw: print('PIP', ' '.join(args[4:]))\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(fake), "MHA_INSTALL_FROM": "/tmp/clone"}
    result = subprocess.run([sys.executable, "-c", launch.install_source(PROJECT)], env=env,
                            capture_output=True, text=True, timeout=60)
    lines = result.stdout.splitlines()
    assert lines[0] == (f"Installing the course package {PROJECT.distribution} "
                        f"{PROJECT.version} from /tmp/clone")
    assert lines[1].startswith("PIP --quiet numpy") and "jupyterlab" not in lines[1]
    assert lines[2] == "PIP --quiet --no-deps /tmp/clone"


# -- the committed files agree with the address ---------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_notebook_carries_the_launch_cells_of_the_address(path):
    nb = nbformat.read(path, as_version=4)
    problems = launch.differences(nb, PROJECT, launch.repository_path(path))
    assert problems == [], (f"{path.relative_to(ROOT)}: {problems}: run "
                            "`python tools/launch.py --apply`, then `make notebooks`")


def test_readme_badges_agree_with_the_address():
    assert launch.BADGES.search((ROOT / "README.md").read_text()).group(0) == \
        launch.readme_badges(PROJECT)


def test_every_launch_link_in_readme_notebooks_and_book_is_one_the_tool_builds():
    """Every Colab or Binder link anywhere is built from the address (no hand-written one)."""
    paths = [p for p in NOTEBOOKS if p.is_file()]
    built = set()
    for path in paths:
        where = launch.repository_path(path)
        built |= {PROJECT.colab(where), PROJECT.binder(where)}
    built |= set(LINK.findall(launch.readme_badges(PROJECT)))
    texts = {p: p.read_text() for p in [ROOT / "README.md", *paths,
                                         *(ROOT / "book").glob("*.md"),
                                         *(ROOT / "book" / "_ext").glob("*.py")]}
    for path, text in texts.items():
        for link in LINK.findall(text):
            if link.startswith("https://mybinder.org/badge_logo") or link.startswith(
                    "https://colab.research.google.com/assets/"):
                continue
            assert link.rstrip(".,") in built, f"{path.relative_to(ROOT)}: {link} is hand-written"


def test_no_placeholder_is_left_once_a_real_address_is_set():
    if PROJECT.is_placeholder:
        pytest.skip(f"the address is still the placeholder {launch.PLACEHOLDER} "
                    "(pyproject.toml [project.urls] Repository)")
    for path in [ROOT / "README.md", *NOTEBOOKS, *(ROOT / "book").glob("*.md"),
                 ROOT / "docs" / "TEACHING.md"]:
        if path.is_file():
            assert "OWNER/REPO" not in path.read_text(), f"{path.relative_to(ROOT)}"


def test_the_install_cell_is_collapsed_and_prints_nothing_in_the_stored_lessons():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        cell = next((c for c in nb["cells"] if c.get("id") == launch.INSTALL), None)
        if cell is None:
            continue  # test_notebook_carries_the_launch_cells_of_the_address says so
        assert cell["metadata"]["jupyter"]["source_hidden"] is True
        assert cell.get("outputs", []) == [], f"{path.name}: the install cell printed"


def test_in_an_exercise_set_the_launch_cells_are_locked_read_only_cells(tmp_path):
    target = tmp_path / "notebooks" / "exercises" / "ex04_masks.ipynb"
    target.parent.mkdir(parents=True)
    nb = json.loads((ROOT / "notebooks" / "exercises" / "ex04_masks.ipynb").read_text())
    nb["cells"] = [c for c in nb["cells"]
                   if not {"launch-header", "launch-install"} & set(c["metadata"].get("tags", []))]
    target.write_text(json.dumps(nb))
    launch.main(["--apply", "--readme", str(tmp_path / "none.md"), str(target)])
    for cell in json.loads(target.read_text())["cells"][1:3]:
        assert cell["metadata"]["nbgrader"]["locked"] and cell["metadata"]["editable"] is False
