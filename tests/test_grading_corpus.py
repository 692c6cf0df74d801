"""A corpus of submissions (tests/grading_corpus.py) graded through the real flow.

`make course-release`, `course-collect`, `course-autograde`, `course-feedback` and
`course-export` on a copy of course/: each submission gets the points of the test cells it
should pass, each failing cell's feedback says what its corpus entry expects (the named
mistake, the rule, the error, the time limit), hostile ones are flagged in the export's
needs_review column (and the others are not), no feedback shows a hidden line, and the
autograde log has no "checksum ... has changed" warning (no corpus entry edits a locked
cell). The autograde time is printed (-s).
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from grading_corpus import CORPUS
from test_classroom import VENV, hidden_lines, solution_code

ROOT = Path(__file__).resolve().parents[1]
CELL_TIMEOUT = 30  # `import torch` in an answer cell took over 8 s on a loaded 2-core machine


def make(target: str, course: Path, **variables) -> subprocess.CompletedProcess:
    """``make TARGET`` against the temporary course (a 50-submission autograde takes long)."""
    args = ["make", "--no-print-directory", "-o", f"{VENV}/.installed", target,
            f"VENV={VENV}", f"COURSE={course}", *[f"{k}={v}" for k, v in variables.items()]]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1700)
    assert proc.returncode == 0, f"make {target}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def points(course: Path, assignment: str) -> dict:
    nb = json.loads((course / "source" / assignment / f"{assignment}.ipynb").read_text())
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"]
            for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")}


def build(course: Path, exercises: Path, sub) -> nbformat.NotebookNode:
    nb = nbformat.read(exercises / f"{sub.assignment}.ipynb", 4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            code = sub.answers.get(meta["grade_id"])
            cell.source = (code.strip("\n") if code is not None
                           else solution_code(course, sub.assignment, meta["grade_id"]))
    if sub.edit is not None:
        sub.edit(nb)
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade(tmp_path_factory.mktemp("corpus"), CORPUS)


def grade(tmp: Path, corpus) -> dict:
    """Release, collect ``corpus``, autograde, feedback, export; the course and the CSV rows."""
    course, exercises, submitted = tmp / "course", tmp / "exercises", tmp / "submissions"
    shutil.copytree(ROOT / "course" / "source", course / "source")
    for module in (ROOT / "course").glob("*.py"):  # the config and what it imports
        shutil.copy(module, course / module.name)
    with open(course / "nbgrader_config.py", "a") as f:
        f.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
    make("course-release", course, EXERCISES=exercises)
    for sub in corpus:
        folder = submitted / sub.student / sub.assignment
        folder.mkdir(parents=True)
        text = nbformat.writes(build(course, exercises, sub))
        (folder / f"{sub.assignment}.ipynb").write_text(text[:sub.corrupt or None])
    make("course-collect", course, SUBMISSIONS=submitted)
    start = time.perf_counter()
    log = make("course-autograde", course)
    seconds = time.perf_counter() - start
    make("course-feedback", course)
    make("course-export", course, GRADES_CSV=tmp / "grades.csv")
    with open(tmp / "grades.csv", newline="") as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    print(f"\nautograde: {len(corpus)} submissions in {seconds:.1f} s")
    return {"course": course, "rows": rows, "log": log.stdout + log.stderr}


IDS = [f"{s.student}-{s.assignment[:4]}" for s in CORPUS]


def outputs_of(course: Path, sub) -> dict:
    path = course / "autograded" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
    nb = nbformat.read(path, 4)
    texts = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            texts[meta["grade_id"]] = "".join(
                o.get("text", "") + o.get("evalue", "") for o in cell.get("outputs", []))
    return texts


@pytest.mark.parametrize("sub", CORPUS, ids=IDS)
def test_each_submission_gets_the_points_it_earns(graded, sub):
    row = graded["rows"][sub.student, sub.assignment]
    worth = points(graded["course"], sub.assignment)
    earned = sum(p for cell, p in worth.items() if sub.expect.get(cell, "pass") == "pass")
    assert float(row["score"]) == earned, outputs_of(graded["course"], sub)


@pytest.mark.parametrize("sub", CORPUS, ids=IDS)
def test_each_failed_cell_says_what_failed(graded, sub):
    texts = outputs_of(graded["course"], sub)
    for cell, text in texts.items():
        want = sub.expect.get(cell, "pass")
        if want == "pass":
            assert "correct" in text, (cell, text)
        else:
            assert want in text, (cell, text)
            assert "a hidden test failed" not in text
            assert "hidden" not in text.replace("only grading runs", ""), (cell, text)


@pytest.mark.parametrize("sub", CORPUS, ids=IDS)
def test_hostile_submissions_and_only_they_are_flagged_for_review(graded, sub):
    reason = graded["rows"][sub.student, sub.assignment]["needs_review"]
    assert bool(reason) == sub.flagged, reason


@pytest.mark.parametrize("sub", [s for s in CORPUS if s.reasons],
                         ids=[f"{s.student}-{s.assignment[:4]}" for s in CORPUS if s.reasons])
def test_each_flag_names_its_reason(graded, sub):
    reason = graded["rows"][sub.student, sub.assignment]["needs_review"]
    missing = [r for r in sub.reasons if r not in reason]
    assert not missing, reason


def by_name(student: str):
    return next(s for s in CORPUS if s.student == student)


def test_a_cell_nested_too_deep_to_parse_is_flagged_and_the_other_cells_graded(graded):
    for student in ("nested_too_deep", "nested_in_answer"):
        sub = by_name(student)
        assert "nested too deep" in graded["rows"][student, sub.assignment]["needs_review"]
        test_each_submission_gets_the_points_it_earns(graded, sub)


def test_a_cell_claiming_an_unknown_grade_id_is_flagged_and_the_known_cells_graded(graded):
    for student in ("unknown_grade_cell", "unknown_solution_cell", "renames_test_cell"):
        sub = by_name(student)
        assert "which this set does not have" in graded["rows"][student, sub.assignment][
            "needs_review"]
        test_each_submission_gets_the_points_it_earns(graded, sub)


def test_a_deleted_test_cell_is_added_back_and_graded_as_the_answer_earns(graded):
    for student, cell in (("deletes_test_cell", "test_predict_divided"),
                          ("deletes_failing_test", "test_read_out_one_query"),
                          ("renames_test_cell", "test_read_out_many_queries")):
        sub = by_name(student)
        texts = outputs_of(graded["course"], sub)
        assert cell in texts, f"{student}: {cell} was not added back"
        want = sub.expect.get(cell, "correct")
        assert want in texts[cell], texts[cell]
        assert "added it back" in graded["rows"][student, sub.assignment]["needs_review"]


def test_a_right_bfloat16_or_float16_torch_answer_gets_its_points(graded):
    for student in ("bf16_masks", "bf16_grads"):
        sub = by_name(student)
        row = graded["rows"][student, sub.assignment]
        assert float(row["score"]) == sum(points(graded["course"], sub.assignment).values())


def test_a_wrong_bfloat16_answer_fails_with_its_named_mistake(graded):
    for student, cell, words in (("bf16_kqt", "test_masked_attention", "transposed"),
                                 ("bf16_diagonal_only", "test_softmax_grad", "diagonal")):
        sub = by_name(student)
        assert words in outputs_of(graded["course"], sub)[cell]


def test_tampering_spellings_are_flagged_and_the_grade_is_unchanged(graded):
    for student in ("numpy_alias", "getattr_globals", "os_level_imports", "magic_hides_import",
                    "reads_predictions"):
        sub = by_name(student)
        test_each_flag_names_its_reason(graded, sub)
        test_each_submission_gets_the_points_it_earns(graded, sub)


def test_no_feedback_shows_a_hidden_line(graded):
    secrets = hidden_lines(graded["course"])
    for sub in CORPUS:
        path = (graded["course"] / "feedback" / sub.student / sub.assignment
                / f"{sub.assignment}.html")
        text = html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        assert "HIDDEN TESTS" not in text
        leaked = [line for line in secrets if line in text]
        assert not leaked, f"{sub.student}/{sub.assignment}: {leaked[:2]}"


def test_no_submission_is_dropped(graded):
    assert "Removing failed" not in graded["log"]
    for sub in CORPUS:
        assert (sub.student, sub.assignment) in graded["rows"]


def test_an_untouched_test_cell_raises_no_checksum_warning(graded):
    assert "has changed" not in graded["log"], re.findall(r".*has changed.*", graded["log"])[:3]


def feedback_text(course: Path, sub) -> str:
    path = course / "feedback" / sub.student / sub.assignment / f"{sub.assignment}.html"
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def test_a_submission_that_reads_files_has_its_cells_outputs_withheld_in_feedback(graded):
    sub = by_name("prints_sources_reversed")
    text = feedback_text(graded["course"], sub)
    assert "outputs withheld" in text
    reversed_secrets = [line[::-1] for line in hidden_lines(graded["course"])]
    assert not [line for line in reversed_secrets if line in text]
    autograded = (graded["course"] / "autograded" / sub.student / sub.assignment
                  / f"{sub.assignment}.ipynb").read_text()
    assert "NOITULOS NIGEB" in autograded  # the instructor's copy keeps what it printed


def test_a_huge_output_is_cut_in_the_feedback_saying_how_much(graded):
    sub = by_name("mentions_and_prints")
    path = (graded["course"] / "feedback" / sub.student / sub.assignment
            / f"{sub.assignment}.html")
    assert path.stat().st_size < 500_000
    assert re.search(r"2,98\d,\d{3} more characters of this output are not shown",
                     feedback_text(graded["course"], sub))


def test_a_submission_that_kills_the_grader_gets_0_and_the_others_are_graded(graded):
    sub = by_name("a_kills_the_grader")
    row = graded["rows"][sub.student, sub.assignment]
    assert float(row["score"]) == 0
    assert "the grading process was killed" in row["needs_review"]
    assert "killed" in feedback_text(graded["course"], sub)
    others = [s for s in CORPUS if s is not sub]
    assert all((graded["course"] / "autograded" / s.student / s.assignment).exists()
               for s in others)


def test_a_hidden_test_marker_in_an_answer_cell_is_flagged_and_feedback_made(graded):
    sub = by_name("marker_in_answer")
    assert "HIDDEN TESTS" not in feedback_text(graded["course"], sub)
    assert "hidden-test marker" in graded["rows"][sub.student, sub.assignment]["needs_review"]


def test_the_instructors_graded_copy_keeps_the_marks_grading_left(tmp_path):
    """The test cell Python died in keeps its ``mha_stopped`` mark and the notebook its review
    flags (``mha_grading``) in autograded/: nbgrader lists ClearMetadataPreprocessor among
    its autograde steps, but it is off (nbconvert's ``enabled`` defaults to False)."""
    (sub,) = [s for s in CORPUS if s.student == "kills_python"]
    course = grade(tmp_path, [sub])["course"]
    nb = nbformat.read(course / "autograded" / sub.student / sub.assignment
                       / f"{sub.assignment}.ipynb", 4)
    stopped = {c.metadata["nbgrader"]["grade_id"]: c.metadata["mha_stopped"] for c in nb.cells
               if "mha_stopped" in c.metadata}
    died = "Python stopped (the kernel died) while this cell ran"
    assert stopped == {"test_online_softmax": died}
    flags = nb.metadata["mha_grading"]["flags"]
    assert any("uses ._exit" in f for f in flags), flags


def test_a_cell_grading_stopped_in_says_so_in_plain_words_on_the_feedback_page(graded):
    """The stop is shown as the other failures are, in words, not by an error's class name."""
    text = feedback_text(graded["course"], by_name("a_kills_the_grader"))
    assert "Grading stopped: the grading process was killed while this submission ran." in text
    assert "GradingStopped:" not in text


def test_copied_cells_stop_nobody_and_the_copies_are_graded_on_their_real_cells(graded):
    """A copied cell keeps its grade id in JupyterLab; nbgrader's DeduplicateIds then made
    CheckCellMetadata stop the whole run (issue 20's last examiner)."""
    assert "old version of the nbgrader metadata" not in graded["log"]
    for student in ("copied_answer_cell", "copied_task_text", "copied_test_above_answer"):
        sub = by_name(student)
        test_each_submission_gets_the_points_it_earns(graded, sub)
        assert "graded as that cell" in graded["rows"][student, sub.assignment]["needs_review"]


def test_a_notebook_that_is_not_json_is_named_recorded_and_gets_a_feedback_page(graded):
    sub = by_name("corrupt_json")
    row = graded["rows"][sub.student, sub.assignment]
    assert float(row["score"]) == 0 and "is not valid JSON" in row["needs_review"]
    assert "corrupt_json/ex03_scaling: ex03_scaling.ipynb is not valid JSON" in graded["log"]
    assert "not valid JSON" in feedback_text(graded["course"], sub)


@pytest.mark.parametrize("student", ["torch_from_file", "reads_source_unseen"])
def test_a_submission_that_prints_the_source_in_any_way_has_its_outputs_withheld(graded,
                                                                                  student):
    sub = by_name(student)
    text = feedback_text(graded["course"], sub)
    assert "withheld" in text
    assert "STSET NEDDIH" not in text.upper()
    reversed_secrets = [line[::-1] for line in hidden_lines(graded["course"])]
    assert not [line for line in reversed_secrets if line in text]


def test_an_untouched_stub_is_reported_as_not_attempted_as_the_notebook_says(graded):
    """The error is named NotAttempted, not CheckFailed, and the page shows it as the
    learner's notebook does: "Not yet: <name>: not attempted yet: ...", never a class name."""
    sub = by_name("untouched_stubs")
    path = (graded["course"] / "autograded" / sub.student / sub.assignment
            / f"{sub.assignment}.ipynb")
    names = {c.metadata["nbgrader"]["grade_id"]: [o.get("ename") for o in c.outputs]
             for c in nbformat.read(path, 4).cells if c.metadata.get("nbgrader", {}).get("grade")}
    for cell in sub.expect:
        assert names[cell] == ["NotAttempted"], (cell, names[cell])
    assert names["test_predict_weight"] == [None], names  # answered: a passing line
    # what the page shows (the traceback) starts with the notebook's and the lessons' word
    shown = {c.metadata["nbgrader"]["grade_id"]: [t for o in c.outputs
                                                   for t in o.get("traceback", [])]
             for c in nbformat.read(path, 4).cells if c.metadata.get("nbgrader", {}).get("grade")}
    for cell in sub.expect:
        assert len(shown[cell]) == 1 and shown[cell][0].startswith("Not yet: "), shown[cell]
    text = feedback_text(graded["course"], sub)
    assert "Not yet: " in text and "NotAttempted" not in text and "CheckFailed" not in text
