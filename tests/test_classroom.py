"""The classroom flow end to end, through the Makefile's course-* targets.

One module-scoped run: a copy of course/ in a temporary folder, `make course-release`,
a class of generated students (all correct; partly correct; each known mistake; a syntax
error; an exception; an infinite loop; an edited locked test cell; a deleted cell; an empty
notebook; an answer cell that replaces the checking functions with no-ops), then
`make course-collect`, `course-autograde`, `course-feedback`, `course-export`. The tests
read the exported CSV and the feedback files. The autograde time per submission is printed
(run with -s to see it).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parents[1]
CELL_TIMEOUT = 10  # seconds before nbgrader interrupts a cell (the infinite loop)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def make(target: str, course: Path, **variables) -> subprocess.CompletedProcess:
    """``make TARGET`` against the temporary course, never reinstalling the venv."""
    args = ["make", "--no-print-directory", "-o", f"{VENV}/.installed", target,
            f"VENV={VENV}", f"COURSE={course}"]
    args += [f"{k}={v}" for k, v in variables.items()]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"make {target} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


# -- what each student hands in ---------------------------------------------------------------

def solution_code(course: Path, assignment: str, grade_id: str) -> str:
    """The instructor's answer cell with the solution markers removed."""
    nb = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", 4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return "\n".join(line for line in cell.source.splitlines()
                     if not re.match(r"\s*### (BEGIN|END) SOLUTION", line))


def answer_ids(nb) -> list[str]:
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")]


CAUSAL_INVERTED = '''
def causal(t):
    return np.tril(np.ones((t, t), dtype=bool))  # True on and below the diagonal
'''
MASK_AFTER_SOFTMAX = '''
def masked_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = mha.softmax(scores, axis=-1) * ~mask  # zeroed after the softmax
    return weights @ v, weights
'''
RAISES = '''
def masked_attention(q, k, v, mask):
    raise RuntimeError("I will finish this tomorrow")
'''
SYNTAX_ERROR = '''
def causal(t)
    return np.triu(np.ones((t, t), dtype=bool), k=1)
'''
INFINITE_LOOP = '''
while True:
    pass
'''
NO_MAX_SHIFT = '''
def softmax(logits):
    e = np.exp(np.asarray(logits, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)
'''
SQRT_D_MODEL = '''
def head_scores(q, k, d_model):
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
'''
NO_CROSS_TERM = '''
def softmax_grad(p, g):
    return p * g
'''
SPLIT_WITH_VIEW = '''
def split(x, n_heads):
    b, t, c = x.shape
    return x.reshape(b, n_heads, t, c // n_heads)  # what x.view(B, H, T, dh) does
'''
UPPER_LEFT = '''
def cache_mask(n_cached, n_new):
    return np.triu(np.ones((n_new, n_cached + n_new), dtype=bool), k=1)  # is_causal=True
'''
TAMPER = '''
import importlib
for _name in dir(checks):
    if _name.startswith("check"):
        setattr(checks, _name, lambda *args, **kwargs: None)
np.testing.assert_allclose = lambda *args, **kwargs: None
np.allclose = lambda *args, **kwargs: True
importlib.reload = lambda module: module
'''
PARTLY = {"masked_attention": None}  # None: leave the stub


def submission(course: Path, exercises: Path, assignment: str, replace: dict | None = None,
               edit=None):
    """The released notebook with every answer filled in from the solutions, except the
    cells in ``replace`` (grade_id -> code, or None to leave the stub); ``edit(nb)`` last."""
    nb = nbformat.read(exercises / f"{assignment}.ipynb", 4)
    replace = replace or {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            if grade_id in replace:
                if replace[grade_id] is not None:
                    cell.source = replace[grade_id].strip("\n")
            else:
                cell.source = solution_code(course, assignment, grade_id)
    if edit is not None:
        edit(nb)
    return nb


def edit_locked_tests(nb):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = "pass  # my tests now"


def delete_cells(nb):
    """Delete the to_sdpa answer cell and the broadcast test cell."""
    drop = {"to_sdpa", "test_masked_attention_broadcast"}
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in drop]


def tamper_first_answer(nb):
    first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source = TAMPER.strip("\n") + "\n\n" + first.source


M = "ex04_masks"
# (student, assignment, how the notebook is made, expected score). ex04 is out of 7:
# causal 2, masked_attention 2 + 1 (broadcast), the prediction 1, to_sdpa 1.
STUDENTS = [
    ("all_correct", "ex01_weighted_sum", {}, None, 6),
    ("all_correct", "ex02_scores_and_softmax", {}, None, 6),
    ("all_correct", "ex03_scaling", {}, None, 5),
    ("all_correct", M, {}, None, 7),
    ("all_correct", "ex05_softmax_backward", {}, None, 7),
    ("all_correct", "ex06_multi_head", {}, None, 5),
    ("all_correct", "ex08_kv_cache", {}, None, 5),
    ("all_correct", "ex09_memory_speed_precision", {}, None, 6),
    ("partly_correct", M, PARTLY, None, 4),
    ("mask_after_softmax", M, {"masked_attention": MASK_AFTER_SOFTMAX}, None, 4),
    ("mask_inverted", M, {"causal": CAUSAL_INVERTED}, None, 5),
    ("no_max_shift", "ex02_scores_and_softmax", {"softmax": NO_MAX_SHIFT}, None, 5),
    ("sqrt_d_model", "ex03_scaling", {"head_scores": SQRT_D_MODEL}, None, 3),
    ("no_cross_term", "ex05_softmax_backward", {"softmax_grad": NO_CROSS_TERM}, None, 3),
    ("split_with_view", "ex06_multi_head", {"split": SPLIT_WITH_VIEW}, None, 3),
    ("upper_left_cache", "ex08_kv_cache", {"cache_mask": UPPER_LEFT}, None, 3),
    ("syntax_error", M, {"causal": SYNTAX_ERROR}, None, 5),
    ("exception", M, {"masked_attention": RAISES}, None, 4),
    ("infinite_loop", M, {"causal": INFINITE_LOOP}, None, 5),
    ("edits_locked_cell", M, PARTLY, edit_locked_tests, 4),
    # The deleted broadcast test is added back and run: the right answer earns its point;
    # the deleted to_sdpa answer earns nothing (7 - 1).
    ("deletes_cells", M, {}, delete_cells, 6),
    ("tampers_with_checks", M, PARTLY, tamper_first_answer, 4),
    ("tampers_and_masks_after_softmax", M, {"masked_attention": MASK_AFTER_SOFTMAX},
     tamper_first_answer, 4),
]


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("classroom")
    course, exercises, submitted = tmp / "course", tmp / "exercises", tmp / "submissions"
    shutil.copytree(ROOT / "course" / "source", course / "source")
    for module in (ROOT / "course").glob("*.py"):  # the config and what it imports
        shutil.copy(module, course / module.name)
    with open(course / "nbgrader_config.py", "a") as f:
        f.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
    make("course-release", course, EXERCISES=exercises)

    expected = {}
    for student, assignment, replace, edit, score in STUDENTS:
        nb = submission(course, exercises, assignment, replace, edit)
        folder = submitted / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
        expected[student, assignment] = score
    empty = submitted / "empty_notebook" / M
    empty.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), empty / f"{M}.ipynb")
    expected["empty_notebook", M] = 0

    make("course-collect", course, SUBMISSIONS=submitted)
    start = time.perf_counter()
    autograde = make("course-autograde", course)
    autograde_seconds = time.perf_counter() - start
    feedback = make("course-feedback", course)
    make("course-export", course, GRADES_CSV=tmp / "grades.csv")
    with open(tmp / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    per_submission = autograde_seconds / len(expected)
    print(f"\nautograde: {len(expected)} submissions in {autograde_seconds:.1f} s, "
          f"{per_submission:.2f} s each")
    return {"course": course, "expected": expected, "rows": rows,
            "per_submission": per_submission, "exercises": exercises,
            "autograde_log": autograde.stdout + autograde.stderr,
            "feedback_log": feedback.stdout + feedback.stderr}


def score_of(classroom, student, assignment) -> float:
    rows = [r for r in classroom["rows"]
            if r["student_id"] == student and r["assignment"] == assignment]
    assert len(rows) == 1, f"{student}/{assignment}: {len(rows)} grade rows"
    return float(rows[0]["score"])


@pytest.mark.parametrize(("student", "assignment", "score"),
                         [(s, a, p) for s, a, _, _, p in STUDENTS] + [("empty_notebook", M, 0)],
                         ids=lambda v: str(v))
def test_each_submission_gets_its_expected_score(classroom, student, assignment, score):
    assert score_of(classroom, student, assignment) == score


def test_every_submission_has_one_grade_row(classroom):
    for student, assignment in classroom["expected"]:
        score_of(classroom, student, assignment)


def test_max_scores_are_the_points_of_each_set(classroom):
    maxima = {r["assignment"]: float(r["max_score"]) for r in classroom["rows"]}
    assert maxima == {"ex01_weighted_sum": 6, "ex02_scores_and_softmax": 6, "ex03_scaling": 5,
                      "ex04_masks": 7, "ex05_softmax_backward": 7, "ex06_multi_head": 5,
                      "ex07_matching_pytorch": 6,
                      "ex08_kv_cache": 5, "ex09_memory_speed_precision": 6,
                      "ex10_debugging": 6}


def test_editing_a_locked_test_cell_does_not_raise_the_score(classroom):
    assert score_of(classroom, "edits_locked_cell", M) == score_of(classroom, "partly_correct", M)


def test_replacing_the_checking_functions_does_not_raise_the_score(classroom):
    assert score_of(classroom, "tampers_with_checks", M) == score_of(classroom, "partly_correct", M)
    assert score_of(classroom, "tampers_and_masks_after_softmax", M) == score_of(
        classroom, "mask_after_softmax", M)


def test_every_submission_has_a_feedback_file(classroom):
    for student, assignment in classroom["expected"]:
        path = classroom["course"] / "feedback" / student / assignment / f"{assignment}.html"
        assert path.is_file(), path


def hidden_lines(course: Path) -> list[str]:
    """Distinctive lines of every hidden test in the sources."""
    lines = []
    for path in sorted((course / "source").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if "BEGIN HIDDEN TESTS" in source:
                hidden = source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                lines += [ln.strip() for ln in hidden.splitlines() if ln.strip().startswith("_")]
    assert lines, "no hidden tests found in the sources"
    return lines


def test_feedback_html_shows_no_hidden_test_source(classroom):
    secrets = hidden_lines(classroom["course"])
    import html

    for student, assignment in classroom["expected"]:
        path = classroom["course"] / "feedback" / student / assignment / f"{assignment}.html"
        text = html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
        assert "BEGIN HIDDEN TESTS" not in text
        leaked = [line for line in secrets if line in text]
        assert not leaked, f"{student}/{assignment} feedback shows hidden lines: {leaked[:3]}"


def test_a_failed_test_cell_names_the_mistake_in_the_feedback(classroom):
    path = classroom["course"] / "feedback" / "mask_after_softmax" / M / f"{M}.html"
    assert "mask applied after softmax" in path.read_text()


def test_an_untouched_answer_gets_no_empty_comment_on_the_feedback_page(classroom):
    """partly_correct left the masked_attention stub: nbgrader's autograder gives it the
    comment "No response.", which its template showed as a "Comment" row in the score summary
    and "Comments: No response." under the answer (walk19d, C22). The page shows neither."""
    page = (classroom["course"] / "feedback" / "partly_correct" / M / f"{M}.html").read_text()
    assert "No response" not in page
    assert ">Comment<" not in page and "<li>Comment" not in page.replace(" ", "")
    assert "Comments:" not in page


def test_an_instructors_comment_still_reaches_the_feedback_page(classroom):
    """A comment the instructor wrote in the Formgrader (the gradebook's manual comment) is
    shown under the answer, with its row in the score summary."""
    from nbgrader.api import Gradebook

    course, student = classroom["course"], "edits_locked_cell"
    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        comment = gb.find_comment("masked_attention", M, M, student)
        comment.manual_comment = "Start from the scores, then mask before the softmax."
        gb.db.commit()
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "nbgrader"), "generate_feedback", M, "--student",
                           student, "--force"], cwd=course, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (course / "feedback" / student / M / f"{M}.html").read_text()
    assert "mask before the softmax." in page and "Comments:" in page
    assert "No response" not in page


def test_autograde_prints_no_warning_about_its_own_machinery(classroom):
    """No SQLAlchemy "not in session" warning from nbgrader's gradebook, no ipykernel
    "running over TCP without encryption" (the grading kernels' channels are encrypted)."""
    log = classroom["autograde_log"]
    assert "SAWarning" not in log and "not in session" not in log
    assert "without encryption" not in log


def test_generate_feedback_warns_about_no_config_option(classroom):
    assert "not recognized" not in classroom["feedback_log"]


def test_autograde_takes_seconds_per_submission(classroom):
    """A class of 30 takes minutes, not hours: under 30 s a submission even on a busy 2-core
    machine (measured here: 2.3 s at low load, 6.5 s at a load average of 10)."""
    assert classroom["per_submission"] < 30


def test_the_feedback_says_to_run_the_imports_not_an_install_cell(classroom):
    """The page leaves out the install cell, so its intro must not ask to run it
    (course/class_copy.py; these sets were released with their launch cells)."""
    import html

    for student, assignment in classroom["expected"]:
        if student == "empty_notebook":
            continue
        path = classroom["course"] / "feedback" / student / assignment / f"{assignment}.html"
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())).split())
        assert "install cell" not in text and "Install the course package" not in text, path
        assert "First run the code cell below: the imports." in text, path


# -- the class hub's release: without the cells that launch a set elsewhere ------------------

def test_the_class_hubs_release_leaves_out_the_launch_cells_and_grades_in_full(
        tmp_path, monkeypatch):
    """The walkthrough: the sets released on the hub showed the Colab/Binder line and the
    install cell. The hub's nbgrader settings (classroom/nbgrader_config.py, which `make
    class-env` puts in the class environment's etc/jupyter, here on JUPYTER_CONFIG_PATH) turn on
    course/class_copy.py's ClassHubCopy: generate_assignment leaves both cells out before it
    computes checksums, and the intro asks to run the imports only. A right answer handed in
    from that copy is graded in full, with nothing flagged (no locked cell seen as edited)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import generate_exercises

    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copy(ROOT / "classroom" / "nbgrader_config.py", etc / "nbgrader_config.py")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(etc))
    monkeypatch.setenv("MHA_CLASS_EXCHANGE", str(tmp_path / "exchange"))
    course, submitted = tmp_path / "course", tmp_path / "submissions"
    shutil.copytree(ROOT / "course" / "source", course / "source")
    for module in (ROOT / "course").glob("*.py"):
        shutil.copy(module, course / module.name)
    generate_exercises.run_nbgrader(["generate_assignment", M, "--force"], course)

    released = nbformat.read(course / "release" / M / f"{M}.ipynb", 4)
    tags = [t for c in released.cells for t in c.metadata.get("tags", [])]
    assert "launch-header" not in tags and "launch-install" not in tags
    text = "\n".join(c.source for c in released.cells)
    for word in ("colab.research.google.com", "mybinder.org", "MHA_INSTALL_FROM", "install cell"):
        assert word not in text, word
    assert "First run the code cell below: the imports." in released.cells[0].source
    source = nbformat.read(course / "source" / M / f"{M}.ipynb", 4)
    assert len(released.cells) == len(source.cells) - 2  # course/source itself is unchanged
    assert "MHA_INSTALL_FROM" in "".join(c.source for c in source.cells)

    folder = submitted / "hub_student" / M
    folder.mkdir(parents=True)
    nbformat.write(submission(course, course / "release" / M, M), folder / f"{M}.ipynb")
    make("course-collect", course, SUBMISSIONS=submitted)
    make("course-autograde", course)
    make("course-feedback", course)
    make("course-export", course, GRADES_CSV=tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["score"]) == 7 and not row.get("needs_review"), row
    page = (course / "feedback" / "hub_student" / M / f"{M}.html").read_text()
    assert "install cell" not in page and "First run the code cell below: the imports." in page


# -- submissions downloaded from an LMS: nbgrader zip_collect ---------------------------------

def released_course(tmp: Path) -> Path:
    """A course copy whose release/ holds ex04 (zip_collect checks notebook names against it)."""
    course = tmp / "course"
    shutil.copytree(ROOT / "course" / "source", course / "source")
    for module in (ROOT / "course").glob("*.py"):  # the config and what it imports
        shutil.copy(module, course / module.name)
    (course / "release" / M).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "exercises" / f"{M}.ipynb", course / "release" / M)
    return course


def lms_zip(tmp: Path, files: dict[str, str]) -> Path:
    """A zip as the LMS downloads it: name -> a marker stored in the notebook's metadata."""
    import zipfile

    folder = tmp / "zips"
    folder.mkdir()
    with zipfile.ZipFile(folder / "submissions.zip", "w") as z:
        for name, marker in files.items():
            if name.endswith(".ipynb"):
                nb = nbformat.v4.new_notebook(metadata={"marker": marker})
                z.writestr(name, nbformat.writes(nb))
            else:
                z.writestr(name, marker)
    return folder


def collected(course: Path) -> dict[str, str]:
    """student id -> the marker of the notebook collected for them."""
    out = {}
    for path in sorted((course / "submitted").glob(f"*/{M}/{M}.ipynb")):
        out[path.parts[-3]] = json.loads(path.read_text())["metadata"]["marker"]
    return out


def test_zip_collect_canvas_keeps_each_students_newest_submission(tmp_path):
    course = released_course(tmp_path)
    zips = lms_zip(tmp_path, {
        "lovelaceada_1001_5001_ex04_masks.ipynb": "first upload",
        "lovelaceada_1001_5007_ex04_masks-1.ipynb": "second upload",
        "turingalan_LATE_1002_5003_ex04_masks.ipynb": "late",
        "turingalan_1002_5003_notes.txt": "not a notebook",
    })
    make("course-zip-collect", course, ZIPS=zips, ASSIGNMENT=M, LMS="Canvas")
    assert collected(course) == {"1001": "second upload", "1002": "late"}


def test_zip_collect_moodle_reads_folders_and_flat_files(tmp_path):
    course = released_course(tmp_path)
    zips = lms_zip(tmp_path, {
        "Ada Lovelace_2001_assignsubmission_file_/ex04_masks.ipynb": "ada",
        "Alan Turing_2002_assignsubmission_file_/ex04_masks.ipynb": "alan",
        "Grace Hopper_2003_assignsubmission_file_ex04_masks.ipynb": "grace",
        "Ada Lovelace_2001_assignsubmission_onlinetext_/onlinetext.html": "<p>hi</p>",
    })
    make("course-zip-collect", course, ZIPS=zips, ASSIGNMENT=M, LMS="Moodle")
    assert collected(course) == {"2001": "ada", "2002": "alan", "2003": "grace"}


def test_zip_collect_blackboard_keeps_the_newest_attempt_with_its_real_time(tmp_path):
    course = released_course(tmp_path)
    zips = lms_zip(tmp_path, {
        "Masks_lovelace_attempt_2026-11-30-14-03-12_ex04_masks.ipynb": "older",
        "Masks_lovelace_attempt_2026-11-30-20-45-00_ex04_masks.ipynb": "newer",
        "Masks_lovelace_attempt_2026-11-30-20-45-00.txt": "Name: Ada Lovelace",
        "Masks_turing_attempt_2026-11-29-23-59-59_ex04_masks.ipynb": "alan",
    })
    make("course-zip-collect", course, ZIPS=zips, ASSIGNMENT=M, LMS="Blackboard")
    assert collected(course) == {"lovelace": "newer", "turing": "alan"}
    stamp = (course / "submitted" / "lovelace" / M / "timestamp.txt").read_text().strip()
    assert stamp.startswith("2026-11-30 20:45:00"), stamp


def test_blackboard_timestamps_are_misread_without_the_plugin():
    """Why BlackboardCollector rewrites the time: nbgrader's parser reads it as another one."""
    from nbgrader.utils import parse_utc

    assert str(parse_utc("2026-11-30-14-03-12")) != "2026-11-30 14:03:12"
    assert str(parse_utc("2026-11-30 14:03:12")) == "2026-11-30 14:03:12"


def test_two_files_for_one_student_without_timestamps_abort_nbgrader(tmp_path):
    """The observed failure the Canvas plugin avoids: nbgrader's own collector gives up."""
    course = released_course(tmp_path)
    archive = course / "downloaded" / M / "archive"
    archive.mkdir(parents=True)
    for name in ("lovelaceada_1001_5001_ex04_masks.ipynb",
                 "lovelaceada_1001_5007_ex04_masks-1.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(), archive / name)
    regexp = r".*/[^/_]+_(?P<student_id>\d+)_\d+_(?P<file_id>ex04_masks)(-\d+)?\.ipynb"
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", "zip_collect", M, "--force",
         f"--FileNameCollectorPlugin.named_regexp={regexp}"],
        cwd=course, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PATH": f"{VENV}/bin{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode != 0
    assert "Duplicate submission file. No timestamps for comparison" in proc.stderr
    assert not (course / "submitted").exists()
