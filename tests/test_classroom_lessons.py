"""classroom/sync_lessons.py: a student gets the lessons once, updates while untouched, and
never loses an edit. "Edited" means the cells' sources changed: opening a lesson (JupyterLab
rewrites its language_info) or running it (outputs, execution counts) is not an edit. (The hub
runs it as the student before each server start; the whole class is tested in
tests/test_classroom_hub.py.)"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "classroom"))
from sync_lessons import MANIFEST, sync  # noqa: E402

LESSON = "04_masks.ipynb"


def notebook(text: str, version: str = "3.0.0") -> dict:
    return {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# 04 Masks\n", text]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": "print(1)"}],
        "metadata": {"language_info": {"name": "python", "version": version,
                                       "pygments_lexer": "ipython3"}},
        "nbformat": 4, "nbformat_minor": 5}


def ship(tmp_path: Path, text: str = "v1") -> Path:
    folder = tmp_path / "shipped"
    folder.mkdir(exist_ok=True)
    (folder / LESSON).write_text(json.dumps(notebook(text), indent=1))
    return folder


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def text_of(path: Path) -> str:
    return "".join(read(path)["cells"][0]["source"])


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def edit(path: Path, change) -> None:
    nb = read(path)
    change(nb)
    path.write_text(json.dumps(nb, indent=2))  # JupyterLab's own formatting differs too


def opened_in_jupyterlab(nb):
    nb["metadata"]["language_info"]["version"] = "3.0.1"
    nb["metadata"]["widgets"] = {"state": {}}


def run_again(nb):
    nb["cells"][1]["execution_count"] = 7
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]


def learner_writes(nb):
    nb["cells"][1]["source"] = "print(2)  # my own try"


def test_the_first_login_copies_every_lesson(tmp_path, home):
    assert sync(ship(tmp_path), home) == {LESSON: "copied"}
    assert text_of(home / LESSON) == "# 04 Masks\nv1"


def test_a_copy_carries_the_running_pythons_version(tmp_path, home):
    """So JupyterLab, whose kernel is this Python, does not rewrite it and mark the lesson
    modified on opening it."""
    sync(ship(tmp_path), home)
    assert read(home / LESSON)["metadata"]["language_info"] == {
        "name": "python", "version": platform.python_version(), "pygments_lexer": "ipython3"}


def test_an_untouched_lesson_is_updated_to_the_new_version(tmp_path, home):
    sync(ship(tmp_path, "v1"), home)
    assert sync(ship(tmp_path, "v2"), home) == {LESSON: "updated"}
    assert text_of(home / LESSON) == "# 04 Masks\nv2"


@pytest.mark.parametrize("change", [opened_in_jupyterlab, run_again])
def test_opening_or_running_a_lesson_is_not_an_edit(tmp_path, home, change):
    sync(ship(tmp_path, "v1"), home)
    edit(home / LESSON, change)
    assert sync(ship(tmp_path, "v2"), home) == {LESSON: "updated"}
    assert text_of(home / LESSON) == "# 04 Masks\nv2"
    assert not (home / "04_masks.new.ipynb").exists()


@pytest.mark.parametrize("change", [opened_in_jupyterlab, run_again, learner_writes])
def test_no_new_copy_while_the_shipped_lesson_is_unchanged(tmp_path, home, change):
    sync(ship(tmp_path, "v1"), home)
    edit(home / LESSON, change)
    before = (home / LESSON).read_text()
    sync(ship(tmp_path, "v1"), home)
    assert not (home / "04_masks.new.ipynb").exists()
    assert (home / LESSON).read_text() == before


def test_an_edited_lesson_is_kept_and_the_new_version_put_beside_it(tmp_path, home):
    sync(ship(tmp_path, "v1"), home)
    edit(home / LESSON, learner_writes)
    done = sync(ship(tmp_path, "v2"), home)
    assert done[LESSON] == "edited: new version in 04_masks.new.ipynb"
    assert read(home / LESSON)["cells"][1]["source"] == "print(2)  # my own try"
    assert text_of(home / "04_masks.new.ipynb") == "# 04 Masks\nv2"


def test_an_edited_lesson_stays_edited_after_the_update(tmp_path, home):
    """The next login neither overwrites the edit nor rewrites the new version beside it."""
    sync(ship(tmp_path, "v1"), home)
    edit(home / LESSON, learner_writes)
    sync(ship(tmp_path, "v2"), home)
    edit(home / "04_masks.new.ipynb", run_again)
    beside = (home / "04_masks.new.ipynb").read_text()
    sync(ship(tmp_path, "v2"), home)
    assert read(home / LESSON)["cells"][1]["source"] == "print(2)  # my own try"
    assert (home / "04_masks.new.ipynb").read_text() == beside


def test_a_manifest_of_file_digests_still_counts_as_untouched(tmp_path, home):
    """Homes synced before content digests recorded the shipped file's bytes."""
    shipped = ship(tmp_path, "v1")
    (home / LESSON).write_bytes((shipped / LESSON).read_bytes())
    (home / MANIFEST).write_text(json.dumps(
        {LESSON: hashlib.sha256((shipped / LESSON).read_bytes()).hexdigest()}))
    edit(home / LESSON, opened_in_jupyterlab)
    assert sync(shipped, home) == {LESSON: "current"}
    assert not (home / "04_masks.new.ipynb").exists()
    assert sync(ship(tmp_path, "v2"), home) == {LESSON: "updated"}


def test_a_deleted_lesson_comes_back(tmp_path, home):
    sync(ship(tmp_path), home)
    (home / LESSON).unlink()
    assert sync(ship(tmp_path), home) == {LESSON: "copied"}


def test_a_link_in_the_home_is_never_followed(tmp_path, home):
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours")
    (home / LESSON).symlink_to(target)
    assert sync(ship(tmp_path), home) == {LESSON: "kept (not a plain file)"}
    assert target.read_text() == "not yours"


def test_the_manifest_records_what_was_copied(tmp_path, home):
    sync(ship(tmp_path), home)
    assert set(json.loads((home / MANIFEST).read_text())) == {LESSON}


SET_LINE = "Exercise set: [exercises/ex04_masks.ipynb](exercises/ex04_masks.ipynb)\n"


def test_a_link_to_the_exercise_set_points_where_nbgrader_fetches_it(tmp_path, home):
    sync(ship(tmp_path, SET_LINE), home)
    text = text_of(home / LESSON)
    assert "[ex04_masks/ex04_masks.ipynb](ex04_masks/ex04_masks.ipynb)" in text
    assert "fetch it first: Nbgrader > Assignment List" in text
    assert "exercises/" not in text


def test_the_rewritten_link_is_not_an_edit(tmp_path, home):
    shipped = ship(tmp_path, SET_LINE)
    sync(shipped, home)
    assert sync(shipped, home) == {LESSON: "current"}
    assert not (home / "04_masks.new.ipynb").exists()


def test_a_copy_made_before_the_rewrite_is_updated_not_kept_as_edited(tmp_path, home):
    shipped = ship(tmp_path, SET_LINE)
    (home / LESSON).write_bytes((shipped / LESSON).read_bytes())  # what the older sync copied
    old = json.loads((shipped / LESSON).read_text())
    cells = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
              else c["source"]) for c in old["cells"]]
    recorded = "cells:" + hashlib.sha256(json.dumps(cells).encode()).hexdigest()
    (home / MANIFEST).write_text(json.dumps({LESSON: recorded}))
    assert sync(shipped, home) == {LESSON: "updated"}
    assert "ex04_masks/ex04_masks.ipynb" in text_of(home / LESSON)


@pytest.mark.parametrize("lesson", sorted(
    (Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")),
    ids=lambda p: p.name)
def test_no_lesson_of_the_class_points_into_the_repositorys_exercise_folder(lesson):
    from sync_lessons import for_the_class, source_of
    nb = for_the_class(json.loads(lesson.read_text()))
    assert not [source_of(c) for c in nb["cells"]
                if c["cell_type"] == "markdown" and "exercises/" in source_of(c)]


def test_the_class_copy_leaves_out_the_colab_and_binder_cells(tmp_path, home):
    shipped = ship(tmp_path, SET_LINE)
    nb = read(shipped / LESSON)
    nb["cells"][1:1] = [
        {"cell_type": "markdown", "metadata": {"tags": ["launch-header"]},
         "source": "[Open in Colab](https://colab.research.google.com/x)"},
        {"cell_type": "code", "metadata": {"tags": ["launch-install"]}, "outputs": [],
         "execution_count": None, "source": "# install the course package"}]
    (shipped / LESSON).write_text(json.dumps(nb, indent=1))
    sync(shipped, home)
    sources = ["".join(c["source"]) for c in read(home / LESSON)["cells"]]
    assert not [s for s in sources if "Colab" in s or "install the course" in s]
    assert len(sources) == 2
    assert sync(shipped, home) == {LESSON: "current"}  # leaving them out is not an edit


@pytest.mark.parametrize("lesson", sorted(
    (Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")),
    ids=lambda p: p.name)
def test_no_lesson_of_the_class_keeps_a_launch_link_or_the_install_cell(lesson):
    from sync_lessons import for_the_class, source_of
    shipped = json.loads(lesson.read_text())
    assert any("colab.research.google.com" in source_of(c) for c in shipped["cells"])
    nb = for_the_class(shipped)
    launch = ("colab.research.google.com", "MHA_INSTALL_FROM")
    assert not [source_of(c)[:60] for c in nb["cells"] if any(w in source_of(c) for w in launch)]
