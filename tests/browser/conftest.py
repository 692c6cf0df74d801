"""JupyterLab in headless Chromium, the way a learner meets the lessons.

One JupyterLab server per test session, serving a temporary copy of
notebooks/ (the committed notebooks are never touched), with its own Jupyter
config, runtime, settings and workspace folders and the two settings that
stop blocking dialogs (kernel picker, news toast). Debian's Chromium
(/usr/bin/chromium) is driven by Playwright for Python; the browser is never
downloaded. Every request a page makes is recorded so tests can assert that
nothing leaves 127.0.0.1.

Without /usr/bin/chromium or the playwright package these tests are skipped,
and the end of the run says so and why; under CI (CI=true) the same condition
fails every browser test instead (.ci/run installs Chromium when it runs as
root). A failing browser test saves a screenshot of each page it had open in
test-artifacts/browser/ (git-ignored); the report names the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from lab_server import start as start_lab
from lab_server import stop as stop_lab

ROOT = Path(__file__).resolve().parents[2]
# MHA_CHROMIUM only lets tests/test_browser_gate.py point at a missing browser.
CHROMIUM = Path(os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
SETTINGS = {
    # Start the notebook's kernel without the "Select Kernel" dialog.
    # Every cell attached to the DOM, so prompts and outputs can be read for all of them.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True, "windowingMode": "none"},
    # No news toast and no update check (both would reach outside 127.0.0.1).
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}
ARTIFACTS = ROOT / "test-artifacts" / "browser"
UNDER_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skip_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does it as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _skip_reason()
    if reason and not UNDER_CI:  # under CI, pytest_runtest_setup fails them instead
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


def pytest_terminal_summary(terminalreporter):
    reason = _skip_reason()
    if reason and not UNDER_CI:
        skipped = [r for r in terminalreporter.stats.get("skipped", [])
                   if "browser" in getattr(r, "keywords", {})]
        if skipped:
            terminalreporter.write_line(
                f"browser tests skipped ({len(skipped)}): {reason}", yellow=True)


# -- screenshots of failing tests ------------------------------------------------
_open_pages: list = []  # RecordedPage objects whose context is open
_current_test = ["session"]


def save_screenshot(page, label: str) -> Path | None:
    """A screenshot of ``page`` in test-artifacts/browser/ (None if the page cannot take one)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")[-150:] + ".png")
    try:
        page.screenshot(path=str(path), timeout=10_000)
    except Exception:
        return None
    return path


@pytest.fixture
def screenshot():
    """:func:`save_screenshot` for a test: ``from conftest import ...`` inside a test can reach
    another folder's conftest.py (``make test`` loads notebooks/exercises/conftest.py under the
    same module name), so tests ask for it as a fixture."""
    return save_screenshot


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Remember the test's name (screenshots); under CI a missing browser is a failure,
    never a skip (checked before any fixture starts JupyterLab or Chromium)."""
    _current_test[0] = item.nodeid
    if UNDER_CI and "browser" in item.keywords:
        reason = _skip_reason()
        if reason:
            pytest.fail(f"CI=true and the browser tests cannot run: {reason}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and "browser" in item.keywords:
        for index, recorded in enumerate(list(_open_pages)):
            path = save_screenshot(recorded.page, f"{item.nodeid}-{report.when}-{index}")
            if path:
                report.sections.append(("screenshot", str(path.relative_to(ROOT))))
    return report


class Lab:
    """A running JupyterLab server: its base URL, token and served folder."""

    def __init__(self, base: str, token: str, root: Path):
        self.base, self.token, self.root = base, token, root

    def stop_kernels(self, notebook: str | None = None) -> None:
        """Shut down the kernel of ``notebook`` (a path under the served folder), or every
        kernel when None: a lesson's kernel outlives its page."""
        headers = {"Authorization": f"token {self.token}"}
        with urllib.request.urlopen(urllib.request.Request(f"{self.base}/api/sessions",
                                                           headers=headers), timeout=10) as r:
            sessions = json.load(r)
        for session in sessions:
            if notebook is not None and session.get("path") != notebook:
                continue
            request = urllib.request.Request(f"{self.base}/api/kernels/{session['kernel']['id']}",
                                             method="DELETE", headers=headers)
            with contextlib.suppress(OSError):
                urllib.request.urlopen(request, timeout=30).close()

    def url(self, notebook: str) -> str:
        """``notebook`` in a fresh, empty workspace (nothing restored from earlier tests)."""
        workspace = "test-" + secrets.token_hex(4)
        return (f"{self.base}/lab/workspaces/{workspace}/tree/{urllib.parse.quote(notebook)}"
                f"?token={self.token}")


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving a temporary copy of notebooks/."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = tmp / "notebooks"
    shutil.copytree(ROOT / "notebooks", root,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    proc, base, token = start_lab(tmp, root, SETTINGS)
    try:
        yield Lab(base, token, root)
    finally:
        stop_lab(proc, base, token)


@pytest.fixture(scope="session")
def chromium(playwright_session):
    browser = playwright_session.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                 args=CHROMIUM_ARGS)
    yield browser
    browser.close()


# Every code cell's input prompt; a check cell (source collapsed, tag "check") shows a
# placeholder whose prompt stays empty after it runs, so placeholders are left out.
PROMPTS = ".jp-Notebook .jp-CodeCell .jp-InputPrompt:not(.jp-Placeholder-prompt)"
ALL_PROMPTS_NUMBERED = r"""() => {
    const prompts = [...document.querySelectorAll(PROMPTS)];
    return prompts.length > 0 && prompts.every(p => /^\[\d+\]:$/.test(p.textContent.trim()));
}"""
NO_PROMPT_NUMBERED = r"""() => {
    const prompts = [...document.querySelectorAll(PROMPTS)];
    return prompts.length > 0 && prompts.every(p => !/\d/.test(p.textContent));
}"""
# Run All has ended: every prompt numbered, or (after an error, which makes the kernel drop the
# queued cells) a stderr output exists and no cell is still queued or running ("[*]:"). Error
# tracebacks render as data-mime-type application/vnd.jupyter.stderr too, like warnings.
STDERR_OUTPUTS = (".jp-Notebook .jp-OutputArea-output"
                  "[data-mime-type='application/vnd.jupyter.stderr']")
RUN_ALL_ENDED = r"""(stderrSelector) => {
    const prompts = [...document.querySelectorAll(PROMPTS)]
        .map(p => p.textContent.trim());
    if (prompts.length > 0 && prompts.every(p => /^\[\d+\]:$/.test(p))) return true;
    return document.querySelector(stderrSelector) !== null && !prompts.includes('[*]:');
}"""
ALL_PROMPTS_NUMBERED, NO_PROMPT_NUMBERED, RUN_ALL_ENDED = (
    js.replace("(PROMPTS)", f"('{PROMPTS}')")
    for js in (ALL_PROMPTS_NUMBERED, NO_PROMPT_NUMBERED, RUN_ALL_ENDED))
# SHA-256 of the bytes behind an <img> (an ipywidgets Image shows a blob: URL, new on every
# value, even for identical bytes): tells "redrawn" apart from "redrawn differently".
IMAGE_DIGEST = r"""async (img) => {
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return [...digest].map(b => b.toString(16).padStart(2, '0')).join('');
}"""

# The bytes behind an <img>, base64-encoded (for tests that decode the picture itself).
IMAGE_BASE64 = r"""async (img) => {
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let text = '';
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text);
}"""


def poll(condition, timeout: float = 15.0, interval: float = 0.1, message: str = ""):
    """Call ``condition()`` until it returns something truthy (returned) or ``timeout`` s pass
    (AssertionError with ``message``, a string or a callable giving one)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: "
                                 + (message() if callable(message) else message))
        time.sleep(interval)


class RecordedPage:
    """A Playwright page plus every URL it requested (HTTP and WebSocket),
    with the few JupyterLab steps the tests need."""

    def __init__(self, page):
        self.page = page
        self.requests: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("websocket", lambda ws: self.requests.append(ws.url))

    def open_notebook(self, lab: Lab, notebook: str) -> None:
        """Open ``notebook`` in JupyterLab and wait for its kernel to be idle."""
        self.page.goto(lab.url(notebook))
        self.page.locator(".jp-NotebookPanel .jp-Notebook").wait_for(state="visible")
        self.wait_until_idle()

    def wait_until_idle(self, timeout: float = 60_000) -> None:
        """Kernel idle by both indicators, and no dialog in the way (TOOLING.md)."""
        from playwright.sync_api import expect

        page = self.page
        expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
            1, timeout=timeout)
        expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle")).not_to_have_count(
            0, timeout=timeout)
        expect(page.locator(".jp-Dialog")).to_have_count(0)

    def menu(self, menu: str, item: str) -> None:
        """Click ``item`` in the main menu bar's ``menu``."""
        import re

        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()

    def clear_and_run_all(self, timeout: float = 90_000) -> None:
        """Clear every stored output, run all cells, wait until all ran and the kernel is idle."""
        self.menu("Edit", "Clear Outputs of All Cells")
        self.page.wait_for_function(NO_PROMPT_NUMBERED, timeout=10_000)
        self.menu("Run", "Run All Cells")
        try:
            self.page.wait_for_function(RUN_ALL_ENDED, arg=STDERR_OUTPUTS, timeout=timeout,
                                        polling=250)
        except Exception as error:
            raise AssertionError(f"not every code cell ran: prompts {self.prompts()}") from error
        if not self.page.evaluate(ALL_PROMPTS_NUMBERED):
            errors = "\n".join(self.error_outputs())[-2000:]
            raise AssertionError(f"Run All stopped early: prompts {self.prompts()}\n{errors}")
        self.wait_until_idle(timeout)

    def error_outputs(self) -> list[str]:
        """The text of every stderr output (warnings and error tracebacks) in the notebook."""
        return self.page.locator(STDERR_OUTPUTS).all_inner_texts()

    def widget_errors(self) -> int:
        """How many widget views failed to render ("Error displaying widget ...")."""
        return self.page.get_by_text("Error displaying widget").count()

    def widget_output(self, has_selector: str, has_text: str | None = None):
        """The output areas whose widget contains ``has_selector`` (with ``has_text``), to pick
        one explorer among the notebook's outputs; callers check there is exactly one."""
        page = self.page
        inner = page.locator(has_selector)
        if has_text is not None:
            inner = inner.filter(has_text=has_text)
        return page.locator(".jp-OutputArea-output").filter(has=inner)

    def wait_until(self, condition, timeout: float = 15.0, message="") -> object:
        """:func:`poll` (for test modules, which cannot import conftest reliably)."""
        return poll(condition, timeout, message=message)

    def image_digest(self, image) -> str:
        """SHA-256 (hex) of the bytes an ``<img>`` locator currently shows."""
        return image.evaluate(IMAGE_DIGEST)

    def image_bytes(self, image) -> bytes:
        """The bytes an ``<img>`` locator currently shows."""
        import base64

        return base64.b64decode(image.evaluate(IMAGE_BASE64))

    def wait_for_new_image(self, image, src_before: str, timeout: float = 15.0) -> str:
        """Wait until ``image``'s src differs from ``src_before`` (the kernel sent a new
        image); return the new bytes' digest."""
        poll(lambda: image.get_attribute("src") != src_before, timeout,
             message="the image was not redrawn (its src did not change)")
        return self.image_digest(image)

    def prompts(self) -> list[str]:
        """The input prompts of all code cells, e.g. ['[1]:', '[*]:', '[ ]:']."""
        return self.page.locator(PROMPTS).all_inner_texts()

    def outside_requests(self) -> list[str]:
        """Requested URLs whose host is not 127.0.0.1 (data: URLs carry no host)."""
        outside = []
        for url in self.requests:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme == "data":
                continue
            if parts.scheme == "blob":  # blob:http://127.0.0.1:P/uuid
                parts = urllib.parse.urlsplit(url[len("blob:"):])
            if parts.hostname != "127.0.0.1":
                outside.append(url)
        return outside


@contextlib.contextmanager
def recorded_page(browser):
    """A fresh browser context (no shared cookies or storage) with one recorded page."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    recorded = RecordedPage(context.new_page())
    _open_pages.append(recorded)
    try:
        yield recorded
    except BaseException:  # also pytest.fail and pytest-timeout's failure
        # A fixture's setup failed inside this block: the page closes before pytest
        # reports, so take its picture now.
        save_screenshot(recorded.page, f"{_current_test[0]}-setup-{len(_open_pages) - 1}")
        raise
    finally:
        _open_pages.remove(recorded)
        context.close()


@pytest.fixture(scope="session")
def open_recorded_page(chromium):
    """For module-scoped fixtures: ``with open_recorded_page() as page: ...``."""
    return lambda: recorded_page(chromium)


@pytest.fixture(scope="session")
def run_lesson(lab_server, open_recorded_page):
    """For module-scoped fixtures: ``with run_lesson("03_x.ipynb") as page: ...`` opens the
    lesson in a fresh recorded page, clears its outputs and runs all cells to idle; the
    lesson's kernel is shut down at the end."""

    @contextlib.contextmanager
    def run(notebook: str):
        if not (lab_server.root / notebook).is_file():
            pytest.fail(f"notebooks/{notebook} is missing")
        with open_recorded_page() as lab_page:
            try:
                lab_page.open_notebook(lab_server, notebook)
                lab_page.clear_and_run_all()
                yield lab_page
            finally:
                # The kernel outlives its page: without this the next module that opens the
                # lesson gets the old kernel and its live widgets.
                lab_server.stop_kernels(notebook)

    return run


@pytest.fixture
def lab_page(chromium, lab_server):
    with recorded_page(chromium) as page:
        yield page
