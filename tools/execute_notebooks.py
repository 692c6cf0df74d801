"""Execute lesson notebooks in place, in a fresh kernel each, deterministically.

    python tools/execute_notebooks.py [NOTEBOOK ...]   (default: notebooks/*.ipynb)

Outputs, execution counts 1..n and widget state are stored, so what is
committed is exactly what strict nbval compares. Graded exercise notebooks
(cells with nbgrader metadata) are student stubs and are left alone.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slides  # noqa: E402  (tools/slides.py: the lessons' slide metadata, by rule)

ROOT = Path(__file__).resolve().parents[1]
LESSON = re.compile(r"^\d\d_.*\.ipynb$")


def is_graded(nb) -> bool:
    return any("nbgrader" in cell.get("metadata", {}) for cell in nb.cells)


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def merge_streams(nb):
    """Join consecutive stdout (or stderr) outputs of a cell into one: the kernel
    may flush one print as several messages, which would make the file differ
    from run to run (nbval joins them the same way before comparing)."""
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if (out.output_type == "stream" and last is not None
                    and last.output_type == "stream" and last.name == out.name):
                last.text += out.text
            else:
                merged.append(out)
        if cell.cell_type == "code":
            cell.outputs = merged
    return nb


def stable_widget_ids(nb, name: str):
    """Rename the widget models' random ids to ids derived from the notebook's
    name and each model's order, so re-executing an unchanged lesson leaves
    the file unchanged. Ids are 32 hex digits; they appear as state keys, in
    outputs' widget views and as "IPY_MODEL_<id>" references inside the state."""
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    if not state:
        return nb
    text = json.dumps(nb)
    for index, old in enumerate(state):
        text = text.replace(old, uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{index}").hex)
    return nbformat.from_dict(json.loads(text))


def collapse_check_cells(nb):
    """Cells tagged ``check`` only pin the prose's numbers: JupyterLab shows them
    collapsed (``metadata.jupyter.source_hidden``), so a learner reads prose, code
    and pictures; strict nbval still runs them (docs/AUTHORING.md)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "check" in cell.get("metadata", {}).get("tags", []):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    return nb


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    if is_graded(nb):
        print(f"skip   {shown(path)} (graded exercise)")
        return 0.0
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=False,
                            store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    seconds = time.perf_counter() - start
    nb = collapse_check_cells(stable_widget_ids(merge_streams(nb), path.name))
    nbformat.write(slides.apply(nb) if LESSON.match(path.name) else nb, path)  # slide metadata
    print(f"ran    {shown(path)} in {seconds:.1f} s")
    return seconds


def main(argv: list[str]) -> int:
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    paths = [Path(a).resolve() for a in argv] or lessons
    total = sum(execute(p) for p in paths)
    print(f"total  {total:.1f} s for {len(paths)} notebook(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
