"""A check's message, as a lesson stores it, keeps its lines in `make lab`'s JupyterLab at
1024 x 768 with the file browser open: the browser wraps none of them again.

The package wraps what a learner reads between words at mha._wrap.WIDTH columns. At 100
columns (before), this window fits 74 of them (584 px of output at 7.83 px a character), so
the browser broke each long line again: 74 + 26, 74 + 26, ragged. Here JupyterLab runs as
`make lab` runs it: tools/learner-lab/'s server config and app settings, custom_css on with
classroom/notebook-outputs.css as custom.css (outputs_css.py installs it in the venv's
jupyter_server; here it sits in the config folder's custom/, which comes first in the same
search path), serving a copy of notebooks/ under the root, as `make lab` serves the checkout.

Each stored check message (a "Not yet: ..." / "Correct: ..." verdict, a check-up report) is
measured as drawn: its <pre> is as tall as its text's lines times the line height.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest
from conftest import SETTINGS, save_screenshot
from lab_server import start
from lab_server import stop as stop_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
LEARNER_LAB = ROOT / "tools" / "learner-lab"
WIDTH, HEIGHT = 1024, 768
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# The outputs a check or the check-up printed: a verdict, or a report with a "likely:" line.
MESSAGES = r"""() => [...document.querySelectorAll('.jp-OutputArea-output pre')]
    .filter(pre => /^(Not yet|Correct): /.test(pre.textContent) ||
                   /^ *likely: /m.test(pre.textContent))
    .map(pre => {
        const style = getComputedStyle(pre);
        const height = pre.clientHeight - parseFloat(style.paddingTop)
                       - parseFloat(style.paddingBottom);
        const probe = document.createElement('span');
        probe.style.whiteSpace = 'pre';
        probe.textContent = 'x'.repeat(100);
        pre.appendChild(probe);
        const column = probe.getBoundingClientRect().width / 100;
        probe.remove();
        return {text: pre.textContent, height, lineHeight: parseFloat(style.lineHeight),
                columns: Math.floor(pre.clientWidth / column)};
    })"""


@pytest.fixture(scope="module")
def learner_lab(tmp_path_factory):
    """JupyterLab started as `make lab` starts it, on a copy of notebooks/."""
    tmp = tmp_path_factory.mktemp("learner-lab")
    home = tmp / "checkout"
    shutil.copytree(ROOT / "notebooks", home / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    config = tmp / "config"
    (config / "custom").mkdir(parents=True)
    shutil.copy(ROOT / "classroom" / "notebook-outputs.css", config / "custom" / "custom.css")
    proc, base, token = start(tmp, home, SETTINGS, env={"JUPYTER_CONFIG_DIR": str(config)},
                              args=["--LabApp.custom_css=True",  # the Makefile's LAB_COMMON
                                    f"--config={LEARNER_LAB / 'jupyter_server_config.json'}",
                                    f"--LabApp.app_settings_dir={LEARNER_LAB / 'settings'}"])
    try:
        yield base, token
    finally:
        stop_lab(proc, base, token)


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_line_of_a_stored_check_message_is_wrapped_again_by_the_browser(chromium,
                                                                          learner_lab, lesson):
    base, token = learner_lab
    context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    try:
        page.goto(f"{base}/lab/workspaces/t{secrets.token_hex(4)}/tree/notebooks/{lesson}"
                  f"?token={token}")
        page.wait_for_selector(".jp-DirListing-item", timeout=60_000)  # the file browser
        page.wait_for_selector(".jp-OutputArea-output pre", timeout=60_000)
        page.wait_for_timeout(1000)  # fonts and the last layout
        assert page.locator(".jp-FileBrowser").is_visible(), "the file browser is not open"
        assert page.evaluate("() => document.querySelector('link[href*=\"custom.css\"]') !== null"
                             ), "custom.css is not linked: not `make lab`'s JupyterLab"
        messages = page.evaluate(MESSAGES)
        if any(round(m["height"] / m["lineHeight"]) != len(m["text"].rstrip("\n").split("\n"))
               for m in messages):
            save_screenshot(page, f"message-lines-{lesson}")
    finally:
        context.close()
    assert messages, f"no stored check message in {lesson}"
    for m in messages:
        lines = m["text"].rstrip("\n").split("\n")
        drawn = round(m["height"] / m["lineHeight"])
        wide = [line for line in lines if len(line) > m["columns"]]
        assert drawn == len(lines), (
            f"{lesson}: a message of {len(lines)} lines is drawn on {drawn} at {WIDTH} x {HEIGHT} "
            f"({m['columns']} columns fit); lines wider than that: {wide}")
