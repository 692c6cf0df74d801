"""A released exercise set carries the language_info its kernel reports (course/
nbgrader_config.py), so JupyterLab, which rewrites it when the kernel connects, does not mark
a set modified the moment a student opens it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

COURSE = Path(__file__).resolve().parents[1] / "course"


def test_generate_assignment_writes_the_kernels_language_info(monkeypatch, tmp_path):
    pytest.importorskip("nbgrader")
    from ipykernel.ipkernel import IPythonKernel
    from nbgrader.apps.baseapp import NbGrader

    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.chdir(COURSE)
    app = NbGrader()
    app.initialize([])
    last = app.config.GenerateAssignment.preprocessors[-1]
    nb = nbformat.v4.new_notebook(metadata={"language_info": {"name": "python"}})
    nb, _ = last(parent=app).preprocess(nb, {})
    assert nb.metadata["language_info"] == IPythonKernel.language_info
