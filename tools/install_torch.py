"""Install PyTorch before the package, picking the CPU build where that is right.

Run by the Makefile with the environment's own Python, before `pip install -e .`:

    python tools/install_torch.py "torch==2.13.0" [extra pip arguments]

What it does, in order:

1. Extra pip arguments given (the Makefile's PIP_TORCH_ARGS): the user chose an
   index; install with them.
2. Ask pip what it would install from the default configuration (a dry run, no
   wheel is downloaded). Nothing to install: done. A plan without CUDA packages
   (a CPU wheel was found, or a platform whose default build is the CPU one):
   install it. Nothing changes where a CPU wheel is already found.
3. The plan is a CUDA build and the machine has an NVIDIA GPU: install it.
4. The plan is a CUDA build and there is no GPU: if PyTorch's CPU index answers
   within a few seconds, install from it; if not (no route, no DNS), install the
   default plan. Either way, one line says what was installed and how to choose.

Only the standard library is used: this runs in a fresh venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_SECONDS = 5
# Packages that only a CUDA build of torch pulls in.
CUDA_PREFIXES = ("nvidia-", "cuda-", "triton")
CHOOSE = ('choose with: make test PIP_TORCH_ARGS="--index-url ' + CPU_INDEX + '" (CPU) '
          'or PIP_TORCH_ARGS="--index-url https://pypi.org/simple" (default build)')


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


def planned_packages(spec: str) -> list[tuple[str, str]]:
    """(name, version) of everything pip would install for `spec`, from a dry run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(pip("install", "--quiet", "--dry-run", "--report", str(report), spec),
                       check=True, stdout=subprocess.DEVNULL)
        plan = json.loads(report.read_text())
    return [(item["metadata"]["name"], item["metadata"]["version"]) for item in plan["install"]]


def is_cuda_plan(packages: list[tuple[str, str]]) -> bool:
    """True for a CUDA build: the plan pulls CUDA libraries, or torch's local tag names CUDA."""
    for name, version in packages:
        lowered = name.lower()
        if lowered.startswith(CUDA_PREFIXES):
            return True
        if lowered == "torch" and "+cu" in version:
            return True
    return False


def has_nvidia_gpu() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def reachable(url: str, seconds: float = PROBE_SECONDS) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=seconds):
            return True
    except OSError:  # URLError, refused, DNS failure, time-out
        return False


def choose(spec: str, extra: list[str], packages: list[tuple[str, str]] | None, gpu: bool,
           cpu_index_up: bool | None) -> tuple[list[str] | None, str]:
    """The pip arguments to install torch with (None: nothing to do) and a note ('' for none)."""
    if extra:
        return [*extra, spec], ""
    if not packages:
        return None, ""
    if not is_cuda_plan(packages):
        return [spec], ""
    if gpu:
        return [spec], ""
    if cpu_index_up:
        return ["--index-url", CPU_INDEX, spec], (
            f"note: installed the CPU build of {spec} from PyTorch's CPU index "
            "(the default index offered a CUDA build and this machine has no NVIDIA GPU); "
            + CHOOSE)
    torch_version = dict((n.lower(), v) for n, v in packages).get("torch", "?")
    return [spec], (
        f"note: installed torch {torch_version}, a CUDA build (several GB), from the default "
        "index: "
        "PyTorch's CPU index did not answer and no CPU wheel was found; " + CHOOSE)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    spec, extra = argv[0], [a for a in argv[1:] if a]
    packages = None if extra else planned_packages(spec)
    cuda = packages is not None and is_cuda_plan(packages)
    gpu = has_nvidia_gpu() if cuda else False
    on_linux = sys.platform.startswith("linux")
    cpu_index_up = reachable(CPU_INDEX + "/torch/") if cuda and not gpu and on_linux else None
    args, note = choose(spec, extra, packages, gpu, cpu_index_up)
    if args is not None:
        subprocess.run(pip("install", "--quiet", *args), check=True)
    if note:
        print(note, flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    sys.exit(main(sys.argv[1:]))
