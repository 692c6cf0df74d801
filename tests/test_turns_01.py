"""Lesson 01's your-turn check: the stub fails, the solution passes, each mistake is named."""

from __future__ import annotations

import numpy as np
import pytest

from mha.checks._core import CheckFailed, NotAttempted
from mha.checks.turns_01 import ATTEND_MISTAKES, check_attend


def stub(q, k, v):
    raise NotImplementedError


def solution(q, k, v):
    s = q @ k.T / np.sqrt(k.shape[1])              # (Tq, Tk) scores
    e = np.exp(s - s.max(axis=1, keepdims=True))  # shift each row: nothing overflows
    a = e / e.sum(axis=1, keepdims=True)          # (Tq, Tk) weights, rows sum to 1
    return a @ v                                  # (Tq, d_v) read-outs


def test_the_untouched_stub_is_not_attempted():
    with pytest.raises(NotAttempted, match="not attempted"):
        check_attend(stub)


def test_the_lesson_solution_passes():
    assert "correct" in check_attend(solution)


@pytest.mark.parametrize("mistake", ATTEND_MISTAKES, ids=lambda m: m.name)
def test_each_classic_mistake_is_named(mistake):
    with pytest.raises(CheckFailed) as failed:
        check_attend(mistake.compute)
    assert str(failed.value) == f"attend: {mistake.sentence}"


def test_a_wrong_answer_without_a_name_shows_the_first_differing_case():
    with pytest.raises(CheckFailed, match="wrong on case"):
        check_attend(lambda q, k, v: solution(q, k, v) + 0.1)


def test_a_softmax_shifted_by_the_global_maximum_is_named():
    def global_shift(q, k, v):
        s = q @ k.T / np.sqrt(k.shape[1])
        e = np.exp(s - s.max())                    # one shift for the whole matrix
        return (e / e.sum(axis=1, keepdims=True)) @ v
    with pytest.raises(CheckFailed, match="shift each row by its own maximum|its own maximum"):
        check_attend(global_shift)


def test_an_unshifted_softmax_is_still_named_no_max_shift():
    def no_shift(q, k, v):
        e = np.exp(q @ k.T / np.sqrt(k.shape[1]))
        return (e / e.sum(axis=1, keepdims=True)) @ v
    with pytest.raises(CheckFailed, match="subtract each row's maximum"):
        check_attend(no_shift)
