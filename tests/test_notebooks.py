"""Hygiene of every committed lesson notebook.

Strict nbval (run by `make test` over notebooks/) proves each stored text
output is what the code prints. These tests prove the stored notebook is the
result of one clean top-to-bottom run a learner can trust.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _lessons():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        if any("nbgrader" in c.get("metadata", {}) for c in nb["cells"]):
            continue  # student exercise stubs are checked by tests/test_exercises.py
        yield pytest.param(path, nb, id=path.name)


def lessons():
    return list(_lessons())


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_are_lessons():
    assert len(list(lessons())) >= 2


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_executed_in_order_from_a_fresh_kernel(path, nb):
    counts = [c["execution_count"] for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: run `make notebooks`"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_no_error_outputs(path, nb):
    for i, cell in enumerate(code_cells(nb)):
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name} code cell {i}: {out.get('ename')}"
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), (
                f"{path.name} code cell {i} wrote to stderr: {''.join(out['text'])[:200]}"
            )


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_kernel_is_python3(path, nb):
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_smaller_than_one_megabyte(path, nb):
    assert path.stat().st_size < 1_000_000, f"{path.name} is {path.stat().st_size} bytes"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_every_displayed_widget_has_stored_state(path, nb):
    """A widget view whose model is missing from the saved state renders as an
    error on nbviewer: the state is stale (saved from another run)."""
    state = nb["metadata"].get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for cell in code_cells(nb):
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view:
                model = view["model_id"]
                assert model in state, f"{path.name}: widget {model} has no saved state"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_first_code_cell_imports_and_seeds(path, nb):
    first = "".join(code_cells(nb)[0]["source"])
    assert "import" in first
    assert "seed" in first, f"{path.name}: the setup cell must seed the random generators"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_no_lesson_imports_another(path, nb):
    for cell in code_cells(nb):
        src = "".join(cell["source"])
        assert "%run" not in src and "import_notebook" not in src, path.name
