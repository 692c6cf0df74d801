"""How `make` picks a torch build (tools/install_torch.py), decided without installing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "tools" / "install_torch.py"
_SPEC = importlib.util.spec_from_file_location("install_torch", _PATH)
install_torch = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(install_torch)

SPEC = "torch==2.13.0"
CPU_PLAN = [("torch", "2.13.0+cpu"), ("sympy", "1.14.0")]
CUDA_PLAN = [("torch", "2.13.0"), ("nvidia-cublas", "13.1.1.3"), ("triton", "3.7.1")]


def test_a_cpu_wheel_found_by_default_is_installed_as_it_is_with_no_note():
    assert install_torch.choose(SPEC, [], CPU_PLAN, gpu=False, cpu_index_up=None) == ([SPEC], "")


def test_nothing_is_installed_when_the_plan_is_empty():
    assert install_torch.choose(SPEC, [], [], gpu=False, cpu_index_up=None) == (None, "")


def test_user_pip_arguments_are_used_as_given():
    extra = ["--index-url", "https://example.invalid/simple"]
    args, note = install_torch.choose(SPEC, extra, None, gpu=False, cpu_index_up=None)
    assert (args, note) == ([*extra, SPEC], "")


def test_a_cuda_plan_on_a_machine_with_a_gpu_is_kept():
    assert install_torch.choose(SPEC, [], CUDA_PLAN, gpu=True, cpu_index_up=True) == ([SPEC], "")


def test_a_cuda_plan_without_a_gpu_switches_to_the_cpu_index_when_it_answers():
    args, note = install_torch.choose(SPEC, [], CUDA_PLAN, gpu=False, cpu_index_up=True)
    assert args == ["--index-url", install_torch.CPU_INDEX, SPEC]
    assert "CPU build" in note and "PIP_TORCH_ARGS" in note


def test_a_cuda_plan_without_a_gpu_or_cpu_index_falls_back_with_a_one_line_note():
    args, note = install_torch.choose(SPEC, [], CUDA_PLAN, gpu=False, cpu_index_up=False)
    assert args == [SPEC]
    assert "CUDA build" in note and "PIP_TORCH_ARGS" in note and "\n" not in note


@pytest.mark.parametrize(("plan", "cuda"), [
    (CPU_PLAN, False),
    (CUDA_PLAN, True),
    ([("torch", "2.13.0+cu130")], True),
    ([("torch", "2.13.0")], False),  # e.g. macOS: the default wheel is the CPU build
])
def test_a_plan_is_cuda_when_it_pulls_cuda_libraries_or_names_cuda_in_its_version(plan, cuda):
    assert install_torch.is_cuda_plan(plan) is cuda


def test_an_unreachable_index_answers_false_quickly():
    assert install_torch.reachable("http://127.0.0.1:9/", seconds=2) is False
