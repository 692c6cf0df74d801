"""`make lab` serves JupyterLab on 127.0.0.1 only, always behind a token,
opened at notebooks/00_start_here.ipynb: the URL it prints opens lesson 00, no news
prompt appears, and nothing of nbgrader (menu, Validate button, Create Assignment panel,
Formgrader) is there; `make lab-instructor` keeps nbgrader for grading.

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


def start(target: str, tmp_path_factory):
    """``make TARGET`` with a free port and no browser; yields what the tests read."""
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
    lab_args = f"--no-browser --port={port} --port-retries=0"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["make", "-C", str(ROOT), "--no-print-directory", target, f"LAB_ARGS={lab_args}"],
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
            pytest.fail(f"`make {target}` did not serve on port {port} within {START_SECONDS} s "
                        f"(exit code {proc.poll()}):\n{log_path.read_text()[-3000:]}")
        yield {"port": port, "info": info, "runtime": runtime, "log": log_path, "proc": proc,
               "base": f"http://127.0.0.1:{port}"}
    finally:
        stop_lab(proc, f"http://127.0.0.1:{port}", info.get("token") if info else None)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from start("lab", tmp_path_factory)


@pytest.fixture(scope="module")
def instructor_lab(tmp_path_factory):
    yield from start("lab-instructor", tmp_path_factory)


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


def test_the_learners_file_browser_lists_the_exercise_sets_without_pytests_conftest(lab):
    request = urllib.request.Request(lab["base"] + "/api/contents/notebooks/exercises",
                                     headers={"Authorization": f"token {lab['info']['token']}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        names = {item["name"] for item in json.load(reply)["content"]}
    assert "ex01_weighted_sum.ipynb" in names
    assert "conftest.py" not in names


def read(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return reply.read().decode()


def test_the_learners_lab_links_a_css_that_wraps_outputs_between_words(lab):
    """JupyterLab's own CSS breaks output lines inside words (word-break: break-all), which
    split a check's message ("Input oper|and") wherever the output area was narrow."""
    token = lab["info"]["token"]
    page = read(lab["base"] + "/lab/tree/" + LESSON_00, token)
    assert "custom/custom.css" in page
    css = read(lab["base"] + "/custom/custom.css", token)
    assert "word-break: normal" in css and "overflow-wrap: break-word" in css


def test_opens_lesson_00_in_jupyterlab(lab):
    """With --no-browser the server still writes the page it would open."""
    (open_file,) = lab["runtime"].glob("jpserver-*-open.html")
    (url,) = re.findall(r'http-equiv="refresh" content="1;url=([^"]+)"', open_file.read_text())
    parts = urllib.parse.urlsplit(html.unescape(url))
    assert parts.hostname == "127.0.0.1"
    assert parts.path == "/lab/tree/" + LESSON_00
    assert urllib.parse.parse_qs(parts.query)["token"] == [lab["info"]["token"]]


def printed_urls(lab) -> list[str]:
    """The URLs the server prints for a person to copy (the README says to)."""
    text = lab["log"].read_text()
    return sorted(set(re.findall(r"^\s*(http://127\.0\.0\.1:\d+/\S*\?token=\S+)\s*$", text,
                                 re.M)))


def test_the_printed_url_opens_lesson_00_with_the_token(lab):
    urls = printed_urls(lab)
    assert urls, f"no URL with a token in the output:\n{lab['log'].read_text()[-2000:]}"
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        assert parts.path == "/lab/tree/" + LESSON_00, url
        assert urllib.parse.parse_qs(parts.query)["token"] == [lab["info"]["token"]]


def page_config(lab) -> dict:
    request = urllib.request.Request(lab["base"] + "/lab",
                                     headers={"Authorization": f"token {lab['info']['token']}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        page = response.read().decode()
    (data,) = re.findall(r'<script id="jupyter-config-data" type="application/json">(.*?)'
                         r"</script>", page, re.S)
    return json.loads(data)


def test_the_learner_gets_no_nbgrader_lab_extension_and_no_news_request(lab):
    config = page_config(lab)
    assert "@jupyter/nbgrader" in config["disabledExtensions"]
    assert not config.get("newsUrl")


def test_the_learner_gets_no_formgrader_or_assignment_server_extension(lab):
    token = lab["info"]["token"]
    assert get(lab["base"] + "/formgrader", token) == 404
    assert get(lab["base"] + "/assignments", token) == 404
    assert "nbgrader" not in lab["log"].read_text()


@pytest.mark.slow
def test_the_instructor_target_keeps_nbgrader(instructor_lab):
    config = page_config(instructor_lab)
    assert "@jupyter/nbgrader" not in config.get("disabledExtensions", [])
    token = instructor_lab["info"]["token"]
    assert get(instructor_lab["base"] + "/formgrader", token) in (200, 302)


# -- what a learner sees, in Chromium ------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts" / "browser"


@pytest.mark.browser
def test_the_printed_url_shows_lesson_00_and_nothing_of_nbgrader_or_news(lab, request):
    if not CHROMIUM.exists():
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"CI is set and {CHROMIUM} is missing")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    p = request.getfixturevalue("playwright_session")
    (url,) = printed_urls(lab)
    browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(url)
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
        tab.filter(has_text="00_start_here.ipynb").wait_for(timeout=90_000)
        page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(
            timeout=60_000)
        page.wait_for_timeout(3000)  # a toast or a late extension would show by now
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        assert "File" in menus and "Nbgrader" not in menus, menus
        assert page.get_by_text("Jupyter news").count() == 0
        assert page.locator(".jp-toast-message, .Toastify__toast").count() == 0
        assert page.locator("[data-command='nbgrader:validate'], "
                            "button:has-text('Validate')").count() == 0
        sidebars = " ".join(page.locator(".jp-SideBar .lm-TabBar-tab").evaluate_all(
            "tabs => tabs.map(t => (t.title || '') + ' ' + t.textContent)"))
        assert "Create Assignment" not in sidebars and "Nbgrader" not in sidebars, sidebars
        assert page.get_by_text("Create Assignment").count() == 0
        outside = [u for u in requests if urllib.parse.urlsplit(u).scheme in ("http", "https")
                   and urllib.parse.urlsplit(u).hostname != "127.0.0.1"]
        assert outside == []
    except BaseException:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "make_lab_learner.png"))
        raise
    finally:
        browser.close()
