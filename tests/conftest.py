"""Shared test setup.

Its presence puts tests/ on sys.path, so test modules in subfolders
(tests/browser/) can import helpers such as tests/lab_server.py.

Hypothesis: under CI (the CI environment variable is set, as `.ci/run` is
run) every property test replays the same examples, so a run can only fail
on a change of code, never on a new random draw; locally each run explores
new examples. A test's own ``@settings`` overrides these defaults key by key.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "explore")
