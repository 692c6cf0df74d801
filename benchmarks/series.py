"""The series' cost: each notebook's fresh-kernel wall time and its kernel's peak memory.

    .venv/bin/python benchmarks/series.py [NOTEBOOK ...]

Each notebook runs in a new kernel, top to bottom, as ``tools/execute_notebooks.py``
runs it, but nothing is written back. The wall time starts before the kernel does
and stops when the last cell's reply arrives (kernel start included, shutdown not).
The kernel's peak memory is its resident-set high-water mark, ``VmHWM`` in
``/proc/<pid>/status`` (Linux), read after each cell; elsewhere psutil samples the
kernel's RSS every 20 ms (a lower bound).

Exercise sets: the stubs in ``notebooks/exercises/`` raise NotImplementedError by
design, so their solution versions in ``course/source/<name>/<name>.ipynb`` are
timed, every answer and check cell run: what a learner's finished notebook costs.
A stub with no source version is timed as opened, errors allowed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
GIB = 2.0**30


def budget_seconds(path: Path) -> float:
    """20 s per notebook; 30 s for lesson 09 and its exercise set (issue 11)."""
    return 30.0 if path.name.startswith(("09_", "ex09_")) else 20.0


def series_notebooks(root: Path = ROOT) -> list[tuple[Path, str]]:
    """``(path to run, what it is)`` for every lesson and every exercise set, in order."""
    out = [(p, "lesson") for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    for stub in sorted((root / "notebooks" / "exercises").glob("ex[0-9][0-9]_*.ipynb")):
        solution = root / "course" / "source" / stub.stem / stub.name
        out.append((solution, "exercise (solution)") if solution.exists()
                   else (stub, "exercise (stub)"))
    return out


def _vm_hwm_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class _PeakWatcher:
    """The kernel process's peak resident memory: VmHWM, or psutil samples."""

    def __init__(self):
        self.pid, self.peak, self._stop = None, 0, threading.Event()
        self._thread = None

    def attach(self, pid: int) -> None:
        self.pid = pid
        if _vm_hwm_bytes(pid) is None:  # not Linux: sample
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        import psutil

        process = psutil.Process(self.pid)
        while not self._stop.wait(0.02):
            try:
                self.peak = max(self.peak, process.memory_info().rss)
            except psutil.Error:
                return

    def read(self) -> None:
        hwm = _vm_hwm_bytes(self.pid) if self.pid is not None else None
        if hwm is not None:
            self.peak = max(self.peak, hwm)

    def stop(self) -> None:
        self._stop.set()


def run_notebook(path: Path, allow_errors: bool = False) -> dict:
    """Fresh-kernel wall time (kernel start included) and the kernel's peak memory."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    watcher = _PeakWatcher()
    done = {}

    def on_cell_executed(**kwargs):
        if watcher.pid is None:
            watcher.attach(client.km.provisioner.pid)
        watcher.read()
        done["at"] = time.perf_counter()

    start = time.perf_counter()
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                            on_cell_executed=on_cell_executed,
                            resources={"metadata": {"path": str(path.parent)}})
    error = None
    try:
        client.execute()
    except Exception as err:  # a failing notebook is reported, not fatal to the run
        error = f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:200]}"
    finally:
        watcher.stop()
    return {"seconds": done.get("at", time.perf_counter()) - start,
            "peak_bytes": watcher.peak or None, "error": error}


def run(notebooks=None, progress=print) -> dict:
    """Every notebook of the series (or ``notebooks``: paths), one fresh kernel each."""
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    items = series_notebooks() if notebooks is None else [(Path(p), "given") for p in notebooks]
    rows = []
    for path, kind in items:
        result = run_notebook(path, allow_errors=kind == "exercise (stub)")
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        rows.append({"notebook": name, "kind": kind, "budget_seconds": budget_seconds(path),
                     **result})
        peak = "?" if result["peak_bytes"] is None else f"{result['peak_bytes'] / 2**20:.0f} MiB"
        progress(f"{name:58s} {result['seconds']:6.1f} s  {peak:>9}"
                 + (f"  FAILED {result['error']}" if result["error"] else ""))
    return {"notebooks": rows, "total_seconds": sum(r["seconds"] for r in rows),
            "lessons_seconds": sum(r["seconds"] for r in rows if r["kind"] == "lesson")}


if __name__ == "__main__":
    out = run(sys.argv[1:] or None, progress=lambda line: print(line, flush=True))
    print(f"total {out['total_seconds']:.1f} s")
