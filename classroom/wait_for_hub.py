"""Wait until the hub answers, or stop it (used by `make class-start` and `make class-stop`).

    python3 classroom/wait_for_hub.py URL LOGFILE      poll URL (the hub's /hub/health) for 90 s
    python3 classroom/wait_for_hub.py --stop PIDFILE   SIGTERM the hub, wait until it is gone
    python3 classroom/wait_for_hub.py --idle PIDFILE   fail if the hub of PIDFILE is running

The hub stops every person's server and the proxy before it exits (cleanup_servers).
Only the standard library: this runs with the system Python.
"""

from __future__ import annotations

import http.client
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

START_SECONDS = 90
STOP_SECONDS = 60


def wait(url: str, log: Path) -> int:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    print(f"the hub is up ({url})")
                    return 0
        except (urllib.error.URLError, OSError, http.client.HTTPException):
            pass
        time.sleep(0.3)
    tail = log.read_text(errors="replace").splitlines()[-40:] if log.exists() else []
    print(f"the hub did not answer at {url} within {START_SECONDS} s; {log}:", *tail,
          sep="\n", file=sys.stderr)
    return 1


def alive(pid: int) -> bool:
    """Running (a zombie left for a parent that does not reap it counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def stop(pid_file: Path) -> int:
    if not pid_file.exists():
        print(f"no hub running ({pid_file} is missing)")
        return 0
    pid = int(pid_file.read_text().strip())
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            print(f"the hub (pid {pid}) did not stop within {STOP_SECONDS} s", file=sys.stderr)
            return 1
    pid_file.unlink(missing_ok=True)
    print(f"the hub (pid {pid}) has stopped")
    return 0


def idle(pid_file: Path) -> int:
    """A second hub on the same state folder would fail on the ports and leave a stale pid."""
    if pid_file.exists() and alive(int(pid_file.read_text().strip() or 0)):
        print(f"a hub is already running (pid {pid_file.read_text().strip()}): "
              "make class-stop first", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--stop":
        return stop(Path(argv[1]))
    if len(argv) == 2 and argv[0] == "--idle":
        return idle(Path(argv[1]))
    if len(argv) == 2:
        return wait(argv[0], Path(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
