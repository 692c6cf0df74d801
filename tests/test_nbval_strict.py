"""Strict nbval, as `make test` runs it over notebooks/, can fail.

Each test writes a one-cell notebook with a chosen stored output into a
temporary folder and runs `python -m pytest --nbval` on it in a subprocess,
the way `make test` does. A stored output that differs from what the code
prints must fail the run; the right stored output must pass; and
tests/nbval_sanitize.cfg must make memory addresses compare equal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

SANITIZE = Path(__file__).resolve().parent / "nbval_sanitize.cfg"

pytestmark = pytest.mark.timeout(120)


def notebook_with(tmp_path: Path, source: str, output) -> Path:
    """A notebook whose single code cell ran once and stored ``output``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    cell.outputs = [output]
    nb.cells = [cell]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


def stdout(text: str):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def result(text: str):
    return nbformat.v4.new_output("execute_result", data={"text/plain": text},
                                  execution_count=1)


def run_nbval(path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q",
         "--nbval-cell-timeout=60", *extra, path.name],
        cwd=path.parent, env=env, capture_output=True, text=True, timeout=110,
    )


def test_stored_stdout_that_differs_from_the_printed_one_fails(tmp_path):
    proc = run_nbval(notebook_with(tmp_path, "print(1 + 1)", stdout("3\n")))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout


def test_stored_stdout_equal_to_the_printed_one_passes(tmp_path):
    proc = run_nbval(notebook_with(tmp_path, "print(1 + 1)", stdout("2\n")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_stored_text_plain_result_that_differs_fails(tmp_path):
    proc = run_nbval(notebook_with(tmp_path, "round(2 / 3, 4)", result("0.6666")))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout


def test_memory_address_fails_without_the_sanitize_file(tmp_path):
    nb = notebook_with(tmp_path, "print(object())", stdout("<object object at 0x7f0000000000>\n"))
    proc = run_nbval(nb)
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_sanitize_file_makes_memory_addresses_compare_equal(tmp_path):
    nb = notebook_with(tmp_path, "print(object())", stdout("<object object at 0x7f0000000000>\n"))
    proc = run_nbval(nb, f"--nbval-sanitize-with={SANITIZE}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
