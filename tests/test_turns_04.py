"""Lesson 04's your-turn check: the stub fails, the solution passes, each mistake is named."""

from __future__ import annotations

import numpy as np
import pytest

from mha.checks._core import CheckFailed, NotAttempted
from mha.checks.turns_04 import PADDING_MISTAKES, check_padding


def stub(lengths, t):
    raise NotImplementedError


def solution(lengths, t):
    j = np.arange(t)[None, :]  # (1, t): the key's position
    flat = j >= np.asarray(lengths)[:, None]  # (B, t): True on the padding
    return flat[:, None, None, :]  # (B, 1, 1, t): broadcasts over heads and queries


def test_the_untouched_stub_is_not_attempted():
    with pytest.raises(NotAttempted, match="not attempted"):
        check_padding(stub)


def test_the_lesson_solution_passes():
    assert "correct" in check_padding(solution).lower()


@pytest.mark.parametrize("mistake", PADDING_MISTAKES, ids=lambda m: m.name)
def test_each_classic_mistake_is_named(mistake):
    with pytest.raises(CheckFailed) as failed:
        check_padding(mistake.compute)
    assert str(failed.value) == f"padding: {mistake.sentence}"


def test_a_wrong_answer_without_a_name_shows_the_first_differing_case():
    with pytest.raises(CheckFailed, match="wrong on case|case"):
        check_padding(lambda lengths, t: np.zeros((len(lengths), 1, 1, t), dtype=bool))
