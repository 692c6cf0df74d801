"""Helpers shared by the tests that start a JupyterLab server of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request


def stop(proc: subprocess.Popen, base: str, token: str | None) -> None:
    """Ask the server to shut down (POST /api/shutdown), then make sure it has.

    ``proc`` was started with ``start_new_session=True``, so killing its process
    group also ends the kernels it started.
    """
    if proc.poll() is None and token:
        request = urllib.request.Request(f"{base}/api/shutdown", method="POST",
                                         headers={"Authorization": f"token {token}"})
        try:
            urllib.request.urlopen(request, timeout=10).close()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
