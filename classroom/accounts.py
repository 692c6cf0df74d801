"""Create or remove the Unix accounts of a class from a roster (run as root).

    python3 classroom/accounts.py create ROSTER.csv --passwords PASSWORDS.csv
    python3 classroom/accounts.py remove ROSTER.csv [--passwords PASSWORDS.csv] [--exchange DIR]
    python3 classroom/accounts.py refresh ROSTER.csv

The roster is a CSV with the columns ``username`` and ``role`` (``instructor`` or
``student``), exactly one instructor (classroom/roster.example.csv).

create: one Unix user per row (``useradd``; the hub never creates users), home mode 0700
(Debian's useradd makes 0755 homes, readable by everyone), a random password written to
PASSWORDS.csv (mode 0600: hand each person their line). The instructor's home gets the
course (``~/mha-course``: course/source and course/nbgrader_config.py of this repository)
and ``~/nbgrader_config.py`` (classroom/instructor_nbgrader_config.py). An existing account
is left as it is, except the instructor's course files (see refresh). Every account made here
carries the comment ``mha-classroom`` (its GECOS field).

refresh: the instructor's copies of the project's course files (course/*.py in ~/mha-course,
~/nbgrader_config.py) brought up to date, written as the instructor; a changed one is kept as
NAME.old. Their sets (source/), submissions, feedback and gradebook are never touched.
``make class-start`` runs it, and ``create`` for an existing instructor.

remove: ends the account's remaining processes, then ``userdel --remove`` (home and all).
Only accounts with the ``mha-classroom`` comment are removed; any other is refused. With
``--exchange``, everything the removed accounts owned in nbgrader's exchange goes too (their
submissions, the instructor's released sets and feedback, the course folder the instructor
made): left there, it would belong to a freed uid that the next new account may get. With
``--passwords``, their lines leave the passwords file. With ``--state`` (the hub's state folder,
``make class-remove-accounts`` passes it), their lines leave the class roster kept there (the file
goes when no line is left) and, when the hub is stopped, they leave the hub's database (with the
class environment's JupyterHub, ``--env``): left there, the hub would log an error for each of
them at every start. It prints what it removed and what it kept.

Only the standard library: this runs with the system Python.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = HERE.parent / "course"
MARKER = "mha-classroom"
NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")
ROLES = ("instructor", "student")


def read_roster(path: Path) -> dict[str, str]:
    """{username: role}; refuses bad names, unknown roles and a roster without one instructor."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if (r.get("username") or "").strip()]
    roster = {}
    for row in rows:
        name, role = row["username"].strip(), (row.get("role") or "student").strip()
        if not NAME.match(name):
            raise SystemExit(f"{path}: {name!r} is not a valid Unix user name "
                             "(lower case letters, digits, _ and -, at most 31 characters)")
        if role not in ROLES:
            raise SystemExit(f"{path}: {name}: role {role!r} is neither instructor nor student")
        if name in roster:
            raise SystemExit(f"{path}: {name} is listed twice")
        roster[name] = role
    instructors = [n for n, r in roster.items() if r == "instructor"]
    if len(instructors) != 1:
        raise SystemExit(f"{path}: the roster needs exactly one instructor, found {instructors}")
    return roster


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def install_course(home: Path, uid: int, gid: int) -> None:
    """~/mha-course (sources and config of this repository's course) and ~/nbgrader_config.py."""
    course = home / "mha-course"
    shutil.copytree(COURSE / "source", course / "source", dirs_exist_ok=True)
    for module in COURSE.glob("*.py"):  # the config and the modules it imports
        shutil.copy(module, course / module.name)
    shutil.copy(HERE / "instructor_nbgrader_config.py", home / "nbgrader_config.py")
    for path in [course, home / "nbgrader_config.py", *course.rglob("*")]:
        os.chown(path, uid, gid)


def project_files() -> dict[str, str]:
    """The course files this project owns in the instructor's home, by path under the home:
    course/*.py (the nbgrader config and the modules it imports) in ~/mha-course, and
    ~/nbgrader_config.py. Not course/source: the instructor's sets are theirs to edit."""
    files = {f"mha-course/{m.name}": m.read_text() for m in sorted(COURSE.glob("*.py"))}
    files["nbgrader_config.py"] = (HERE / "instructor_nbgrader_config.py").read_text()
    return files


# Run as the instructor (never as root in a home that person controls: a symlink there would
# make root write elsewhere); the files come on stdin (the repository may be root's alone).
WRITE_AS_INSTRUCTOR = r"""
import json, os, sys
home, updated = os.path.expanduser("~"), 0
course = os.path.join(home, "mha-course")
if not os.path.isdir(course) or os.path.islink(course):
    print("~/mha-course is missing: nothing refreshed")
    sys.exit(0)
for rel, text in json.load(sys.stdin).items():
    path = os.path.join(home, rel)
    if os.path.islink(path):
        print(f"~/{rel}: a symbolic link, left as it is")
        continue
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if old == text:
        continue
    if old is not None:
        os.replace(path, path + ".old")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    updated += 1
    print(f"~/{rel}: " + ("updated, the previous one kept as ~/" + rel + ".old"
                          if old is not None else "added"))
print(f"{updated} course file(s) refreshed, the others were up to date")
"""


def refresh_course(name: str) -> None:
    """Bring the project's course files in ``name``'s home up to date (project_files): an
    account made before a change of course/nbgrader_config.py or course/class_copy.py kept its
    stale copies. The instructor's sets (source/), submissions, feedback and gradebook are
    never touched; a file that differs is kept beside the new one as NAME.old."""
    entry = pwd.getpwnam(name)
    done = subprocess.run(
        [sys.executable, "-I", "-c", WRITE_AS_INSTRUCTOR], input=json.dumps(project_files()),
        user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=entry.pw_dir,
        env={"HOME": entry.pw_dir, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
        timeout=60)
    for line in (done.stdout + done.stderr).splitlines():
        print(f"{name}: {line}")
    if done.returncode != 0:
        raise SystemExit(f"{name}: could not refresh the course files")


def refresh(roster: dict[str, str]) -> None:
    """refresh_course for the roster's instructor, when this script made that account."""
    (name,) = [n for n, role in roster.items() if role == "instructor"]
    if not exists(name):
        print(f"{name}: no such account (make class-accounts): nothing refreshed")
    elif not pwd.getpwnam(name).pw_gecos.startswith(MARKER):
        print(f"{name}: not made by classroom/accounts.py, its course files left as they are")
    else:
        refresh_course(name)


def create(roster: dict[str, str], passwords: Path) -> list[str]:
    """Make the missing accounts; returns the names made. An existing instructor's course
    files are refreshed (refresh)."""
    made, lines = [], []
    for name, role in roster.items():
        if exists(name):
            print(f"{name}: exists, left as it is")
            if role == "instructor":
                refresh(roster)
            continue
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group",
                        "--comment", f"{MARKER} {role}", name], check=True)
        entry = pwd.getpwnam(name)
        home = Path(entry.pw_dir)
        home.chmod(0o700)
        password = secrets.token_urlsafe(12)
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
        if role == "instructor":
            install_course(home, entry.pw_uid, entry.pw_gid)
        made.append(name)
        lines.append((name, role, password))
        print(f"{name}: created ({role})")
    if lines:
        passwords.parent.mkdir(parents=True, exist_ok=True)
        fresh = not passwords.exists()
        fd = os.open(passwords, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", newline="") as f:
            writer = csv.writer(f)
            if fresh:
                writer.writerow(["username", "role", "password"])
            writer.writerows(lines)
        print(f"passwords of the new accounts: {passwords}")
    return made


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except FileNotFoundError:
                pass
    return pids


def end_processes(uid: int, grace: float = 5.0) -> None:
    """SIGTERM each process of ``uid`` by its id, then SIGKILL what is left after ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_of(uid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not processes_of(uid):
            return


def remove(roster: dict[str, str], passwords: Path | None = None,
           exchange: Path | None = None, state: Path | None = None,
           env: Path = Path("/opt/mha-classroom/env")) -> list[str]:
    """Remove the accounts this script made; returns the names removed. Also removes what
    they owned under ``exchange``, their lines in ``passwords`` and, in the hub's ``state``
    folder, their lines in the class roster and their users in the hub's database."""
    removed, uids = [], set()
    for name in roster:
        if not exists(name):
            continue
        entry = pwd.getpwnam(name)
        if not entry.pw_gecos.startswith(MARKER):
            raise SystemExit(f"{name}: not made by classroom/accounts.py "
                             f"(no {MARKER!r} comment): refusing to remove it")
        end_processes(entry.pw_uid)
        uids.add(entry.pw_uid)
        subprocess.run(["userdel", "--remove", name], check=True, stderr=subprocess.PIPE)
        if Path(entry.pw_dir).exists():
            shutil.rmtree(entry.pw_dir)
        removed.append(name)
        print(f"{name}: removed")
    if exchange is not None and uids:
        for path in owned_by(exchange, uids):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            print(f"{path}: removed (it belonged to a removed account)")
    if passwords is not None and removed:
        forget_passwords(passwords, set(removed))
    if state is not None:
        gone = {name for name in roster if not exists(name)}  # removed now or before
        forget_in_roster(state / "roster.csv", gone)
        forget_in_hub(state, env, gone)
    return removed


def forget_in_roster(roster: Path, names: set[str]) -> None:
    """Drop the rows of ``names`` from the class roster; remove the file when none is left."""
    if not roster.exists():
        return
    with open(roster, newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0]) if rows else ["username", "role"]
    kept = [r for r in rows if (r.get("username") or "").strip() not in names]
    if not kept:
        roster.unlink()
        print(f"{roster}: removed (every account in it was removed)")
        return
    tmp = roster.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    tmp.replace(roster)
    print(f"{roster}: {len(rows) - len(kept)} line(s) of removed accounts deleted, "
          f"{len(kept)} kept")


# JupyterHub's own ORM deletes a user with everything that refers to it (as its
# delete_invalid_users does at start); the system Python has no JupyterHub, the class env has.
FORGET_IN_HUB = """
import sys
from jupyterhub import orm
db = orm.new_session_factory(sys.argv[1])()
users = db.query(orm.User).filter(orm.User.name.in_(sys.argv[2:])).all()
for user in users:
    db.delete(user)
db.commit()
print(len(users))
"""


def hub_running(state: Path) -> bool:
    try:
        os.kill(int((state / "jupyterhub.pid").read_text()), 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    return True


def forget_in_hub(state: Path, env: Path, names: set[str]) -> None:
    """Remove ``names`` from the hub's database in ``state`` (only while the hub is stopped)."""
    database = state / "jupyterhub.sqlite"
    if not database.exists() or not names:
        return
    if hub_running(state):
        print(f"{database}: kept the removed accounts (the hub is running); it drops them at "
              "its next start (delete_invalid_users), after one error line each in hub.log")
        return
    python = env / "bin" / "python"
    if not python.exists():
        print(f"{database}: kept the removed accounts ({python} is missing: make class-env)")
        return
    done = subprocess.run([str(python), "-c", FORGET_IN_HUB, f"sqlite:///{database}",
                           *sorted(names)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{database}: could not remove the accounts: {done.stderr.strip()}")
    print(f"{database}: {done.stdout.strip()} removed account(s) deleted from the hub's users")


def owned_by(root: Path, uids: set[int]) -> list[Path]:
    """The topmost paths under ``root`` (not ``root`` itself) owned by one of ``uids``."""
    found, stack = [], [root] if root.is_dir() else []
    while stack:
        folder = stack.pop()
        for path in sorted(folder.iterdir()):
            if path.lstat().st_uid in uids:
                found.append(path)
            elif path.is_dir() and not path.is_symlink():
                stack.append(path)
    return found


def forget_passwords(passwords: Path, names: set[str]) -> None:
    """Drop the rows of ``names`` from the passwords file (kept mode 0600)."""
    if not passwords.exists():
        return
    with open(passwords, newline="") as f:
        rows = list(csv.reader(f))
    kept = [r for r in rows if not r or r[0] not in names]
    tmp = passwords.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as f:
        csv.writer(f).writerows(kept)
    tmp.replace(passwords)
    print(f"{passwords}: {len(rows) - len(kept)} line(s) of removed accounts deleted, "
          f"{max(len(kept) - 1, 0)} kept")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("create", "remove", "refresh"))
    parser.add_argument("roster", type=Path)
    parser.add_argument("--passwords", type=Path, default=Path("/srv/mha-classroom/passwords.csv"),
                        help="where create appends the new accounts' passwords (mode 0600); "
                             "remove deletes the removed accounts' lines")
    parser.add_argument("--exchange", type=Path, default=None,
                        help="remove: also delete what the removed accounts owned in this "
                             "nbgrader exchange root")
    parser.add_argument("--state", type=Path, default=None,
                        help="remove: the hub's state folder, whose roster.csv and database "
                             "forget the removed accounts")
    parser.add_argument("--env", type=Path, default=Path("/opt/mha-classroom/env"),
                        help="the class environment (its JupyterHub edits the hub's database)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("accounts.py makes and removes Unix users: run it as root")
    roster = read_roster(args.roster)
    if args.action == "create":
        create(roster, args.passwords)
    elif args.action == "refresh":
        refresh(roster)
    else:
        remove(roster, args.passwords, args.exchange, args.state, args.env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
