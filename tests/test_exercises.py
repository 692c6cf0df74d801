"""The exercise sets: sources, committed student notebooks, and what their graded cells do.

Every graded cell fails on the untouched student stub ("not attempted yet") and passes
on the instructor's solution; both notebooks are run here with nbclient, because
`nbgrader validate` exits 0 even when validation fails. A committed student notebook
that differs from what the current source generates fails a test (run
`make course-release`). Strict nbval over notebooks/ never runs the stubs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "course" / "source").glob("ex[0-9][0-9]_*/ex[0-9][0-9]_*.ipynb"))
SETS = [p.stem for p in SOURCES]
STUDENT = ROOT / "notebooks" / "exercises"

sys.path.insert(0, str(ROOT / "tools"))
import generate_exercises  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_cells(nb) -> list:
    return [c for c in nb["cells"] if nbgrader_meta(c).get("grade")]


@cache
def executed(path: Path):
    """The notebook after one run in a fresh kernel, errors recorded, not raised."""
    nb = nbformat.read(path, 4)
    nbclient.NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o["output_type"] == "error"]


def test_sets_01_to_05_exist():
    assert SETS[:5] == ["ex01_weighted_sum", "ex02_scores_and_softmax", "ex03_scaling",
                        "ex04_masks", "ex05_softmax_backward"]


@pytest.mark.parametrize("name", SETS)
def test_every_graded_cell_fails_on_the_untouched_stub(name):
    nb = executed(STUDENT / f"{name}.ipynb")
    for cell in grade_cells(nb):
        errs = errors(cell)
        assert errs, f"{nbgrader_meta(cell)['grade_id']} passes on the stub"
        assert "not attempted yet" in errs[0]["evalue"], (nbgrader_meta(cell)["grade_id"],
                                                          errs[0]["evalue"])


@pytest.mark.parametrize("name", SETS)
def test_every_graded_cell_passes_on_the_solution(name):
    nb = executed(ROOT / "course" / "source" / name / f"{name}.ipynb")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            errs = errors(cell)
            grade_id = nbgrader_meta(cell).get("grade_id")
            assert not errs, f"cell {i} ({grade_id}): {errs[0]['evalue']}"
    assert grade_cells(nb)


@pytest.mark.parametrize("name", SETS)
def test_a_passing_graded_cell_prints_one_correct_line_per_check(name):
    nb = executed(ROOT / "course" / "source" / name / f"{name}.ipynb")
    for cell in grade_cells(nb):
        text = "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")
        assert text and all("correct" in line for line in text.splitlines()), text


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """Every student notebook as the current sources generate it (nbgrader, no gradebook)."""
    return generate_exercises.generate_into(tmp_path_factory.mktemp("generated"))


def test_committed_student_notebooks_match_the_sources(fresh):
    assert generate_exercises.compare(fresh) == []


def test_a_stale_student_notebook_is_detected(tmp_path, fresh):
    exercises = tmp_path / "exercises"
    exercises.mkdir()
    for name in SETS:
        (exercises / f"{name}.ipynb").write_text((STUDENT / f"{name}.ipynb").read_text())
    nb = json.loads((exercises / f"{SETS[0]}.ipynb").read_text())
    nb["cells"][2]["source"] = ["an edited task text"]
    (exercises / f"{SETS[0]}.ipynb").write_text(json.dumps(nb))
    assert generate_exercises.compare(fresh, exercises) == [
        f"{SETS[0]}.ipynb cell 2: source differs"]


def hidden_blocks(nb) -> list[str]:
    blocks = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        blocks += re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", src, re.S)
    return blocks


@pytest.mark.parametrize("name", SETS)
def test_every_graded_cell_of_the_source_has_hidden_tests(name):
    nb = json.loads((ROOT / "course" / "source" / name / f"{name}.ipynb").read_text())
    for cell in grade_cells(nb):
        assert len(hidden_blocks({"cells": [cell]})) == 1, nbgrader_meta(cell)["grade_id"]


@pytest.mark.parametrize("name", SETS)
def test_student_notebooks_hold_no_hidden_tests_and_no_solutions(name):
    nb = json.loads((STUDENT / f"{name}.ipynb").read_text())
    source = nbformat.read(ROOT / "course" / "source" / name / f"{name}.ipynb", 4)
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "HIDDEN TESTS" not in text and "_fresh" not in text
    assert "BEGIN SOLUTION" not in text
    for block in hidden_blocks(source):
        for line in block.splitlines():
            if line.strip().startswith("_"):
                assert line.strip() not in text, line


@pytest.mark.parametrize("name", SETS)
def test_each_set_has_two_to_four_tasks_and_one_check_per_graded_cell(name):
    nb = json.loads((STUDENT / f"{name}.ipynb").read_text())
    tasks = [c for c in nb["cells"] if c["cell_type"] == "markdown"
             and "".join(c["source"]).startswith("## Task")]
    assert 2 <= len(tasks) <= 4
    for cell in grade_cells(nb):
        calls = re.findall(r"^checks\.check_\w+\(", "".join(cell["source"]), re.M)
        assert len(calls) == 1, "".join(cell["source"])
        assert nbgrader_meta(cell)["points"] >= 1


@pytest.mark.parametrize("name", SETS)
def test_graded_and_read_only_cells_are_locked(name):
    nb = json.loads((STUDENT / f"{name}.ipynb").read_text())
    for cell in nb["cells"]:
        meta = nbgrader_meta(cell)
        assert meta, "every cell carries nbgrader metadata"
        if not meta.get("solution"):
            assert meta["locked"] and cell["metadata"].get("editable") is False


@pytest.mark.parametrize("name", SETS)
def test_the_set_links_back_to_its_lesson(name):
    nb = json.loads((STUDENT / f"{name}.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    links = re.findall(r"\]\(\.\./(\d\d_\w+\.ipynb)\)", text)
    assert links and links[0][:2] == name[2:4]
    for link in links:
        assert (ROOT / "notebooks" / link).exists(), link


def test_strict_nbval_over_notebooks_does_not_collect_the_exercises(tmp_path):
    """As `make test` runs it (`pytest notebooks --nbval`), on a copy holding one lesson and
    the exercises folder, so that other notebooks in progress cannot disturb the test."""
    import shutil

    notebooks = tmp_path / "notebooks"
    shutil.copytree(STUDENT, notebooks / "exercises")
    shutil.copy(ROOT / "notebooks" / "01_weighted_sum.ipynb", notebooks)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "notebooks", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "notebooks/01_weighted_sum.ipynb::Cell 0" in proc.stdout  # the lesson is collected
    assert "exercises" not in proc.stdout


# -- the hidden tests alone reject every known mistake ------------------------------------------

VISIBLE = re.compile(r'^checks\.(check_\w+)\((?:"([\w.]+)", )?(\w+)(?:, behaviour="(\w+)")?\)$',
                     re.M)


def graded_cell_table():
    """(set, grade_id, check name, prediction key, answer name, behaviour, cell source)."""
    rows = []
    for path in SOURCES:
        for cell in grade_cells(json.loads(path.read_text())):
            source = "".join(cell["source"])
            check, key, name, behaviour = VISIBLE.search(source).groups()
            rows.append((path.stem, nbgrader_meta(cell)["grade_id"], check, key, name,
                         behaviour, source))
    return rows


class NoOpChecks:
    """What an answer cell that replaced every check with a no-op leaves behind."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def run_graded_cell_with_no_op_checks(source, name, answer, monkeypatch):
    import importlib

    import numpy as np

    import mha

    monkeypatch.setattr(importlib, "reload", lambda module: module)
    namespace = {"np": np, "mha": mha, "checks": NoOpChecks(), name: answer}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mistakes overflow on purpose
        exec(compile(source, "<graded cell>", "exec"), namespace)


def rejecting_cells(check_name, answer, behaviour_of_mistake):
    """The graded cells whose own check rejects ``answer``."""
    from mha import checks

    for row in graded_cell_table():
        _, grade_id, check, key, name, behaviour, source = row
        if check != check_name:
            continue
        try:
            getattr(checks, check)(answer, behaviour=behaviour)
        except AssertionError:
            yield grade_id, name, source


def passes_with_no_op_checks(source, name, answer, monkeypatch) -> bool:
    try:
        run_graded_cell_with_no_op_checks(source, name, answer, monkeypatch)
    except AssertionError as err:
        assert "a hidden test failed" in str(err), err
        return False
    return True


def test_every_known_mistake_is_rejected_by_the_hidden_tests_alone(monkeypatch, capsys):
    """An answer cell that disables the checks cannot turn a known mistake into points."""
    from test_checks import MISTAKES

    checked, gaps = 0, []
    for mistake, (check, answer, _, _) in sorted(MISTAKES.items()):
        for grade_id, name, source in rejecting_cells(check.__name__, answer, None):
            if passes_with_no_op_checks(source, name, answer, monkeypatch):
                gaps.append(f"{grade_id}: {mistake}")
            checked += 1
    assert not gaps, gaps
    assert checked >= 30


def test_every_known_wrong_prediction_is_rejected_by_the_hidden_tests_alone(monkeypatch):
    from mha import checks

    checked, gaps = 0, []
    for _, grade_id, check, key, name, _, source in graded_cell_table():
        if check != "check_answer":
            continue
        for value in [value for value, _ in checks.PREDICTIONS[key].known_wrong] + [None]:
            if passes_with_no_op_checks(source, name, value, monkeypatch):
                gaps.append(f"{grade_id}: {value!r}")
            checked += 1
    assert not gaps, gaps
    assert checked >= 15
