"""Shared test setup.

Its presence puts tests/ on sys.path, so test modules in subfolders
(tests/browser/) can import helpers such as tests/lab_server.py.

Hypothesis: under CI (the CI environment variable is set, as `.ci/run` is
run) every property test replays the same examples, so a run can only fail
on a change of code, never on a new random draw; locally each run explores
new examples. A test's own ``@settings`` overrides these defaults key by key.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "explore")


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch on one thread for a module of many tiny ops: on a busy 2-core machine two
    threads wait on each other (measured 4x slower), and one thread sums in one order.
    Use it with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch  # here, not at the top: most test modules never load torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def playwright_session():
    """The test session's one Playwright (sync API). Playwright allows one sync instance per
    thread at a time, and tests/browser/ keeps its Chromium open for the whole session, so a
    test that opened its own `sync_playwright()` after it failed with "Sync API inside the
    asyncio loop" in the full run while passing alone. Every browser test takes this one.
    Request it only after deciding not to skip (it imports playwright)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p
