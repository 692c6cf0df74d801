"""classroom/accounts.py's bookkeeping after removing accounts: the class roster in the hub's
state folder forgets them (the accounts themselves, the exchange and the hub's database are
tested with a real hub in tests/test_classroom_hub.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "classroom"))
from accounts import forget_in_hub, forget_in_roster, read_roster  # noqa: E402

ROSTER = "username,role,first_name,last_name\nprof,instructor,Ada,L\nann,student,Ann,R\n" \
         "bob,student,Bob,W\n"


def test_the_roster_forgets_the_removed_students_and_keeps_the_rest(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    forget_in_roster(roster, {"bob"})
    assert read_roster(roster) == {"prof": "instructor", "ann": "student"}
    assert "Ann" in roster.read_text()  # the other columns stay


def test_the_roster_file_goes_when_every_account_was_removed(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    forget_in_roster(roster, {"prof", "ann", "bob"})
    assert not roster.exists()
    assert "every account in it was removed" in capsys.readouterr().out


def test_the_hubs_database_is_left_alone_while_the_hub_runs(tmp_path, capsys):
    (tmp_path / "jupyterhub.sqlite").write_bytes(b"not touched")
    (tmp_path / "jupyterhub.pid").write_text(str(__import__("os").getpid()))  # a live process
    forget_in_hub(tmp_path, tmp_path / "no-env", {"bob"})
    assert (tmp_path / "jupyterhub.sqlite").read_bytes() == b"not touched"
    assert "the hub is running" in capsys.readouterr().out
