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


def environment_report() -> dict[str, str]:
    """Versions of Python and the libraries the lessons use, and the devices.

    Returns a dict of strings with at least the keys ``python``, ``numpy``,
    ``torch``, ``matplotlib``, ``ipywidgets``, ``jupyterlab`` and ``cuda``
    (plus ``platform`` and, with torch, ``cpu threads``); a missing library
    reads ``"not installed"``. Never raises for a missing library.

    Values vary from machine to machine: a notebook that prints this marks the
    cell ``nbval-ignore-output`` and asserts only the keys.
    """
    report = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    # Installed metadata, not an import: importing jupyterlab alone costs seconds.
    for name in ("numpy", "torch", "matplotlib", "ipywidgets", "jupyterlab"):
        try:
            report[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            report[name] = "not installed"
    try:
        import torch

        on_gpu = torch.cuda.is_available()
        report["cuda"] = torch.cuda.get_device_name(0) if on_gpu else "none (CPU only)"
        report["cpu threads"] = str(torch.get_num_threads())
    except ImportError:
        report["cuda"] = "unknown (torch missing)"
    return report
