"""A lesson runs as Colab runs it: the notebook alone in an empty folder, in a Python that
holds only what Colab preinstalls, with the install cell fetching the package.

Lessons 00, 01 and 06 by default (``MHA_COLAB_ALL=1``: every lesson).

The environment is a fresh venv with python, numpy, torch (``TORCH_SPEC``, the CPU build
this project pins), matplotlib, ipywidgets and ipykernel, and nothing of this project.
Each lesson gets tools/launch.py's cells (as the committed lessons carry them), is copied
alone into an empty folder and runs top to bottom through nbclient in that venv's kernel,
with ``MHA_INSTALL_FROM`` pointing the install cell at a local clone of this repository
(``git clone`` of the committed HEAD: what a tag of it would hold). The first lesson pays
for the install (the cell prints what it installs); the others find the package and must
print nothing there.

Slow: the venv takes about a minute from pip's cache on a quiet machine (torch alone
~20 s), each lesson a few seconds more. ``MHA_COLAB_VENV=DIR`` reuses a venv an earlier
run (or you) made in DIR with the same packages: for iterating by hand, never in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import launch  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a busy 2-core machine: ~10 min

TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
COLAB_PREINSTALLED = ["numpy", "matplotlib", "ipywidgets", "ipykernel"]
# 00 pays for the install, 01 draws widgets and the map, 06 loads the package's trained
# weights (package data). MHA_COLAB_ALL=1 runs every lesson (all passed but 00's file check
# on 2026-12-02, about 10 min on a busy 2-core machine).
EVERY = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LESSONS = EVERY if os.environ.get("MHA_COLAB_ALL") else [
    p for p in EVERY if p.name[:2] in ("00", "01", "06")]
KERNEL = "colab-like"


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """The venv, a kernel spec naming its python, and a clone of the repository."""
    if shutil.which("git") is None:
        pytest.skip("git is missing (the install cell is pointed at a git clone)")
    tmp = tmp_path_factory.mktemp("colab")
    venv = Path(os.environ.get("MHA_COLAB_VENV") or tmp / "venv")
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=1200)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, TORCH_SPEC], check=True, timeout=1200)
        subprocess.run([*pip, *COLAB_PREINSTALLED], check=True, timeout=1200)
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", f"file://{ROOT}", str(clone)],
                   check=True, timeout=120)
    kernels = tmp / "jupyter" / "kernels" / KERNEL
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab-like", "language": "python"}))
    return {"python": python, "clone": clone, "jupyter_path": tmp / "jupyter", "tmp": tmp}


def run_alone(colab, lesson: Path, monkeypatch) -> nbformat.NotebookNode:
    """``lesson`` with its launch cells, alone in an empty folder, run in the venv's kernel."""
    from nbclient import NotebookClient

    folder = colab["tmp"] / f"alone-{lesson.stem}"
    folder.mkdir()
    nb = launch.apply(nbformat.read(lesson, as_version=4), launch.Project(),
                      launch.repository_path(lesson))
    nbformat.write(nb, folder / lesson.name)
    monkeypatch.setenv("JUPYTER_PATH", str(colab["jupyter_path"]))
    monkeypatch.setenv("MHA_INSTALL_FROM", str(colab["clone"]))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        monkeypatch.delenv(name, raising=False)  # nothing of this checkout leaks in
    client = NotebookClient(nb, timeout=300, kernel_name=KERNEL,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    return nb


def install_output(nb) -> str:
    cell = next(c for c in nb.cells if c.get("id") == launch.INSTALL)
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def test_the_venv_holds_no_mha(colab):
    result = subprocess.run([str(colab["python"]), "-c", "import mha"], capture_output=True,
                            text=True, env={"PATH": os.environ.get("PATH", "")})
    assert result.returncode != 0 and "No module named 'mha'" in result.stderr


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_top_to_bottom_where_only_colab_packages_are(colab, lesson, monkeypatch):
    installed = subprocess.run([str(colab["python"]), "-c", "import mha"], capture_output=True,
                               env={"PATH": os.environ.get("PATH", "")}).returncode == 0
    nb = run_alone(colab, lesson, monkeypatch)
    printed = install_output(nb)
    if installed:
        assert printed == "", "the install cell printed although mha was installed"
    else:
        project = launch.Project()
        assert printed == (f"Installing the course package {project.distribution} "
                           f"{project.version} from {colab['clone']}\n")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
