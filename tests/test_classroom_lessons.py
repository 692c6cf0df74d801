"""classroom/sync_lessons.py: a student gets the lessons once, updates while untouched, and
never loses an edit. (The hub runs it as the student before each server start; the whole
class is tested in tests/test_classroom_hub.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "classroom"))
from sync_lessons import MANIFEST, sync  # noqa: E402


def shipped(tmp_path: Path, text: str = "v1") -> Path:
    folder = tmp_path / "shipped"
    folder.mkdir(exist_ok=True)
    (folder / "04_masks.ipynb").write_text(f'{{"lesson": "{text}"}}')
    return folder


def test_the_first_login_copies_every_lesson(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    assert sync(shipped(tmp_path), home) == {"04_masks.ipynb": "copied"}
    assert (home / "04_masks.ipynb").read_text() == '{"lesson": "v1"}'


def test_an_untouched_lesson_is_updated_to_the_new_version(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sync(shipped(tmp_path, "v1"), home)
    assert sync(shipped(tmp_path, "v2"), home) == {"04_masks.ipynb": "updated"}
    assert (home / "04_masks.ipynb").read_text() == '{"lesson": "v2"}'


def test_an_edited_lesson_is_kept_and_the_new_version_put_beside_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sync(shipped(tmp_path, "v1"), home)
    (home / "04_masks.ipynb").write_text('{"lesson": "my notes"}')
    done = sync(shipped(tmp_path, "v2"), home)
    assert done["04_masks.ipynb"].startswith("edited")
    assert (home / "04_masks.ipynb").read_text() == '{"lesson": "my notes"}'
    assert (home / "04_masks.new.ipynb").read_text() == '{"lesson": "v2"}'


def test_a_deleted_lesson_comes_back(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sync(shipped(tmp_path), home)
    (home / "04_masks.ipynb").unlink()
    assert sync(shipped(tmp_path), home) == {"04_masks.ipynb": "copied"}


def test_a_link_in_the_home_is_never_followed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours")
    (home / "04_masks.ipynb").symlink_to(target)
    assert sync(shipped(tmp_path), home) == {"04_masks.ipynb": "kept (not a plain file)"}
    assert target.read_text() == "not yours"


def test_the_manifest_records_what_was_copied(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sync(shipped(tmp_path), home)
    assert set(json.loads((home / MANIFEST).read_text())) == {"04_masks.ipynb"}
