"""Wait until the hub answers, or stop it (used by `make class-start` and `make class-stop`).

    python3 classroom/wait_for_hub.py URL LOG [PIDFILE] [--open PUBLIC_URL]
                                                       poll URL (the hub's internal /hub/health)
                                                       for 90 s, less if the hub exits; then
                                                       print PUBLIC_URL, the address people open
    python3 classroom/wait_for_hub.py --stop PIDFILE   SIGTERM the hub, wait until it is gone
    python3 classroom/wait_for_hub.py --idle PIDFILE   fail if the hub of PIDFILE is running

The hub stops every person's server and the proxy before it exits (cleanup_servers); --stop
also ends a proxy that outlived its hub (proxy.pid next to the hub's pid file).
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


def wait(url: str, log: Path, pid_file: Path | None = None, public: str | None = None) -> int:
    """Poll ``url`` until it answers 200; give up early once the hub of ``pid_file`` has
    started and exited (e.g. a port taken), and show the end of its log. ``url`` is the hub's
    internal health check; ``public`` (what people type) is what gets printed."""
    deadline = time.monotonic() + START_SECONDS
    seen = False
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    print(f"the hub is up: open {public or url} and log in")
                    return 0
        except (urllib.error.URLError, OSError, http.client.HTTPException):
            pass
        if pid_file is not None:
            pid = pid_file.read_text().strip() if pid_file.exists() else ""
            if pid:
                seen = True
            if seen and not (pid and alive(int(pid))):
                break
        time.sleep(0.3)
    tail = log.read_text(errors="replace").splitlines()[-40:] if log.exists() else []
    print(f"the hub did not answer at {url}; {log}:", *tail, sep="\n", file=sys.stderr)
    return 1


def alive(pid: int) -> bool:
    """Running (a zombie left for a parent that does not reap it counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def terminate(pid_file: Path, what: str) -> int:
    """SIGTERM the process named in ``pid_file`` (if it runs), wait, remove the file."""
    if not pid_file.exists():
        return 0
    pid = int(pid_file.read_text().strip() or 0)
    if pid and alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            print(f"the {what} (pid {pid}) did not stop within {STOP_SECONDS} s", file=sys.stderr)
            return 1
        print(f"the {what} (pid {pid}) has stopped")
    pid_file.unlink(missing_ok=True)
    return 0


def stop(pid_file: Path) -> int:
    """Stop the hub (it stops the servers and the proxy), then the proxy if it outlived the hub:
    a hub that fails after starting the proxy (a port taken) exits and leaves it running."""
    if not pid_file.exists():
        print(f"no hub running ({pid_file} is missing)")
    failed = terminate(pid_file, "hub")
    return failed | terminate(pid_file.parent / "proxy.pid", "proxy")


def idle(pid_file: Path) -> int:
    """A second hub on the same state folder would fail on the ports and leave a stale pid."""
    if pid_file.exists() and alive(int(pid_file.read_text().strip() or 0)):
        print(f"a hub is already running (pid {pid_file.read_text().strip()}): "
              "make class-stop first", file=sys.stderr)
        return 1
    pid_file.unlink(missing_ok=True)  # a stale file of a hub that is gone
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--stop":
        return stop(Path(argv[1]))
    if len(argv) == 2 and argv[0] == "--idle":
        return idle(Path(argv[1]))
    public = None
    if len(argv) >= 2 and argv[-2] == "--open":
        public, argv = argv[-1], argv[:-2]
    if len(argv) in (2, 3):
        return wait(argv[0], Path(argv[1]), Path(argv[2]) if len(argv) == 3 else None, public)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
