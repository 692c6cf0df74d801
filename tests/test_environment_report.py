"""Lesson 00's environment check holds for any torch build: CPU or CUDA, with or without a
local version suffix (torch 2.13.0 from PyPI's default index reports ``2.13.0+cu130`` while
its installed metadata says ``2.13.0``)."""

from __future__ import annotations

from importlib import metadata

import pytest

torch = pytest.importorskip("torch")

from mha import source  # noqa: E402


def pretend_torch(monkeypatch, imported: str, installed: str, cuda: str | None = None):
    """Make this process import torch ``imported`` while pip's metadata says ``installed``."""
    real_version = metadata.version

    def version(name):
        return installed if name == "torch" else real_version(name)

    monkeypatch.setattr(torch, "__version__", imported)
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(source.metadata, "version", version)


BUILDS = [  # (what torch reports, what its metadata records, the CUDA it was built for)
    ("2.13.0+cu130", "2.13.0", "13.0"),  # PyPI's default wheel on Linux: a CUDA build
    ("2.13.0+cpu", "2.13.0+cpu", None),  # PyTorch's CPU index
    ("2.13.0", "2.13.0", None),  # macOS, conda-forge: no suffix
]


@pytest.mark.parametrize(("imported", "installed", "cuda"), BUILDS)
def test_the_report_gives_the_torch_this_python_imports_suffix_and_all(
        monkeypatch, imported, installed, cuda):
    pretend_torch(monkeypatch, imported, installed, cuda)
    assert source.environment_report()["torch"] == imported


@pytest.mark.parametrize(("imported", "installed", "cuda"), BUILDS)
def test_the_lesson_check_passes_for_every_build(monkeypatch, imported, installed, cuda):
    pretend_torch(monkeypatch, imported, installed, cuda)
    report = source.environment_report()
    assert report["torch"] == torch.__version__  # lesson 00's own assertion
    assert source.environment_problems(report) == []


def test_the_report_says_a_cuda_build_is_one_even_without_a_gpu(monkeypatch):
    pretend_torch(monkeypatch, "2.13.0+cu130", "2.13.0", "13.0")
    report = source.environment_report()
    assert report["torch build"] == "CUDA 13.0"
    assert report["cuda"] == "none (CPU only)"


def test_the_report_says_a_cpu_build_is_one(monkeypatch):
    pretend_torch(monkeypatch, "2.13.0+cpu", "2.13.0+cpu", None)
    assert source.environment_report()["torch build"] == "CPU"


def test_a_torch_older_than_the_package_needs_is_a_problem(monkeypatch):
    pretend_torch(monkeypatch, "2.4.1+cu121", "2.4.1", "12.1")
    problems = source.environment_problems(source.environment_report())
    assert problems == ["torch 2.4.1+cu121 is older than 2.5, which the lessons need."]


def test_an_imported_torch_that_is_not_the_installed_one_is_a_problem(monkeypatch):
    pretend_torch(monkeypatch, "2.13.0+cpu", "2.12.1", None)
    (problem,) = source.environment_problems(source.environment_report())
    assert "imports torch 2.13.0+cpu, but the installed package is torch 2.12.1" in problem


def test_a_missing_library_is_a_problem():
    report = dict.fromkeys(source.NEEDED, "1.0") | {"torch": "2.13.0"}
    report["ipywidgets"] = "not installed"
    assert "ipywidgets is not installed." in source.environment_problems(report)


def test_a_missing_key_is_a_problem():
    report = dict.fromkeys(source.NEEDED, "1.0") | {"torch": "2.13.0"}
    del report["cuda"]
    assert "the report lacks 'cuda'." in source.environment_problems(report)


@pytest.mark.parametrize(("version", "numbers"), [
    ("2.13.0+cu130", (2, 13, 0)), ("2.13.0+cpu", (2, 13, 0)), ("2.13.0", (2, 13, 0)),
    ("2.6.0a0+git1234", (2, 6, 0)), ("2.5", (2, 5)), ("1.26.4rc1", (1, 26, 4)),
])
def test_release_drops_local_and_pre_release_parts(version, numbers):
    assert source.release(version) == numbers


def test_release_refuses_a_string_that_is_not_a_version():
    with pytest.raises(ValueError, match="not a version number"):
        source.release("cpu")


def test_a_kernel_without_jupyterlab_is_fine_since_it_runs_in_another_front_end():
    report = {**source.environment_report(), "jupyterlab": "not installed"}
    assert source.environment_problems(report) == []
