"""The package as a whole: cheap import, lazy submodules, docstrings, notebook helpers."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import mha

SRC = Path(mha.__file__).parent


def run_fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object, returned here."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_mha_loads_neither_torch_nor_matplotlib_nor_ipywidgets():
    loaded = run_fresh(
        "import json, sys, mha\n"
        "heavy = ('torch', 'matplotlib', 'ipywidgets')\n"
        "print(json.dumps({h: h in sys.modules for h in heavy}))"
    )
    assert loaded == {"torch": False, "matplotlib": False, "ipywidgets": False}


@pytest.mark.parametrize(
    ("submodule", "library"),
    [("layers", "torch"), ("plot", "matplotlib"), ("widgets", "ipywidgets")],
)
def test_heavy_submodule_loads_on_first_attribute_access(submodule, library):
    state = run_fresh(
        "import json, sys, mha\n"
        f"before = 'mha.{submodule}' in sys.modules or '{library}' in sys.modules\n"
        f"module = mha.{submodule}\n"
        f"after = module is sys.modules['mha.{submodule}'] and '{library}' in sys.modules\n"
        "print(json.dumps({'before': before, 'after': after}))"
    )
    assert state == {"before": False, "after": True}


def test_lazy_submodules_are_listed_by_dir():
    names = dir(mha)
    assert {"plot", "widgets"} <= set(names)


def test_a_lazy_name_without_a_module_is_an_attribute_error(monkeypatch):
    monkeypatch.setattr(mha, "_LAZY", mha._LAZY | {"no_such_module"})
    assert not hasattr(mha, "no_such_module")


def lazy_table():
    """{module name: what it loads} from the table in the package docstring."""
    rows = {}
    for line in mha.__doc__.splitlines():
        if line[:1].isalpha() and "  " in line and line.rstrip().endswith(
                ("torch", "matplotlib", "ipywidgets", "NumPy", "(absent)")):
            names, loads = line.split("  ")[0], line.split()[-1]
            for name in names.split(","):
                rows[name.strip()] = loads
    return rows


def test_the_docstring_table_names_every_lazy_submodule():
    assert set(lazy_table()) == set(mha._LAZY)


def test_the_docstring_table_marks_absent_exactly_the_submodules_not_written():
    import importlib.util

    absent = {n for n, loads in lazy_table().items() if loads == "(absent)"}
    assert absent == {n for n in mha._LAZY if importlib.util.find_spec(f"mha.{n}") is None}


def test_mha_layers_does_not_reexport_torch_transfer():
    import mha.layers

    assert not hasattr(mha.layers, "sdpa_attention")
    assert not hasattr(mha.layers, "to_nn_multihead")


def test_importing_mha_layers_does_not_import_torch_transfer():
    state = run_fresh("import json, sys, mha.layers\n"
                      "print(json.dumps({'loaded': 'mha.torch_transfer' in sys.modules}))")
    assert state == {"loaded": False}


def test_an_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"no attribute 'nonsense'"):
        mha.nonsense  # noqa: B018


def test_everything_in_all_exists():
    missing = [name for name in mha.__all__ if not hasattr(mha, name)]
    assert missing == []


@pytest.mark.parametrize("name", sorted(mha.__all__))
def test_every_public_name_has_a_docstring(name):
    doc = inspect.getdoc(getattr(mha, name))
    assert doc and len(doc) > 20, f"mha.{name} needs a docstring"


@pytest.mark.parametrize(
    "name",
    ["softmax", "softmax_backward", "scores", "attention", "split_heads", "merge_heads",
     "MultiHeadAttention"],
)
def test_reference_docstrings_state_what_they_refuse(name):
    assert "Refuses" in inspect.getdoc(getattr(mha, name))


@pytest.mark.parametrize("name", ["softmax", "softmax_backward", "scores", "attention"])
def test_reference_docstrings_state_the_dtype_rule(name):
    assert "Dtype rule" in inspect.getdoc(getattr(mha, name))


def test_show_source_text_is_the_functions_source():
    shown = mha.show_source(mha.softmax)
    assert shown.data == inspect.getsource(mha.softmax)
    assert shown.data.startswith("def softmax(")


def test_show_source_works_on_a_class():
    assert mha.show_source(mha.MultiHeadAttention).data.startswith("class MultiHeadAttention")


def test_environment_report_has_the_documented_keys():
    report = mha.environment_report()
    expected = {"python", "numpy", "torch", "matplotlib", "ipywidgets", "jupyterlab", "cuda"}
    assert expected <= set(report)
    assert all(isinstance(value, str) for value in report.values())
