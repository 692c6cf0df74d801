"""The three places that list dependencies agree with each other.

pyproject.toml is the source of truth (pip, `make lab`, `make test`).
environment.yml (conda, for learners who prefer it) lists the learner's
dependencies plus the `test` extra; binder/environment.yml (the Binder image)
lists the learner's dependencies only and installs the package itself from
binder/postBuild. Same packages, same version bounds, once the pip name is
mapped to the conda-forge name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# pip (PyPI) name -> conda-forge name, where they differ. Everything else has
# the same name on both sides.
CONDA_NAME = {
    "torch": "pytorch-cpu",  # conda-forge metapackage that pins a cpu_* build of pytorch
    "playwright": "playwright-python",
}
# Entries of an environment file that are tools, not project dependencies.
CONDA_TOOLING = {"python", "pip"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def environment(path: str) -> dict:
    return yaml.safe_load((ROOT / path).read_text())


def normalize_spec(spec: str) -> frozenset[str]:
    """'>=4.2, <5' -> {'>=4.2', '<5'}; '' -> {} (no bound)."""
    return frozenset(str(s) for s in SpecifierSet(spec.replace(" ", "")))


def from_pip(requirements: list[str]) -> dict[str, frozenset[str]]:
    """pip requirement strings -> {conda name: version clauses}."""
    out = {}
    for line in requirements:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        out[CONDA_NAME.get(name, name)] = normalize_spec(str(req.specifier))
    return out


CONDA_SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*$")


def from_conda(dependencies: list) -> dict[str, frozenset[str]]:
    """conda match specs (the strings of `dependencies:`) -> {name: version clauses}.

    Tool entries (python, pip) and the nested `pip:` list are left out.
    """
    out = {}
    for dep in dependencies:
        if not isinstance(dep, str):
            continue
        name, spec = CONDA_SPEC.match(dep).groups()
        name = canonicalize_name(name)
        if name in CONDA_TOOLING:
            continue
        out[name] = normalize_spec(spec)
    return out


def disagreements(expected: dict, actual: dict) -> list[str]:
    """Human-readable list of every difference between two {name: clauses} maps."""
    problems = []
    for name in sorted(expected.keys() - actual.keys()):
        problems.append(f"{name}: in pyproject.toml, missing from the environment file")
    for name in sorted(actual.keys() - expected.keys()):
        problems.append(f"{name}: in the environment file, missing from pyproject.toml")
    for name in sorted(expected.keys() & actual.keys()):
        if expected[name] != actual[name]:
            problems.append(
                f"{name}: pyproject.toml says {sorted(expected[name]) or 'any version'}, "
                f"the environment file says {sorted(actual[name]) or 'any version'}"
            )
    return problems


def pinned_python(env: dict) -> str:
    (spec,) = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    return spec.split("=", 1)[1].lstrip("=")


# -- the comparison itself can fail -------------------------------------------

def test_comparison_reports_a_differing_lower_bound():
    expected = from_pip(["numpy>=1.24", "torch>=2.2"])
    actual = from_conda(["python=3.11", "numpy>=1.20", "pytorch-cpu>=2.2"])
    assert disagreements(expected, actual) == [
        "numpy: pyproject.toml says ['>=1.24'], the environment file says ['>=1.20']"
    ]


def test_comparison_reports_a_package_missing_on_either_side():
    expected = from_pip(["numpy>=1.24", "scipy"])
    actual = from_conda(["numpy>=1.24", "pandas"])
    assert disagreements(expected, actual) == [
        "scipy: in pyproject.toml, missing from the environment file",
        "pandas: in the environment file, missing from pyproject.toml",
    ]


def test_comparison_maps_torch_to_pytorch_cpu():
    assert from_pip(["torch>=2.2"]) == from_conda(["pytorch-cpu >=2.2"])
    assert disagreements(from_pip(["torch>=2.2"]), from_conda(["pytorch>=2.2"])) != []


def test_comparison_ignores_clause_order_and_spaces():
    assert from_pip(["jupyterlab>=4.2,<5"]) == from_conda(["jupyterlab <5, >=4.2"])


# -- the files -----------------------------------------------------------------

def test_binder_environment_lists_exactly_the_learners_dependencies():
    expected = from_pip(pyproject()["project"]["dependencies"])
    actual = from_conda(environment("binder/environment.yml")["dependencies"])
    assert disagreements(expected, actual) == []


def test_top_level_environment_lists_the_learners_and_the_test_dependencies():
    project = pyproject()["project"]
    expected = from_pip(project["dependencies"] + project["optional-dependencies"]["test"])
    actual = from_conda(environment("environment.yml")["dependencies"])
    assert disagreements(expected, actual) == []


@pytest.mark.parametrize("path", ["environment.yml", "binder/environment.yml"])
def test_environment_uses_conda_forge_only(path):
    assert environment(path)["channels"] == ["conda-forge"]


@pytest.mark.parametrize("path", ["environment.yml", "binder/environment.yml"])
def test_pinned_python_satisfies_requires_python(path):
    requires = SpecifierSet(pyproject()["project"]["requires-python"])
    assert Version(pinned_python(environment(path))) in requires


def test_binder_environment_has_no_pip_section():
    """A local pip line makes repo2docker rebuild the conda layer on every commit."""
    deps = environment("binder/environment.yml")["dependencies"]
    assert all(isinstance(d, str) for d in deps), "move pip installs to binder/postBuild"


def test_top_level_environment_installs_the_package_editable():
    deps = environment("environment.yml")["dependencies"]
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [["-e ."]]
    assert "pip" in deps, "a pip: section needs pip itself in the environment"


def test_binder_postbuild_installs_the_package_without_dependencies():
    post_build = ROOT / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable"
    assert "python -m pip install --no-deps -e ." in post_build.read_text()
