"""JupyterHub for one class on one machine (JupyterHub 6.1, see classroom/README.md).

The hub runs as root from the class environment (`make class-env`: a venv made from
/usr/bin/python3, so every user can run it) and starts one Jupyter server per person,
as that person's own Unix user (LocalProcessSpawner). People log in with their Unix
password (PAM); classroom/accounts.py makes the accounts from a roster and gives each one
its own random password. The instructor's server also runs nbgrader's formgrader
("one class, one grader"); the students' servers have only the assignment list.

Settings come from the environment (`make class-start` sets them):

  MHA_CLASS_ROSTER     roster CSV (username,role): who may log in, who is the instructor
  MHA_CLASS_STATE      folder for the hub's database, cookie secret and proxy token (root only)
  MHA_CLASS_EXCHANGE   nbgrader's exchange root (mode 1777), default /srv/nbgrader/exchange
  MHA_CLASS_PORT       the port people connect to (default 8000)
  MHA_CLASS_HUB_PORT, MHA_CLASS_API_PORT   internal ports of the hub and the proxy's API
                       (default 8081 and 8001, always on 127.0.0.1)

Loopback only by default: everything listens on 127.0.0.1, right for a test or for a
reverse proxy (nginx, Caddy) on the same machine that terminates HTTPS.

A real deployment that people reach directly: MHA_CLASS_PUBLIC=1, with MHA_CLASS_SSL_CERT
and MHA_CLASS_SSL_KEY (PEM files, e.g. from Let's Encrypt). The hub then serves HTTPS on
every interface at MHA_CLASS_PORT (443 is the usual choice). It refuses to listen on a
public address without a certificate: passwords must never cross the network in clear text.
"""

import csv
import json
import os
import pwd
import subprocess
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

ENV = sys.prefix  # the class environment the hub runs from
PREFIX = os.path.dirname(ENV)
STATE = os.environ.get("MHA_CLASS_STATE", "/srv/mha-classroom")
EXCHANGE = os.environ.get("MHA_CLASS_EXCHANGE", "/srv/nbgrader/exchange")
PORT = int(os.environ.get("MHA_CLASS_PORT", "8000"))
PUBLIC = os.environ.get("MHA_CLASS_PUBLIC", "0") == "1"


def read_roster(path):
    """{username: role} from a CSV with the columns username and role (instructor|student),
    and optionally first_name and last_name (NAMES)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("username", "").strip()]
    roster = {r["username"].strip(): r.get("role", "student").strip() for r in rows}
    NAMES.update({r["username"].strip(): ((r.get("first_name") or "").strip(),
                                          (r.get("last_name") or "").strip()) for r in rows})
    instructors = [u for u, role in roster.items() if role == "instructor"]
    if len(instructors) != 1:
        raise SystemExit(f"{path}: the roster needs exactly one instructor, found {instructors}")
    return roster


NAMES = {}  # username -> (first name, last name), "" where the roster has none
ROSTER = read_roster(os.environ.get("MHA_CLASS_ROSTER", os.path.join(STATE, "roster.csv")))
(INSTRUCTOR,) = [u for u, role in ROSTER.items() if role == "instructor"]

# -- where people connect ------------------------------------------------------------------
if PUBLIC:
    cert, key = os.environ.get("MHA_CLASS_SSL_CERT"), os.environ.get("MHA_CLASS_SSL_KEY")
    if not (cert and key):
        raise SystemExit("MHA_CLASS_PUBLIC=1 needs MHA_CLASS_SSL_CERT and MHA_CLASS_SSL_KEY")
    c.JupyterHub.bind_url = f"https://0.0.0.0:{PORT}/"
    c.JupyterHub.ssl_cert = cert
    c.JupyterHub.ssl_key = key
    c.JupyterHub.cookie_options = {"secure": True}
else:
    c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}/"

# The hub's own API and the proxy's API never leave the machine.
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("MHA_CLASS_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('MHA_CLASS_API_PORT', '8001')}"
chp = os.path.join(PREFIX, "proxy", "node_modules", ".bin", "configurable-http-proxy")
c.ConfigurableHTTPProxy.command = [chp if os.path.exists(chp) else "configurable-http-proxy"]
c.ConfigurableHTTPProxy.pid_file = os.path.join(STATE, "proxy.pid")

c.JupyterHub.db_url = "sqlite:///" + os.path.join(STATE, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(STATE, "jupyterhub.pid")  # make class-stop reads it
# Stop every server and the proxy when the hub stops (make class-stop).
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# -- who may log in ------------------------------------------------------------------------
# PAM: each person's own Unix password. (SharedPasswordAuthenticator also works, but with one
# password for everyone anybody can log in as anybody else.) The hub never creates Unix users:
# classroom/accounts.py does.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = set(ROSTER)
# A user in the hub's database whose Unix account is gone (removed by hand, not by
# `make class-remove-accounts`, which also deletes them there) is deleted at start, not kept.
c.Authenticator.delete_invalid_users = True
c.Authenticator.admin_users = set()  # nobody may enter another person's server

# -- each person's server --------------------------------------------------------------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [os.path.join(ENV, "bin", "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
c.Spawner.environment = {
    # nbgrader runs `alembic` to create the gradebook: the environment's bin comes first.
    "PATH": os.path.join(ENV, "bin") + ":/usr/local/bin:/usr/bin:/bin",
    "MHA_CLASS_EXCHANGE": EXCHANGE,
}


STUDENT_START = "/lab/tree/00_start_here.ipynb"  # copied to each student's home at login
# The instructor's JupyterLab opens with the Formgrader tab (nbgrader's lab extension opens it
# for this query, its own route), not an empty Launcher beside mha-course/ and
# nbgrader_config.py with nothing pointing to Nbgrader > Formgrader (walk19d, A01).
INSTRUCTOR_START = "/lab?formgrader=true"
SHARE = os.path.join(ENV, "share", "mha-course")  # the lessons and two helper scripts
                                                 # (classroom/class_env.py puts them there)


def as_user(name, *args, stdin=None):
    """Run a helper script as ``name`` (never as root in a home that person controls)."""
    entry = pwd.getpwnam(name)
    env = {"PATH": os.path.join(ENV, "bin") + ":/usr/bin:/bin", "HOME": entry.pw_dir}
    result = subprocess.run([os.path.join(ENV, "bin", "python"), *args], user=entry.pw_uid,
                            group=entry.pw_gid, extra_groups=[], cwd=entry.pw_dir, env=env,
                            input=stdin, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        print(f"{args[0]} as {name} failed:\n{result.stdout}{result.stderr}", file=sys.stderr)
    return result


def role_settings(spawner):
    """Before a server starts. Students: a config folder that turns the formgrader and course
    list off, the lessons in their home (classroom/sync_lessons.py: copied once, updated while
    no cell's text changed, never overwritten once edited) and JupyterLab opening on lesson 00.
    The instructor: JupyterLab opening on the Formgrader tab, a config folder that lets
    JupyterLab frame the Formgrader (its own origin only), and the roster's students, with
    their names, in the gradebook (classroom/register_students.py)."""
    name = spawner.user.name
    if name != INSTRUCTOR:
        student_config = os.path.join(ENV, "etc", "jupyter-student")
        spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": student_config}
        as_user(name, os.path.join(SHARE, "sync_lessons.py"), os.path.join(SHARE, "lessons"),
                pwd.getpwnam(name).pw_dir)
        spawner.default_url = STUDENT_START  # lesson 00, as `make lab` opens it
        return
    spawner.default_url = INSTRUCTOR_START
    instructor_config = os.path.join(ENV, "etc", "jupyter-instructor")
    spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": instructor_config}
    students = [{"id": u, "first_name": NAMES.get(u, ("", ""))[0] or u,
                 "last_name": NAMES.get(u, ("", ""))[1]}
                for u, role in ROSTER.items() if role == "student"]
    as_user(name, os.path.join(SHARE, "register_students.py"),
            os.path.join(pwd.getpwnam(name).pw_dir, "mha-course"), stdin=json.dumps(students))


c.Spawner.pre_spawn_hook = role_settings
