"""A whole class on JupyterHub, on this machine: classroom/ through the Makefile's class-* targets.

One module-scoped class: `make class-env` (the hub's environment, cached), accounts for an
instructor and three students from a roster (`make class-accounts`), the hub on 127.0.0.1
(`make class-start`). Everyone logs in with their own password and gets their own server,
as their own Unix user. The instructor releases exercise set 04 through the formgrader's
REST API; each student fetches it, answers through the contents API (all correct, partly
correct, the known mistake "mask applied after softmax"; the answers come from
tests/test_classroom.py; a fourth answers right but kills the grading process, as the grader
runs it), validates and submits; the instructor collects, autogrades (`make class-autograde`:
the killer's submission gets 0 and a review flag, every other one is graded),
generates and releases feedback; each student fetches their feedback. Then the tests read
the gradebook, the feedback, and check isolation. Everything the class made (accounts,
processes, the exchange, the hub's state) is removed at the end, also when a step fails
(test_a_failing_step_still_removes_everything and test_a_hub_that_cannot_start_leaves_nothing_behind
check that on small classes of their own). The Kubernetes values and the hub's configuration
are checked without starting anything.

Needs root (real Unix users; the hub runs as root): skipped otherwise, a failure under CI.
Run with -s to see the timings.
"""

from __future__ import annotations

import contextlib
import csv
import html
import json
import os
import pwd
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_classroom import MASK_AFTER_SOFTMAX, PARTLY, STUDENTS, solution_code  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COURSE_ID = "mha-course"
ASSIGNMENT = "ex04_masks"
MISTAKE = "mask applied after softmax"  # the name mha.checks gives it, in every message
INSTRUCTOR = "mhat-lecturer"
# student -> (answers that differ from the solution, as in tests/test_classroom.py, the score
# tests/test_classroom.py expects for the same notebook there)
SCORES = {s: p for s, a, _, _, p in STUDENTS if a == ASSIGNMENT}
# right answers, and a line that kills nbgrader when `nbgrader autograde` runs the notebook
# (only then: the student's own validation runs it under their server, which it spares)
KILLS_THE_GRADER = '''
import os as _os, signal as _signal
if b"autograde" in open(f"/proc/{_os.getppid()}/cmdline", "rb").read():
    _os.kill(_os.getppid(), _signal.SIGKILL)
''' + solution_code(ROOT / "course", ASSIGNMENT, "causal")
KILLER = "mhat-kills"  # sorts before mhat-mistake and mhat-partly: nbgrader grades them after it
KILLED = "the grading process was killed while this submission ran"
CLASS = {
    "mhat-correct": ({}, SCORES["all_correct"]),
    "mhat-partly": (PARTLY, SCORES["partly_correct"]),
    "mhat-mistake": ({"masked_attention": MASK_AFTER_SOFTMAX}, SCORES["mask_after_softmax"]),
    KILLER: ({"causal": KILLS_THE_GRADER}, 0),
}
MAX_SCORE = 7

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def require_root():
    if os.geteuid() == 0:
        return
    reason = "the class test makes Unix users and runs JupyterHub as root: run it as root"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def make(target: str, **variables) -> subprocess.CompletedProcess:
    args = ["make", "--no-print-directory", target] + [f"{k}={v}" for k, v in variables.items()]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (
        f"make {target} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def free_ports(n: int) -> list[int]:
    """Free ports below Linux's ephemeral range (32768-60999), where kernels and clients get
    theirs: a port picked there can be taken by a new kernel before the hub binds it."""
    import random

    ports: list[int] = []
    while len(ports) < n:
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            if port not in ports and s.connect_ex(("127.0.0.1", port)) != 0:
                try:
                    s2 = socket.socket()
                    s2.bind(("127.0.0.1", port))
                    ports.append(port)
                except OSError:
                    pass
                finally:
                    s2.close()
    return ports


# -- processes and sockets -------------------------------------------------------------------

def all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def uid_of(pid: int) -> int | None:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except FileNotFoundError:
        return None


def alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def listening(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of ``pids`` holds."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            hexaddr, hexport = fields[1].split(":")
            raw = bytes.fromhex(hexaddr)
            # /proc/net stores each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            address = socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, raw)
            found.add((address, int(hexport, 16)))
    return found


def run_as(user: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), user=user, group=user, extra_groups=[], cwd="/",
                          capture_output=True, text=True, timeout=30)


# -- a running class -------------------------------------------------------------------------

class Classroom:
    """A roster, its accounts and a hub on loopback ports, under one temporary folder."""

    def __init__(self, users: dict[str, str]):
        self.users = users  # username -> role
        self.tmp = Path(tempfile.mkdtemp(prefix="mha-hub-test-", dir="/tmp"))
        self.tmp.chmod(0o755)  # the exchange inside must be reachable by every user
        self.state, self.exchange = self.tmp / "state", self.tmp / "exchange"
        self.roster = self.tmp / "roster.csv"
        with open(self.roster, "w", newline="") as f:  # names as "First<user> Last<user>"
            csv.writer(f).writerows([("username", "role", "first_name", "last_name"),
                                     *((u, r, f"First{u}", f"Last{u}") for u, r in users.items())])
        self.port, hub_port, api_port = free_ports(3)
        self.ports = {"public": self.port, "hub": hub_port, "proxy_api": api_port}
        self.vars = {"ROSTER": self.roster, "CLASS_STATE": self.state,
                     "CLASS_EXCHANGE": self.exchange, "CLASS_PORT": self.port,
                     "CLASS_HUB_PORT": hub_port, "CLASS_API_PORT": api_port}
        self.base = f"http://127.0.0.1:{self.port}"
        self.uids: dict[str, int] = {}
        self.hub_pid: int | None = None
        self.proxy_pid: int | None = None

    def start(self) -> None:
        stale = [u for u in self.users if _exists(u)]
        if stale:  # left by a run that was killed before its cleanup: ours only (marked)
            make("class-remove-accounts", ROSTER=self.roster)
        make("class-accounts", **self.vars)
        self.uids = {u: pwd.getpwnam(u).pw_uid for u in self.users}
        with open(self.state / "passwords.csv", newline="") as f:
            self.passwords = {r["username"]: r["password"] for r in csv.DictReader(f)}
        self.start_output = make("class-start", **self.vars).stdout
        self.hub_pid = int((self.state / "jupyterhub.pid").read_text())
        proxy = self.state / "proxy.pid"
        deadline = time.monotonic() + 10
        while not proxy.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.proxy_pid = int(proxy.read_text()) if proxy.exists() else None

    def processes(self) -> set[int]:
        """The hub, the proxy, and every process of the class's users."""
        pids = descendants(self.hub_pid) if self.hub_pid and alive(self.hub_pid) else set()
        if self.proxy_pid and alive(self.proxy_pid):
            pids |= descendants(self.proxy_pid)
        uids = set(self.uids.values())
        pids |= {p for p in all_pids() if uid_of(p) in uids and alive(p)}
        return pids

    def close(self) -> list[str]:
        """Stop and remove everything; returns what is left (empty when all went)."""
        for name in ("jupyterhub.pid", "proxy.pid"):  # also when start() failed half-way
            with contextlib.suppress(FileNotFoundError, ValueError):
                pid = int((self.state / name).read_text())
                if name == "jupyterhub.pid":
                    self.hub_pid = self.hub_pid or pid
                else:
                    self.proxy_pid = self.proxy_pid or pid
        with contextlib.suppress(AssertionError):
            make("class-stop", **self.vars)
        for pid in (self.hub_pid, self.proxy_pid):
            if pid and alive(pid):
                os.kill(pid, 9)
        if self.roster.exists():
            with contextlib.suppress(AssertionError):
                self.removal_output = make("class-remove-accounts", ROSTER=self.roster,
                                           CLASS_STATE=self.state,
                                           CLASS_EXCHANGE=self.exchange).stdout
        passwords, roster = self.state / "passwords.csv", self.state / "roster.csv"
        self.after_removal = {
            "passwords": passwords.read_text() if passwords.exists() else "",
            "roster": roster.read_text() if roster.exists() else "",
            "hub_users": hub_users(self.state / "jupyterhub.sqlite"),
            "exchange": sorted(str(p.relative_to(self.exchange)) for p in self.exchange.rglob("*"))
            if self.exchange.exists() else []}
        shutil.rmtree(self.tmp, ignore_errors=True)
        return self.leftovers()

    def leftovers(self) -> list[str]:
        left = [f"account {u}" for u in self.users if _exists(u)]
        left += [f"home of {u}" for u in self.users if Path("/home", u).exists()]
        left += [f"process {p} (uid {uid_of(p)})" for p in self.processes()]
        left += [f"folder {self.tmp}"] if self.tmp.exists() else []
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", self.port)) == 0:
                left.append(f"something still listens on port {self.port}")
        return left


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@contextlib.contextmanager
def running_class(users: dict[str, str]):
    room = Classroom(users)
    try:
        room.start()
        yield room
    finally:
        room.left = room.close()


# -- talking to the hub as a person --------------------------------------------------------

class Person:
    """One browser's worth of cookies: login, own server, its REST APIs."""

    def __init__(self, room: Classroom, name: str):
        import requests

        self.room, self.name = room, name
        self.http = requests.Session()
        self.server = f"{room.base}/user/{name}"

    def login(self, password: str):
        """POST the login form (with the hub's _xsrf); returns the response (302 on success)."""
        self.http.get(f"{self.room.base}/hub/login")
        form = {"username": self.name, "password": password,
                "_xsrf": self.cookie("_xsrf", "/hub/")}
        return self.http.post(f"{self.room.base}/hub/login", data=form, allow_redirects=False)

    def cookie(self, name: str, path: str) -> str | None:
        for c in self.http.cookies:
            if c.name == name and c.path.rstrip("/") == path.rstrip("/"):
                return c.value
        return None

    def spawn(self) -> None:
        """Ask the hub to start this person's server (it starts in the background)."""
        self.spawned = time.monotonic()
        self.http.get(f"{self.room.base}/hub/spawn/{self.name}", allow_redirects=False)

    def open_server(self, timeout: float = 90) -> float:
        """Wait for the server and go through the OAuth handshake; returns the seconds since
        the spawn."""
        if not hasattr(self, "spawned"):
            self.spawn()
        start = self.spawned
        while time.monotonic() - start < timeout:
            r = self.http.get(f"{self.server}/lab")
            if r.status_code == 200 and r.url.rstrip("/").endswith(f"/user/{self.name}/lab"):
                return time.monotonic() - start
            time.sleep(0.3)
        raise AssertionError(f"{self.name}'s server did not open within {timeout} s")

    def get(self, path: str, **kwargs):
        return self.http.get(f"{self.server}/{path}", **kwargs)

    def post(self, path: str, data=None, json_body=None):
        """Cookie-authenticated POSTs need the server's _xsrf cookie echoed in X-XSRFToken."""
        headers = {"X-XSRFToken": self.cookie("_xsrf", f"/user/{self.name}/") or ""}
        return self.http.post(f"{self.server}/{path}", data=data, json=json_body,
                              headers=headers, timeout=300)

    def put(self, path: str, body):
        headers = {"X-XSRFToken": self.cookie("_xsrf", f"/user/{self.name}/") or ""}
        return self.http.put(f"{self.server}/{path}", json=body, headers=headers, timeout=60)

    # nbgrader's assignment list (the student's side)
    def assignments(self) -> list[dict]:
        r = self.get("assignments", params={"course_id": COURSE_ID})
        assert r.status_code == 200, r.text[:500]
        body = r.json()
        assert body["success"], body["value"]
        return body["value"]

    def action(self, action: str) -> list[dict]:
        """fetch / submit / fetch_feedback. They answer 200 even when they fail: the caller
        checks the returned list."""
        r = self.post(f"assignments/{action}",
                      data={"course_id": COURSE_ID, "assignment_id": ASSIGNMENT})
        assert r.status_code == 200, r.text[:500]
        body = r.json()
        assert body["success"], body.get("value")
        return body["value"]

    def formgrader(self, path: str) -> dict:
        r = self.post(f"formgrader/api/{path}")
        assert r.status_code == 200, (path, r.status_code, r.text[:500])
        body = r.json()
        assert body["success"], (path, body.get("error") or body)
        return body


def entry(listing: list[dict], status: str) -> dict:
    found = [a for a in listing if a["assignment_id"] == ASSIGNMENT and a["status"] == status]
    seen = [(a["assignment_id"], a["status"]) for a in listing]
    assert found, f"no {status} {ASSIGNMENT} in {seen}"
    return found[0]


def answered(nb: dict, replace: dict) -> dict:
    """The fetched notebook (contents API JSON) with its answer cells filled in."""
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            grade_id = meta["grade_id"]
            if grade_id in replace:
                if replace[grade_id] is not None:
                    cell["source"] = replace[grade_id].strip("\n")
            else:
                cell["source"] = solution_code(ROOT / "course", ASSIGNMENT, grade_id)
    return nb


def work_on_it(student: Person, replace: dict, fetch: bool = True) -> dict:
    """Fetch (unless fetched already), answer through the contents API, validate, submit;
    returns what happened."""
    fetched = entry(student.action("fetch") if fetch else student.assignments(), "fetched")
    (notebook,) = [n for n in fetched["notebooks"] if n["notebook_id"] == ASSIGNMENT]
    path = notebook["path"]
    r = student.get(f"api/contents/{path}", params={"content": 1})
    assert r.status_code == 200, r.text[:300]
    model = r.json()
    as_fetched = json.loads(json.dumps(model["content"]))
    model["content"] = answered(model["content"], replace)
    r = student.put(f"api/contents/{path}", {"type": "notebook", "format": "json",
                                             "content": model["content"]})
    assert r.status_code == 200, r.text[:300]
    r = student.post("assignments/validate", data={"path": path})
    assert r.status_code == 200, r.text[:300]
    validation = r.json()
    submitted = entry(student.action("submit"), "submitted")
    return {"path": path, "validation": validation, "submitted": submitted,
            "fetched": as_fetched}


@pytest.fixture(scope="module")
def hub_class():
    require_root()
    start = time.monotonic()
    make("class-env")
    env_seconds = time.monotonic() - start
    users = {INSTRUCTOR: "instructor", **{s: "student" for s in CLASS}}
    with running_class(users) as room:
        t0 = time.monotonic()
        people = {name: Person(room, name) for name in users}
        logins = {name: p.login(room.passwords[name]) for name, p in people.items()}
        for p in people.values():
            p.spawn()  # all start at once, as in a class
        opened = {name: p.open_server() for name, p in people.items()}
        t_servers = time.monotonic() - t0

        teacher = people[INSTRUCTOR]
        teacher.formgrader(f"assignment/{ASSIGNMENT}/assign")
        teacher.formgrader(f"assignment/{ASSIGNMENT}/release")
        released = {s: entry(people[s].assignments(), "released") for s in CLASS}
        work = {s: work_on_it(people[s], replace) for s, (replace, _) in CLASS.items()}
        teacher.formgrader(f"assignment/{ASSIGNMENT}/collect")
        autograde_all = make("class-autograde", ROSTER=room.roster, ASSIGNMENT=ASSIGNMENT,
                             CLASS_STATE=room.state)  # every submission in one action
        teacher.formgrader(f"assignment/{ASSIGNMENT}/generate_feedback")
        teacher.formgrader(f"assignment/{ASSIGNMENT}/release_feedback")
        feedback = {}
        for s in CLASS:
            got = entry(people[s].action("fetch_feedback"), "submitted")
            feedback[s] = got
        t_flow = time.monotonic() - t0 - t_servers
        print(f"\nclass-env {env_seconds:.1f} s; {len(users)} logins and servers {t_servers:.1f} s "
              f"(ready after {', '.join(f'{v:.1f}' for v in opened.values())} s); "
              f"release to feedback {t_flow:.1f} s")
        yield {"room": room, "people": people, "logins": logins, "released": released,
               "work": work, "feedback": feedback, "autograde_all": autograde_all}
    assert room.left == [], f"the class left behind: {room.left}"


# -- the flow --------------------------------------------------------------------------------

def test_everyone_logs_in_with_their_own_password(hub_class):
    for name, response in hub_class["logins"].items():
        assert response.status_code == 302, (name, response.status_code)


def test_each_server_runs_as_its_own_unix_user(hub_class):
    room = hub_class["room"]
    for name, uid in room.uids.items():
        servers = [p for p in room.processes() if uid_of(p) == uid
                   and b"jupyterhub-singleuser" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert servers, f"no server process of {name}"


def test_every_student_sees_the_released_set(hub_class):
    for student, item in hub_class["released"].items():
        assert item["course_id"] == COURSE_ID, student


def test_the_fetched_notebook_lives_in_the_students_home(hub_class):
    for student, work in hub_class["work"].items():
        path = Path("/home", student, work["path"])
        assert path.is_file() and path.stat().st_uid == hub_class["room"].uids[student], path


def test_the_fetched_set_has_no_launch_cells_and_asks_to_run_the_imports_only(hub_class):
    """The walkthrough: the set released on the hub showed the Colab/Binder line and the
    install cell (classroom/nbgrader_config.py turns on course/class_copy.py's ClassHubCopy)."""
    for student, work in hub_class["work"].items():
        cells = work["fetched"]["cells"]
        tags = {t for c in cells for t in c["metadata"].get("tags", [])}
        assert not tags & {"launch-header", "launch-install"}, student
        text = "\n".join("".join(c["source"]) for c in cells)
        assert "colab.research.google.com" not in text and "install cell" not in text, student
        assert "First run the code cell below: the imports." in text, student


def test_validation_passes_only_the_correct_notebook(hub_class):
    results = {s: w["validation"] for s, w in hub_class["work"].items()}
    assert all(r["success"] for r in results.values()), results
    # nbgrader's Validator: {} when every test passes, {"failed": [...]} otherwise
    passed = {s: r["value"] == {} for s, r in results.items()}
    assert passed == {"mhat-correct": True, "mhat-partly": False, "mhat-mistake": False,
                      KILLER: True}, results


def test_validation_names_the_known_mistake(hub_class):
    value = hub_class["work"]["mhat-mistake"]["validation"]["value"]
    assert MISTAKE in json.dumps(value), value


def test_submissions_land_in_the_exchange_under_each_student(hub_class):
    inbound = hub_class["room"].exchange / COURSE_ID / "inbound"
    owners = {p.name.split("+")[0] for p in inbound.iterdir()}
    assert owners == set(CLASS)


def test_the_gradebook_holds_the_expected_scores(hub_class):
    from nbgrader.api import Gradebook

    db = Path("/home", INSTRUCTOR, "mha-course", "gradebook.db")
    with Gradebook(f"sqlite:///{db}") as gb:
        scores = {s: gb.find_submission(ASSIGNMENT, s).score for s in CLASS}
        max_score = gb.find_assignment(ASSIGNMENT).max_score
    assert max_score == MAX_SCORE
    assert scores == {s: expected for s, (_, expected) in CLASS.items()}


def feedback_text(hub_class, student: str) -> str:
    """The student's fetched feedback HTML as text, read through their own server."""
    latest = hub_class["feedback"][student]["submissions"][-1]
    (notebook,) = latest["notebooks"]
    assert notebook["has_local_feedback"], latest
    path = notebook["local_feedback_path"]  # relative to the server's root, the student's home
    if os.path.isabs(path):
        path = os.path.relpath(path, Path("/home", student))
    r = hub_class["people"][student].get(f"api/contents/{quote(path)}", params={"content": 1})
    assert r.status_code == 200, (path, r.url, r.status_code)
    return html.unescape(re.sub(r"<[^>]+>", "", r.json()["content"]))


def test_each_student_fetches_feedback_with_their_score(hub_class):
    for student, (_, expected) in CLASS.items():
        text = feedback_text(hub_class, student)
        assert re.search(rf"Score:\s*{expected}(\.0)?\s*/\s*{MAX_SCORE}", text), student


def test_the_feedback_names_the_mistake_where_there_was_one(hub_class):
    assert MISTAKE in feedback_text(hub_class, "mhat-mistake")
    assert MISTAKE not in feedback_text(hub_class, "mhat-correct")
    assert MISTAKE not in feedback_text(hub_class, "mhat-partly")


# -- isolation -------------------------------------------------------------------------------

def test_a_students_cookie_gets_403_on_another_students_server(hub_class):
    people = hub_class["people"]
    mallory = people["mhat-partly"]
    for page in ("api/contents", "lab"):
        r = mallory.http.get(f"{hub_class['room'].base}/user/mhat-correct/{page}")
        assert r.status_code == 403, (page, r.status_code, r.url)


def test_a_students_cookie_gets_403_on_the_instructors_server(hub_class):
    mallory = hub_class["people"]["mhat-partly"]
    for page in ("api/contents", "formgrader/api/status", "lab"):
        r = mallory.http.get(f"{hub_class['room'].base}/user/{INSTRUCTOR}/{page}")
        assert r.status_code == 403, (page, r.status_code, r.url)


def test_class_start_prints_the_address_people_open(hub_class):
    room = hub_class["room"]
    assert f"open http://127.0.0.1:{room.port}/ and log in" in room.start_output
    assert f":{room.ports['hub']}/" not in room.start_output.split("the hub is up")[-1]


def test_one_action_autogrades_every_submission(hub_class):
    out = hub_class["autograde_all"].stdout + hub_class["autograde_all"].stderr
    for student in CLASS:
        assert f"Autograding submission: {student}" in out or student in out, out[-2000:]


def test_the_killer_is_graded_before_some_of_the_others():
    """nbgrader grades in the order of the student ids: without a restart, these would be left."""
    assert [s for s in sorted(CLASS) if s > KILLER]


def test_the_grading_goes_on_after_the_submission_that_killed_it(hub_class):
    out = hub_class["autograde_all"].stdout + hub_class["autograde_all"].stderr
    killed = f"nbgrader died (status -9) while grading {KILLER}/{ASSIGNMENT}"
    assert killed in out, out[-3000:]
    after = out.split(killed, 1)[1]
    for student in sorted(CLASS):
        if student > KILLER:
            assert re.search(rf"Sanitizing \S*submitted/{student}/{ASSIGNMENT}", after), \
                (student, after[-3000:])


def test_the_submission_that_killed_the_grader_is_recorded_with_0_for_review(hub_class):
    from nbgrader.api import Gradebook

    db = Path("/home", INSTRUCTOR, "mha-course", "gradebook.db")
    with Gradebook(f"sqlite:///{db}") as gb:
        submission = gb.find_submission(ASSIGNMENT, KILLER)
        grades = [g for nb in submission.notebooks for g in nb.grades]
        comments = [c.auto_comment or "" for nb in submission.notebooks for c in nb.comments]
        score = submission.score
    assert score == 0 and grades and all(g.needs_manual_grade for g in grades)
    assert any(KILLED in c for c in comments), comments


def test_the_autograde_summary_says_the_killer_got_0_for_review_and_why(hub_class):
    lines = hub_class["autograde_all"].stdout.strip().splitlines()
    assert lines[-1].startswith(
        f"{ASSIGNMENT}: 3 submissions autograded, 1 recorded with 0 points for review "
        f"({KILLER}: {KILLED}), 0 failed; "), lines[-1]


def test_the_killers_feedback_says_the_grading_process_was_killed(hub_class):
    assert KILLED in feedback_text(hub_class, KILLER)


def test_the_formgrader_lists_students_by_their_roster_names(hub_class):
    teacher = hub_class["people"][INSTRUCTOR]
    r = teacher.get("formgrader/api/students")
    assert r.status_code == 200, r.text[:300]
    names = {s["id"]: (s["first_name"], s["last_name"]) for s in r.json()}
    for student in CLASS:
        assert names.get(student) == (f"First{student}", f"Last{student}"), names


def test_jupyterlab_may_frame_the_instructors_formgrader(hub_class):
    teacher = hub_class["people"][INSTRUCTOR]
    csp = teacher.get("formgrader").headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'self'" in csp, csp


def test_students_servers_still_refuse_to_be_framed(hub_class):
    student = hub_class["people"][next(iter(CLASS))]
    csp = student.get("lab").headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'none'" in csp, csp


def test_every_student_finds_the_lessons_in_their_home(hub_class):
    for student in CLASS:
        listing = hub_class["people"][student].get("api/contents/").json()["content"]
        names = {item["name"] for item in listing}
        assert {"00_start_here.ipynb", "04_masks.ipynb"} <= names, sorted(names)


def test_the_exercises_link_to_its_lesson_resolves(hub_class):
    student = next(iter(CLASS))
    work = hub_class["work"][student]
    folder = work["path"].rsplit("/", 1)[0]
    lesson = f"{folder}/../04_masks.ipynb".lstrip("/")
    r = hub_class["people"][student].get(f"api/contents/{lesson}", params={"content": 0})
    assert r.status_code == 200, (lesson, r.status_code)


def test_the_lessons_link_to_its_exercise_set_resolves_once_fetched(hub_class):
    student = next(iter(CLASS))
    person = hub_class["people"][student]
    lesson = person.get("api/contents/04_masks.ipynb").json()["content"]
    text = "".join("".join(c["source"]) for c in lesson["cells"] if c["cell_type"] == "markdown")
    (target,) = set(re.findall(r"\]\((ex04_masks/[^)]+\.ipynb)\)", text))
    r = person.get(f"api/contents/{target}", params={"content": 0})
    assert r.status_code == 200, (target, r.status_code)


def test_students_have_no_formgrader_of_their_own(hub_class):
    r = hub_class["people"]["mhat-partly"].get("formgrader/api/status")
    assert r.status_code == 404, r.status_code


def test_a_wrong_password_gets_403(hub_class):
    someone = Person(hub_class["room"], "mhat-correct")
    assert someone.login("not-the-password").status_code == 403


def test_a_students_password_does_not_log_in_as_another_student(hub_class):
    room = hub_class["room"]
    intruder = Person(room, "mhat-correct")
    assert intruder.login(room.passwords["mhat-partly"]).status_code == 403


def test_homes_are_not_readable_by_other_students(hub_class):
    work = hub_class["work"]
    for home in (Path("/home", "mhat-correct"), Path("/home", INSTRUCTOR)):
        assert home.stat().st_mode & 0o777 == 0o700, home
    r = run_as("mhat-partly", "ls", "/home/mhat-correct")
    assert r.returncode != 0 and "Permission denied" in r.stderr
    r = run_as("mhat-partly", "cat", str(Path("/home/mhat-correct", work["mhat-correct"]["path"])))
    assert r.returncode != 0 and "Permission denied" in r.stderr
    r = run_as("mhat-partly", "cat", f"/home/{INSTRUCTOR}/mha-course/gradebook.db")
    assert r.returncode != 0 and "Permission denied" in r.stderr


def test_only_127_0_0_1_is_listened_on(hub_class):
    room = hub_class["room"]
    sockets = listening(room.processes())
    assert set(room.ports.values()) <= {port for _, port in sockets}, sockets
    assert {address for address, _ in sockets} == {"127.0.0.1"}, sockets


# -- cleanup -------------------------------------------------------------------------------

def hub_users(database: Path) -> list[str]:
    """The user names in the hub's database (read only)."""
    if not database.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        return sorted(name for (name,) in db.execute("SELECT name FROM users"))


def test_removing_the_accounts_removes_what_they_owned_in_the_exchange_and_their_passwords():
    require_root()
    make("class-env")
    users = {"mhat-y-lecturer": "instructor", "mhat-y-student": "student"}
    with running_class(users) as room:
        course = room.exchange / "mha-course" / "inbound" / "mhat-y-student+ex04+2026"
        course.mkdir(parents=True)
        (course / "ex04.ipynb").write_text("{}")
        for path, who in ((room.exchange / "mha-course", "mhat-y-lecturer"),
                          (room.exchange / "mha-course" / "inbound", "mhat-y-lecturer"),
                          (course, "mhat-y-student"), (course / "ex04.ipynb", "mhat-y-student")):
            os.chown(path, room.uids[who], room.uids[who])
    assert room.left == [], room.left
    assert room.after_removal["exchange"] == [], room.after_removal
    assert "mhat-y-" not in room.after_removal["passwords"], room.after_removal["passwords"]
    assert "mhat-y-" not in room.after_removal["roster"], room.after_removal["roster"]
    assert not [u for u in room.after_removal["hub_users"] if u.startswith("mhat-y-")], \
        room.after_removal["hub_users"]
    assert "removed (it belonged to a removed account)" in room.removal_output


def test_a_failing_step_still_removes_everything():
    require_root()
    make("class-env")
    users = {"mhat-x-lecturer": "instructor", "mhat-x-student": "student"}
    with pytest.raises(RuntimeError, match="a step fails"):
        with running_class(users) as room:
            student = Person(room, "mhat-x-student")
            assert student.login(room.passwords["mhat-x-student"]).status_code == 302
            student.open_server()
            assert room.processes()
            raise RuntimeError("a step fails")
    assert room.left == []


def test_an_existing_instructors_course_files_are_refreshed_and_their_work_kept():
    """An instructor account made before a change of course/nbgrader_config.py or
    course/class_copy.py kept its stale copies in ~/mha-course (the README said to copy them
    by hand). Running `make class-accounts` again (and `make class-start`, which runs the same
    refresh) brings the project's files up to date, as the instructor's own files, keeping a
    changed one as NAME.old; their sets, submissions and gradebook stay as they were."""
    require_root()
    name = "mhat-r-lecturer"
    room = Classroom({name: "instructor"})
    try:
        make("class-accounts", **room.vars)
        entry = pwd.getpwnam(name)
        home = Path(entry.pw_dir)
        course = home / "mha-course"
        stale = "# the course's nbgrader config as it was, without ClassHubCopy\n"
        (course / "nbgrader_config.py").write_text(stale)
        (course / "class_copy.py").unlink()
        own = {course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb": "the instructor's edit",
               course / "source" / ASSIGNMENT / "notes.md": "mine",
               course / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb": "ada's",
               course / "gradebook.db": "grades"}
        for path, text in own.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for path in [course, *course.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
        out = make("class-accounts", **room.vars).stdout
        for module in (ROOT / "course").glob("*.py"):
            copy = course / module.name
            assert copy.read_text() == module.read_text(), (module.name, out)
            assert copy.stat().st_uid == entry.pw_uid
        assert (home / "nbgrader_config.py").read_text() == (
            ROOT / "classroom" / "instructor_nbgrader_config.py").read_text()
        assert (course / "nbgrader_config.py.old").read_text() == stale
        assert {path: path.read_text() for path in own} == own
        assert "~/mha-course/class_copy.py: added" in out, out
        again = make("class-accounts", **room.vars).stdout
        assert "0 course file(s) refreshed" in again, again
    finally:
        left = room.close()
    assert left == []


def test_class_start_refreshes_the_instructors_course_files():
    recipe = (ROOT / "Makefile").read_text().split("\nclass-start:")[1].split("\n\n")[0]
    assert 'classroom/accounts.py refresh "$(CLASS_STATE)/roster.csv"' in recipe
    assert recipe.index("accounts.py refresh") < recipe.index("jupyterhub\" -f")


# -- the Kubernetes path (Zero to JupyterHub values; no cluster here) -------------------------

K8S = ROOT / "classroom" / "k8s"


@pytest.fixture(scope="module")
def values():
    import yaml

    return yaml.safe_load((K8S / "values.yaml").read_text())


def test_helm_values_use_the_charts_top_level_sections_only(values):
    assert set(values) <= {"hub", "proxy", "singleuser", "cull", "scheduling", "prePuller",
                           "ingress", "debug", "global", "custom", "imagePullSecret"}


def test_helm_values_python_compiles(values):
    for name, source in values["hub"]["extraConfig"].items():
        compile(source, name, "exec")


# What classroom/class_env.py's configure step reads, relative to the repository
CONFIGURE_READS = re.compile(r'(HERE|ROOT) / "([^"]+)"')


def test_the_class_image_runs_class_envs_configure_on_its_environment():
    """On one machine class_env.py configures the hub's venv (role configs, lab settings,
    custom.css, the Formgrader's stylesheet and scripts, nbgrader's config and lab-extension
    edits); the Kubernetes image had none of it. Its Dockerfile runs the same step on
    repo2docker's environment, with every file that step reads copied in."""
    import inspect

    sys.path.insert(0, str(ROOT / "classroom"))
    import class_env

    text = (K8S / "Dockerfile").read_text()
    steps = " ".join(text.replace("\\\n", " ").split("\n"))
    assert re.search(r"RUN python /tmp/mha-class/classroom/class_env\.py\s+--configure ", steps)
    copied = re.findall(r"^COPY (?:--chown=\S+ )?(.+) (\S+)$", text, re.M)
    sources = {src for line, _ in copied for src in line.split()}
    assert "classroom" in sources  # HERE: every classroom/ file configure reads
    for base, name in CONFIGURE_READS.findall(inspect.getsource(class_env.configure)):
        if base == "ROOT":
            top = name.split("/")[0]
            assert any(src.startswith(top) for src in sources), (name, sources)
    # the lessons and the two tools configure copies from ROOT
    assert "notebooks/[0-9][0-9]_*.ipynb" in sources
    assert {"tools/course_autograde.py", "tools/course_collect.py"} <= sources


def test_the_class_images_configure_step_runs_with_only_the_files_it_copies(tmp_path):
    """The Dockerfile's COPY lines, then its RUN line, on a stand-in of repo2docker's
    environment: the step finds every file it reads and leaves what one machine gets."""
    import glob

    import nbgrader

    text = (K8S / "Dockerfile").read_text()
    build = tmp_path / "build"
    for line, dest in re.findall(r"^COPY (?:--chown=\S+ )?(.+) (\S+)$", text, re.M):
        target = build / dest.removeprefix("/tmp/mha-class").strip("/")
        for src in line.split():
            for path in map(Path, glob.glob(str(ROOT / src))):
                if path.is_dir():
                    shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, target / path.name)
    env = tmp_path / "srv" / "conda" / "envs" / "notebook"
    site = env / "lib" / "python3.11" / "site-packages"
    static = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static"
    for rel in ("css/nbgrader.css", "js/utils.js"):
        dest = site / "nbgrader" / "server_extensions" / "formgrader" / "static" / rel
        dest.parent.mkdir(parents=True)
        shutil.copy(static / rel, dest)
    (site / "jupyter_server" / "static").mkdir(parents=True)
    done = subprocess.run([sys.executable, str(build / "classroom" / "class_env.py"),
                           "--configure", str(env)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    etc = env / "etc"
    assert (etc / "jupyter" / "nbgrader_config.py").read_text() == (
        ROOT / "classroom" / "nbgrader_config.py").read_text()
    for role in ("student", "instructor"):
        assert (etc / f"jupyter-{role}" / "jupyter_server_config.json").exists()
    assert (etc / "jupyter-student" / "lab-settings" / "overrides.json").exists()
    assert (env / "share" / "jupyter" / "lab" / "settings" / "overrides.json").exists()
    assert (site / "jupyter_server" / "static" / "custom" / "custom.css").read_text() == (
        ROOT / "classroom" / "notebook-outputs.css").read_text()
    sheet = (site / "nbgrader" / "server_extensions" / "formgrader" / "static" / "css"
             / "nbgrader.css").read_text()
    utils = (site / "nbgrader" / "server_extensions" / "formgrader" / "static" / "js"
             / "utils.js").read_text()
    assert "/*mha: the Formgrader's tables fit its tab*/" in sheet
    assert "/*mha: names in the Formgrader's tables break" in utils and '" Unrelease"' in utils
    assert sorted(p.name for p in (env / "share" / "mha-course" / "lessons").iterdir()) == sorted(
        p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_helm_values_leave_the_role_configs_to_the_image(values):
    """The values mounted a second, partial copy of the student config (no custom.css, no
    lab settings) and none for the instructor; the image carries both now, as one machine's."""
    assert "extraFiles" not in values["singleuser"]
    text = (K8S / "values.yaml").read_text()
    assert "/etc/jupyter-student\"" not in text


def test_helm_values_put_the_exchange_on_the_shared_volume(values):
    import yaml

    single = values["singleuser"]
    (mount,) = single["storage"]["extraVolumeMounts"]
    assert mount["mountPath"] == single["extraEnv"]["MHA_CLASS_EXCHANGE"]
    (volume,) = single["storage"]["extraVolumes"]
    claim = yaml.safe_load((K8S / "exchange-pvc.yaml").read_text())
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_the_role_hook_gives_each_role_the_images_config_folder(values):
    """Students get the config that turns the formgrader off, the instructor the one that lets
    JupyterLab frame it: the folders class_env.py's configure installs in the environment."""
    namespace = {"c": type("Config", (), {"KubeSpawner": type("K", (), {})()})()}
    exec(values["hub"]["extraConfig"]["mha-roles"], namespace)
    hook = namespace["c"].KubeSpawner.pre_spawn_hook

    def spawned(name):
        spawner = type("Spawner", (), {})()
        spawner.user = type("User", (), {"name": name})()
        spawner.environment = {}
        hook(spawner)
        return spawner.environment

    env = "/srv/conda/envs/notebook"  # repo2docker's environment, where the image configures
    assert spawned("ada") == {"JUPYTER_CONFIG_PATH": f"{env}/etc/jupyter-student"}
    assert spawned(namespace["INSTRUCTOR"]) == {
        "JUPYTER_CONFIG_PATH": f"{env}/etc/jupyter-instructor"}
    source = (ROOT / "classroom" / "class_env.py").read_text()
    assert 'etc / "jupyter-student"' in source and 'etc / "jupyter-instructor"' in source


def test_the_class_image_adds_nbgrader_to_the_binder_image():
    text = (K8S / "Dockerfile").read_text()
    assert "repo2docker" in text and "nbgrader>=0.9.6,<0.10" in text


def test_class_start_refuses_a_second_hub_on_the_same_state(tmp_path):
    """A second hub would fail on the ports and leave a pid file naming a dead process."""
    pid_file = tmp_path / "jupyterhub.pid"
    pid_file.write_text(str(os.getpid()))  # a live process stands in for the running hub
    wait = [sys.executable, str(ROOT / "classroom" / "wait_for_hub.py"), "--idle", str(pid_file)]
    proc = subprocess.run(wait, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "already running" in proc.stderr
    pid_file.unlink()
    assert subprocess.run(wait, timeout=30).returncode == 0


# -- the hub's configuration, loaded without starting anything ---------------------------------

def hub_config(monkeypatch, tmp_path, **env):
    """classroom/jupyterhub_config.py loaded into a traitlets Config with these variables."""
    from traitlets.config import Config

    roster = tmp_path / "roster.csv"
    roster.write_text("username,role\nlecturer,instructor\nada,student\n")
    for key, value in {"MHA_CLASS_ROSTER": str(roster), **env}.items():
        monkeypatch.setenv(key, value)
    config = Config()
    path = ROOT / "classroom" / "jupyterhub_config.py"
    exec(compile(path.read_text(), str(path), "exec"),
         {"get_config": lambda: config, "__file__": str(path)})
    return config


def test_the_hub_listens_on_loopback_by_default(monkeypatch, tmp_path):
    config = hub_config(monkeypatch, tmp_path)
    assert config.JupyterHub.bind_url == "http://127.0.0.1:8000/"
    assert config.JupyterHub.hub_ip == "127.0.0.1" and config.Spawner.ip == "127.0.0.1"


def test_the_public_switch_refuses_to_start_without_a_certificate(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="MHA_CLASS_SSL_CERT"):
        hub_config(monkeypatch, tmp_path, MHA_CLASS_PUBLIC="1")


def test_the_public_switch_serves_https_on_every_interface(monkeypatch, tmp_path):
    config = hub_config(monkeypatch, tmp_path, MHA_CLASS_PUBLIC="1", MHA_CLASS_PORT="443",
                        MHA_CLASS_SSL_CERT="/etc/ssl/hub.pem", MHA_CLASS_SSL_KEY="/etc/ssl/hub.key")
    assert config.JupyterHub.bind_url == "https://0.0.0.0:443/"
    assert config.JupyterHub.ssl_cert == "/etc/ssl/hub.pem"


def test_the_hub_config_refuses_a_roster_without_one_instructor(monkeypatch, tmp_path):
    roster = tmp_path / "two.csv"
    roster.write_text("username,role\nann,instructor\nbob,instructor\n")
    with pytest.raises(SystemExit, match="exactly one instructor"):
        hub_config(monkeypatch, tmp_path, MHA_CLASS_ROSTER=str(roster))


def test_a_hub_that_cannot_start_leaves_nothing_behind():
    """The hub starts the proxy, then fails on its own port (taken here) and exits: class-start
    fails at once with the hub's log, and the proxy it left is stopped too."""
    require_root()
    make("class-env")
    room = Classroom({"mhat-y-lecturer": "instructor", "mhat-y-student": "student"})
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", room.ports["hub"]))
        squatter.listen()
        start = time.monotonic()
        try:
            with pytest.raises(AssertionError, match="make class-start failed"):
                room.start()
            seconds = time.monotonic() - start
        finally:
            left = room.close()
    assert left == []
    assert room.proxy_pid is not None and not alive(room.proxy_pid)  # it had started
    assert seconds < 60, f"class-start took {seconds:.0f} s to give up"
