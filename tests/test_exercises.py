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

from mha._wrap import wrap_for_display

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
        # what JupyterLab shows starts as a lesson's verdict does; the error keeps its class
        assert errs[0]["ename"] in ("NotAttempted", "NotImplementedError"), errs[0]["ename"]
        assert shown(errs[0]).startswith("Not yet: "), shown(errs[0])
        assert "NotAttempted" not in shown(errs[0]), shown(errs[0])


# the lessons' verdict word ("Not yet: "), as every check cell says it too; it said
# "Not attempted yet: ..." while the check cell below said "NotAttempted: ..."
STUB_LINE = "Not yet: this cell still has the line `raise NotImplementedError()`"


def shown(output) -> str:
    """What JupyterLab shows of an error output: its traceback lines (ANSI colours removed)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output["traceback"]))


def test_an_untouched_prediction_shows_one_line_that_says_what_to_do_not_a_traceback():
    """The walkthrough: running an unanswered prediction showed a raw NotImplementedError
    traceback in JupyterLab, while its test cell said "not attempted yet" in one line. Once
    `from mha import checks` ran (each set's setup cell), the stub's error output shows one
    line; it is still an error named NotImplementedError (raises-exception, nbgrader)."""
    stubs = 0
    for name in SETS:
        for cell in executed(STUDENT / f"{name}.ipynb").cells:
            if cell.cell_type != "code" or not nbgrader_meta(cell).get("solution") or \
                    "raise NotImplementedError()" not in cell.source.splitlines():
                continue  # not a stub at the cell's top level (a prediction): runs quietly
            stubs += 1
            (err,) = errors(cell)
            assert err["ename"] == "NotImplementedError", err["ename"]
            text = shown(err)
            assert " ".join(text.split()).startswith(STUB_LINE), (name, text)
            assert "Traceback" not in text and "File " not in text, (name, text)
            # one sentence, wrapped between words at mha._wrap.WIDTH columns
            assert text == wrap_for_display(text), text
            assert len(text.splitlines()) <= 3, text
    assert stubs >= 10, stubs  # 23 when this test was written


def test_a_stub_called_from_a_cell_is_one_line_and_other_not_implemented_errors_keep_theirs():
    cells = ["from mha import checks",
             "def read_out(w, v):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
             "read_out(1, 2)",
             "raise NotImplementedError('not for sparse tensors')",  # a message: not a stub
             "import numbers\nnumbers.Complex.__abs__(None)",  # bare, raised in a module
             "def f():\n    x = 1; raise NotImplementedError()\nf()"]  # not the stub's line
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60).execute()
    called, message, module, inline = (errors(c)[0] for c in nb.cells[2:])
    assert " ".join(shown(called).split()) == (
        "Not yet: read_out still has the line `raise NotImplementedError()`; "
        "replace it with your code, run its cell, then run this cell again.")
    for err in (message, module, inline):
        assert err["ename"] == "NotImplementedError"
        assert "Not yet" not in shown(err) and len(err["traceback"]) > 1, shown(err)


def test_a_wrong_answers_check_cell_shows_not_yet_and_the_mistake_not_the_class_name():
    """The walkthrough: "CheckFailed: masked_attention: mask applied after softmax: ..."
    read like a code name next to the lessons' "Not yet: ..."."""
    cells = ["from mha import checks\nimport numpy as np",
             "def causal(t):\n    return np.triu(np.ones((t, t), bool))",  # diagonal too
             "checks.check_causal_mask(causal)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60).execute()
    (err,) = errors(nb.cells[2])
    assert err["ename"] == "CheckFailed" and err["evalue"].startswith("causal: "), err
    text = shown(err)
    assert " ".join(text.split()) == "Not yet: " + " ".join(err["evalue"].split()), text
    assert text == wrap_for_display(text) and "CheckFailed" not in text, text


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
        assert len(text.splitlines()) == 1, text
        echoed = [o for o in cell.outputs if o["output_type"] == "execute_result"]
        assert not echoed, echoed  # the check's returned line is not shown a second time


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


# -- grading judges records, whatever the kernel's checks became -----------------------------

HIDDEN = re.compile(
    r'_grading\.(record|record_answer)\("([\w.]+)", (\w+)(?:, behaviour="(\w+)")?\)')
VISIBLE = re.compile(r'^checks\.(check_\w+)\((?:"([\w.]+)", )?(\w+)(?:, behaviour="(\w+)")?\)$',
                     re.M)


def graded_cell_table():
    """(set, grade_id, check, record kind, task, behaviour) of every graded cell."""
    rows = []
    for path in SOURCES:
        for cell in grade_cells(json.loads(path.read_text())):
            source = "".join(cell["source"])
            kind, task, _, behaviour = HIDDEN.search(source).groups()
            check = VISIBLE.search(source).group(1)
            rows.append((path.stem, nbgrader_meta(cell)["grade_id"], check, kind, task, behaviour))
    return rows


def test_every_graded_cell_records_the_task_its_visible_check_checks():
    from mha.checks import grading

    for _, grade_id, check, kind, task, behaviour in graded_cell_table():
        if kind == "record_answer":
            assert check == "check_answer", grade_id
        else:
            assert task in grading.tasks(), grade_id
            assert grading.task_for(task, behaviour).cases_for(behaviour, include_hidden=True)


def recorded_verdict(kind, task, behaviour, answer, monkeypatch) -> str:
    """What the grader says about ``answer``, recorded as the hidden line records it, after
    an answer cell replaced every check with a no-op (the grader does not use them)."""
    from mha import checks
    from mha.checks import grading

    records = []
    monkeypatch.setattr(grading, "_emit", lambda r: records.append(json.loads(json.dumps(r))))
    for name in dir(checks):
        if name.startswith("check"):
            monkeypatch.setattr(checks, name, lambda *args, **kwargs: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "record_answer":
            grading.record_answer(task, answer)
        else:
            grading.record(task, answer, behaviour)
    monkeypatch.undo()
    try:
        if kind == "record_answer":
            return "passed: " + grading.judge_answer(task, records)
        return "passed: " + grading.judge_records(task, behaviour, records)
    except AssertionError as err:
        return str(err)


def test_every_known_mistake_fails_its_graded_cells_with_its_name(monkeypatch, capsys):
    """The grader's verdict on recorded outputs names each mistake, as the visible check
    does, on every graded cell whose visible check rejects it."""
    from test_checks import MISTAKES

    from mha import checks

    checked, gaps = 0, []
    for mistake, (check, answer, words, _) in sorted(MISTAKES.items()):
        for _, grade_id, name, kind, task, behaviour in graded_cell_table():
            if name != check.__name__:
                continue
            try:
                getattr(checks, name)(answer, behaviour=behaviour)
                continue  # this cell's behaviour does not show the mistake
            except AssertionError as err:
                visible = str(err)
            verdict = recorded_verdict(kind, task, behaviour, answer, monkeypatch)
            expected = words if words in visible else visible.splitlines()[0]
            if verdict.startswith("passed") or expected not in verdict:
                gaps.append(f"{grade_id}: {mistake}: {verdict}")
            checked += 1
    assert not gaps, gaps
    assert checked >= 30


def test_every_known_wrong_prediction_fails_its_graded_cell(monkeypatch):
    from mha import checks

    checked, gaps = 0, []
    for _, grade_id, _, kind, key, _ in graded_cell_table():
        if kind != "record_answer":
            continue
        for value in [value for value, _ in checks.PREDICTIONS[key].known_wrong] + [None]:
            verdict = recorded_verdict(kind, key, None, value, monkeypatch)
            if verdict.startswith("passed"):
                gaps.append(f"{grade_id}: {value!r}")
            checked += 1
    assert not gaps, gaps
    assert checked >= 15
