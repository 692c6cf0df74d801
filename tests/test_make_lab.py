"""`make lab` serves JupyterLab on 127.0.0.1 only, always behind a token,
opened at notebooks/00_start_here.ipynb.

One server is started for the module, exactly as a learner starts it
(`make lab`), plus the flags a test needs: no browser, a free port, no port
retries. Jupyter's config, runtime and IPython folders are fresh temporary
folders, so a learner's own settings cannot make these tests pass or fail.
The server is stopped with POST /api/shutdown.

The Makefile's env step must be a no-op here (this test must never install
anything): under `make test` it is; run on its own, the module is skipped
while .venv is missing or older than pyproject.toml.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from lab_server import stop as stop_lab

ROOT = Path(__file__).resolve().parents[1]
LESSON_00 = "notebooks/00_start_here.ipynb"
STAMP = os.environ.get("VENV", ".venv") + "/.installed"
START_SECONDS = 90

pytestmark = pytest.mark.timeout(180)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "JUPYTER_TOKEN", "JUPYTER_PASSWORD"}}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        (tmp / name).mkdir()
        env[name] = str(tmp / name)
    return env


def get(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def answers(url: str, token: str) -> bool:
    """True once the server answers 200; refused while it is still starting (a busy machine
    can write the server's info file before the socket accepts)."""
    try:
        return get(url, token) == 200
    except urllib.error.URLError:
        return False


def listening_addresses(port: int) -> set[str]:
    """Local addresses of every socket in LISTEN state on ``port`` (Linux /proc)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if int(port_hex, 16) != port or fields[3] != "0A":  # 0A = LISTEN
                continue
            raw = bytes.fromhex(address)
            if len(raw) == 4:  # IPv4, stored little-endian
                found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
            else:  # IPv6, four little-endian 32-bit words
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if shutil.which("make") is None:
        pytest.skip("`make` is not installed")
    if subprocess.run(["make", "-C", str(ROOT), "-q", STAMP], env=make_env(
            tmp_path_factory.mktemp("probe")), capture_output=True).returncode != 0:
        pytest.skip(f"{STAMP} is missing or older than pyproject.toml: run `make env` first "
                    "(this test must not install anything)")
    if not (ROOT / LESSON_00).is_file():
        pytest.fail(f"{LESSON_00} is missing: `make lab` has nothing to open")

    tmp = tmp_path_factory.mktemp("make_lab")
    env = make_env(tmp)
    runtime = Path(env["JUPYTER_RUNTIME_DIR"])
    port = free_port()
    log_path = tmp / "lab.log"
    lab_args = f"--no-browser --port={port} --port-retries=0 --LabApp.news_url=None"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["make", "-C", str(ROOT), "--no-print-directory", "lab", f"LAB_ARGS={lab_args}"],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stoppable as a whole
        )
    try:
        info = None
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and proc.poll() is None:
            infos = list(runtime.glob("jpserver-*.json"))
            if infos:
                info = json.loads(infos[0].read_text() or "null")
                if info and answers(f"http://127.0.0.1:{port}/api/status", info["token"]):
                    break
            time.sleep(0.25)
        else:
            pytest.fail(f"`make lab` did not serve on port {port} within {START_SECONDS} s "
                        f"(exit code {proc.poll()}):\n{log_path.read_text()[-3000:]}")
        yield {"port": port, "info": info, "runtime": runtime, "log": log_path, "proc": proc,
               "base": f"http://127.0.0.1:{port}"}
    finally:
        stop_lab(proc, f"http://127.0.0.1:{port}", info.get("token") if info else None)


def test_server_info_names_127_0_0_1(lab):
    assert lab["info"]["hostname"] == "127.0.0.1"
    assert urllib.parse.urlsplit(lab["info"]["url"]).hostname == "127.0.0.1"


def test_listening_socket_is_bound_to_127_0_0_1_only(lab):
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc/net/tcp")
    assert listening_addresses(lab["port"]) == {"127.0.0.1"}


def test_token_is_not_empty(lab):
    assert len(lab["info"]["token"]) >= 16


def test_api_without_token_is_refused(lab):
    assert get(lab["base"] + "/api/status") == 403


def test_api_with_a_wrong_token_is_refused(lab):
    assert get(lab["base"] + "/api/status", token="not-" + lab["info"]["token"]) == 403


def test_api_with_the_token_is_served(lab):
    assert get(lab["base"] + "/api/status", lab["info"]["token"]) == 200


def test_serves_the_repository_root(lab):
    assert Path(lab["info"]["root_dir"]) == ROOT


def test_opens_lesson_00_in_jupyterlab(lab):
    """With --no-browser the server still writes the page it would open."""
    (open_file,) = lab["runtime"].glob("jpserver-file-to-run-*-open.html")
    (url,) = re.findall(r'http-equiv="refresh" content="1;url=([^"]+)"', open_file.read_text())
    parts = urllib.parse.urlsplit(html.unescape(url))
    assert parts.hostname == "127.0.0.1"
    assert parts.path == "/lab/tree/" + LESSON_00
    assert urllib.parse.parse_qs(parts.query)["token"] == [lab["info"]["token"]]
