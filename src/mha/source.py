"""Helpers for the notebooks themselves: show code, report the environment."""

from __future__ import annotations

import inspect
import platform
from importlib import metadata


def show_source(obj):
    """Display the source of a package function or class, highlighted.

    Returns an ``IPython.display.Code`` object; its plain-text form is the
    source itself, so a notebook's stored output is the code the reader sees.
    """
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string, without pre-release or local parts.

    ``"2.13.0+cu130"`` (a CUDA build), ``"2.13.0+cpu"`` and ``"2.13.0"`` all give
    ``(2, 13, 0)``; ``"2.6.0a0+git1234"`` gives ``(2, 6, 0)``. Refuses
    (``ValueError``) a string that does not start with a number.
    """
    text = str(version).strip().split("+", 1)[0]
    numbers = []
    for part in text.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) < len(part):  # "0a0", "0rc1": the release ends here
            break
    if not numbers:
        raise ValueError(f"not a version number: {version!r}.")
    return tuple(numbers)


def environment_report() -> dict[str, str]:
    """Versions of Python and the libraries the lessons use, and the devices.

    Returns a dict of strings with at least the keys ``python``, ``numpy``,
    ``torch``, ``matplotlib``, ``ipywidgets``, ``jupyterlab`` and ``cuda``
    (plus ``platform`` and, with torch, ``torch build`` and ``cpu threads``);
    a missing library reads ``"not installed"``. Never raises for a missing
    library.

    ``numpy`` and ``torch`` are the versions of the modules this Python
    imports (``np.__version__``, ``torch.__version__``), so a build's local
    suffix is kept: ``2.13.0+cpu``, ``2.13.0+cu130``, or plain ``2.13.0``.
    That is not always the installed package metadata (a CUDA wheel from
    PyPI records ``2.13.0`` and reports ``2.13.0+cu130``). ``torch build``
    reads ``CPU`` or ``CUDA <version>``; ``cuda`` names the GPU this process
    sees, if any. The other libraries come from their installed metadata
    (importing jupyterlab alone costs seconds).

    Values vary from machine to machine: a notebook that prints this marks the
    cell ``nbval-ignore-output`` and asserts only the keys.
    """
    import numpy

    report = {"python": platform.python_version(), "platform": platform.platform(terse=True),
              "numpy": numpy.__version__}
    try:
        import torch
    except ImportError:
        torch = None
    report["torch"] = str(torch.__version__) if torch is not None else "not installed"
    for name in ("matplotlib", "ipywidgets", "jupyterlab"):
        try:
            report[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            report[name] = "not installed"
    if torch is None:
        report["cuda"] = "unknown (torch missing)"
        return report
    built_for = getattr(torch.version, "cuda", None)
    report["torch build"] = f"CUDA {built_for}" if built_for else "CPU"
    on_gpu = torch.cuda.is_available()
    report["cuda"] = torch.cuda.get_device_name(0) if on_gpu else "none (CPU only)"
    report["cpu threads"] = str(torch.get_num_threads())
    return report


NEEDED = ("python", "numpy", "torch", "matplotlib", "ipywidgets", "jupyterlab", "cuda")
MIN_TORCH = (2, 5)  # pyproject.toml: torch>=2.5 (SDPA gives zeros for a fully masked row)


def environment_problems(report: dict[str, str]) -> list[str]:
    """What is wrong with an :func:`environment_report`, as sentences; ``[]`` if nothing.

    Checks what must hold on every machine, CPU or GPU, for any torch build
    (with or without a local suffix such as ``+cpu`` or ``+cu130``): every
    key of ``NEEDED`` is present, no library but JupyterLab (a front end, absent from a
    Colab kernel) reads ``"not installed"``, torch
    is at least ``MIN_TORCH``, and the torch this Python imports has the same
    release numbers as the torch package installed (both compared with
    :func:`release`, which drops the local suffix: an installed ``2.13.0``
    and an imported ``2.13.0+cu130`` agree).
    """
    problems = [f"the report lacks {key!r}." for key in NEEDED if key not in report]
    # JupyterLab is one front end among several: a kernel that runs this check runs in some
    # front end (Colab, VS Code, JupyterLab), so its absence from the kernel's Python is fine
    problems += [f"{name} is not installed." for name, value in report.items()
                 if value == "not installed" and name != "jupyterlab"]
    torch_version = report.get("torch", "not installed")
    if torch_version != "not installed":
        if release(torch_version) < MIN_TORCH:
            wanted = ".".join(map(str, MIN_TORCH))
            problems.append(f"torch {torch_version} is older than {wanted}, "
                            "which the lessons need.")
        try:
            installed = metadata.version("torch")
        except metadata.PackageNotFoundError:
            installed = None
        if installed is not None and release(installed) != release(torch_version):
            problems.append(f"this Python imports torch {torch_version}, but the installed "
                            f"package is torch {installed}: two installations are mixed.")
    return problems
