"""Hygiene of every committed lesson notebook.

Strict nbval (run by `make test` over notebooks/) proves each stored text
output is what the code prints. These tests prove the stored notebook is the
result of one clean top-to-bottom run a learner can trust.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# A decimal number in prose; integers are too common to check.
DECIMAL = re.compile(
    r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?(?![\w.])"  # 0.881, -0.125, 1.1e-7
    r"|(?<![\w.])\d+(?:\.\d+)?e-?\d+(?!\w)"  # 1e-5
)


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
    # tools/launch.py's install cell (tag launch-install) comes first; the set-up cell is next
    cells = [c for c in code_cells(nb) if "launch-install" not in c["metadata"].get("tags", [])]
    first = "".join(cells[0]["source"])
    assert "import" in first
    assert "seed" in first, f"{path.name}: the setup cell must seed the random generators"


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_no_lesson_imports_another(path, nb):
    for cell in code_cells(nb):
        src = "".join(cell["source"])
        assert "%run" not in src and "import_notebook" not in src, path.name


def _is_backed(number: str, computed_text: str, computed_values: list[float]) -> bool:
    """A prose number is backed when it stands in the computed text as a whole
    token ("1.8" in "1.8e+308", not "0.75" in "0.7511"), or equals a computed
    number rounded to the prose's precision ("0.804" for 0.80399)."""
    if re.search(r"(?<![\d.])" + re.escape(number) + r"(?!\d)", computed_text):
        return True
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    tolerance = 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))
    value = float(number)
    return any(abs(x - value) <= tolerance * (1 + 1e-9) for x in computed_values)


@pytest.mark.parametrize(("path", "nb"), lessons())
def test_every_decimal_in_the_prose_is_computed_by_a_cell(path, nb):
    """Each decimal number the text states is computed by a cell of the same notebook."""
    computed = "\n".join(
        "".join(c["source"]) + "".join(
            "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
            for o in c.get("outputs", []))
        for c in code_cells(nb))
    values = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", computed)]
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    missing = sorted({n for n in DECIMAL.findall(prose) if not _is_backed(n, computed, values)})
    assert not missing, f"{path.name}: the prose states {missing} but no cell computes them"


@pytest.mark.parametrize(("number", "text"), [
    ("0.75", "weights [0.75 0.25]"),
    ("1.8", "largest float64: 1.8e+308"),
    ("0.804", "0.80399"),
    ("1.1e-7", "1.1254e-07"),
])
def test_a_prose_number_is_backed_by_the_same_number_computed(number, text):
    values = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
    assert _is_backed(number, text, values)


@pytest.mark.parametrize(("number", "text"), [
    ("0.75", "0.7561"),  # starts the same way, rounds to 0.76
    ("0.1", "0.16 0.2"),
    ("0.881", "0.879"),
    ("1.1e-7", "1.1e-06"),
])
def test_a_prose_number_is_not_backed_by_a_different_number(number, text):
    values = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
    assert not _is_backed(number, text, values)


def _run_each_cell_twice(path: Path, nb: dict) -> None:
    """Execute ``nb`` in a fresh kernel, each code cell twice before the next,
    as a learner who presses Shift+Enter on a cell again; raise on the first error."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.reads(json.dumps(nb), as_version=4)  # sources joined into strings
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            for run in ("first", "second"):
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as err:
                    first_line = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                    pytest.fail(
                        f"{path.name} cell {index} ({first_line!r}) fails on its {run} run "
                        f"in a row: {err.ename}: {err.evalue}", pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize(("path", "nb"), lessons())
def test_every_cell_survives_being_run_twice_in_a_row(path, nb):
    """A learner re-runs a cell before moving on: no cell may depend on running once
    (a shared random stream advanced twice, a variable mutated in place)."""
    _run_each_cell_twice(path, nb)


def test_the_run_twice_check_names_the_notebook_and_the_cell_that_breaks(tmp_path):
    """The check can fail: a cell that consumes what it finds breaks on its second run."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# a lesson"),
        nbformat.v4.new_code_cell("items = [1, 2]"),
        nbformat.v4.new_code_cell("first = items.pop(0)\nassert first == 1"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "99_pops.ipynb"
    with pytest.raises(pytest.fail.Exception, match=r"99_pops\.ipynb cell 2 .*second run"):
        _run_each_cell_twice(path, json.loads(nbformat.writes(nb)))
