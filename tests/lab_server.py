"""Helpers shared by the tests that start a JupyterLab server of their own."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def start(tmp: Path, home: Path, settings: dict, env: dict | None = None,
          args: tuple = ()) -> tuple[subprocess.Popen, str, str]:
    """JupyterLab serving ``home`` on 127.0.0.1 with a fresh token, as the Makefile starts
    it (no news, no browser): ``settings`` (name -> values) as its user settings, its own
    runtime, IPython, workspaces and (unless ``env`` names one) config folders under ``tmp``,
    ``env`` added to the environment, ``args`` added to the command line. Returns
    ``(proc, base, token)`` once the server answers, or fails the test with its log's end;
    stop it with :func:`stop`."""
    user_settings = tmp / "user-settings"
    for name, values in settings.items():
        path = user_settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    own = {name: str(tmp / name) for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR",
                                              "IPYTHONDIR") if name not in (env or {})}
    for folder in own.values():
        Path(folder).mkdir()
    env = dict(os.environ, MPLBACKEND="agg", **own, **(env or {}))
    port, token = free_port(), secrets.token_hex(24)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={home}", f"--LabApp.user_settings_dir={user_settings}",
               f"--LabApp.workspaces_dir={tmp / 'workspaces'}", "--LabApp.news_url=None",
               *args]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log_path = tmp / "jupyterlab.log"
    with open(log_path, "w") as log:  # the server keeps its own copy of the descriptor
        proc = subprocess.Popen(command, cwd=home, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # so stop() also ends its kernels
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while status(f"{base}/api/status?token={token}") != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc, base, token)
            pytest.fail(f"JupyterLab did not start (exit code {proc.poll()}):\n"
                        + log_path.read_text()[-3000:])
        time.sleep(0.25)
    return proc, base, token


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
