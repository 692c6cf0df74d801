"""Helpers for the notebooks themselves: show code, report the environment."""

from __future__ import annotations

import importlib
import inspect
import platform


def show_source(obj):
    """Display the source of a package function or class, highlighted.

    Returns an ``IPython.display.Code`` object; its plain-text form is the
    source itself, so a notebook's stored output is the code the reader sees.
    """
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")


def environment_report() -> dict[str, str]:
    """Versions of Python and the libraries the lessons use, and the devices.

    Values vary from machine to machine: a notebook that prints this marks the
    cell ``nbval-ignore-output`` and asserts only the keys.
    """
    report = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    for name in ("numpy", "torch", "matplotlib", "ipywidgets", "jupyterlab"):
        try:
            report[name] = importlib.import_module(name).__version__
        except ImportError:
            report[name] = "not installed"
    try:
        import torch

        report["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU only)"
        report["cpu threads"] = str(torch.get_num_threads())
    except ImportError:
        report["cuda"] = "unknown (torch missing)"
    return report
