"""A released exercise set carries the language_info its kernel reports (course/
nbgrader_config.py), so JupyterLab, which rewrites it when the kernel connects, does not mark
a set modified the moment a student opens it."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "notebooks"
                                         / "exercises").glob("ex*.ipynb")), ids=lambda p: p.name)
def test_run_all_goes_past_a_failing_test_or_an_unanswered_task(path):
    """JupyterLab sends a cell tagged raises-exception with stop_on_error off, so the kernel
    does not drop the cells queued after it: Run All shows every test's verdict, past a stub
    that still raises NotImplementedError."""
    nb = json.loads(path.read_text())
    tests = [c for c in nb["cells"] if c["cell_type"] == "code" and (
        c["metadata"].get("nbgrader", {}).get("grade")
        or c["metadata"].get("nbgrader", {}).get("solution"))]
    assert tests
    assert [c["metadata"]["nbgrader"]["grade_id"] for c in tests
            if "raises-exception" not in c["metadata"].get("tags", [])] == []
