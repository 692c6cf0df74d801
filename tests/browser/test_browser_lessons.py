"""Every lesson, as a learner runs it: JupyterLab in Chromium, Run All, no error, offline.

One test per lesson present (``notebooks/NN_*.ipynb``), so a new lesson joins by
landing. Each opens the lesson in a fresh page, clears the stored outputs, runs
all cells, waits (bounded) for the kernel to go idle, and asserts that no cell
shows an error or warning, that every widget view rendered, and that no request
left 127.0.0.1 (no CDN script, font or image). The lesson's kernel is shut
down afterwards, so ten lessons never hold ten kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RUN_ALL_MS = 240_000  # lesson 09 runs in under 30 s alone; a busy 2-core machine is slower


@pytest.fixture
def ran(lab_server, open_recorded_page, request):
    lesson = request.param
    with open_recorded_page() as lab_page:
        try:
            lab_page.open_notebook(lab_server, lesson)
            lab_page.clear_and_run_all(timeout=RUN_ALL_MS)
            yield lab_page
        finally:
            lab_server.stop_kernels(lesson)


def test_lessons_are_found():
    assert len(LESSONS) >= 6, LESSONS


@pytest.mark.parametrize("ran", LESSONS, indirect=True)
def test_lesson_runs_all_cells_in_jupyterlab_without_error_and_offline(ran):
    assert ran.error_outputs() == []
    assert ran.widget_errors() == 0
    assert ran.requests, "no request was recorded: the recorder is broken"
    assert ran.outside_requests() == []
