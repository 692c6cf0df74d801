"""Each lesson's your-turn cells: the stub says "Not yet", the worked solution "Correct".

The lesson runs in a fresh kernel up to the your-turn cell; then the stub as
committed runs, then the solution from the ``<details>`` cell after it, in the
same kernel. The verdict lines come from mha.checks.your_turn.
"""

from __future__ import annotations

import nbformat
import pytest
from course_shape import LESSONS, load, your_turn_pairs
from nbclient import NotebookClient

CASES = [pytest.param(p, id=p.name) for p in LESSONS if your_turn_pairs(load(p))]


def _printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.parametrize("path", CASES)
def test_stub_says_not_yet_and_solution_says_correct(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    pairs = your_turn_pairs(load(path))
    last = max(i for i, _, _ in pairs)
    cells = [nbformat.v4.new_code_cell(c.source) if c.cell_type == "code" else c
             for c in nb.cells[: last + 1]]
    probes = []
    for index, _stub, solution in pairs:
        probes.append((index, len(cells)))
        cells.append(nbformat.v4.new_code_cell(solution))
    nb.cells = cells
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for index, solution_at in probes:
        stub_out, solution_out = _printed(nb.cells[index]), _printed(nb.cells[solution_at])
        assert stub_out.startswith("Not yet:"), (
            f"{path.name} cell {index}: the stub printed {stub_out!r}")
        assert "Correct:" in solution_out, (
            f"{path.name} cell {index}: the solution printed {solution_out!r}")
