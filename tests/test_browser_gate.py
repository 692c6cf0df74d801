"""Without a browser the browser tests are skipped and the run says why; under CI
(CI=true) the same run fails instead, so a CI machine without Chromium never passes
by skipping them.

Each test runs pytest on lesson 00's two browser tests in a subprocess, with
MHA_CHROMIUM (read by tests/browser/conftest.py) naming a browser that does not
exist. Neither run starts JupyterLab or Chromium.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MISSING = "/nonexistent/chromium"

pytestmark = pytest.mark.timeout(120)


def run_browser_tests(ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["MHA_CHROMIUM"] = MISSING
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "tests/browser/test_browser_lesson_00.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=100, stdin=subprocess.DEVNULL)


def test_without_chromium_the_browser_tests_are_skipped_and_the_run_says_why():
    result = run_browser_tests(ci=False)
    assert result.returncode == 0, result.stdout[-2000:]
    skipped = re.search(rf"browser tests skipped \((\d+)\): {re.escape(MISSING)} is missing",
                        result.stdout)
    assert skipped and f"{skipped[1]} skipped" in result.stdout, result.stdout[-2000:]
    # (every test of the file is skipped; how many it holds is the file's business)


def test_under_ci_without_chromium_the_browser_tests_fail():
    result = run_browser_tests(ci=True)
    assert result.returncode != 0, result.stdout[-2000:]
    assert f"CI=true and the browser tests cannot run: {MISSING} is missing" in result.stdout
    assert "skipped" not in result.stdout.splitlines()[-1]
