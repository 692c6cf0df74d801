"""Lesson 03's your-turn check: the stub fails, the solution passes, each slip is named."""

from __future__ import annotations

import numpy as np
import pytest

from mha.checks._core import CheckFailed, NotAttempted
from mha.checks.turns_03 import check_scaled_scores
from mha.checks.your_turn import verdict


def stub(q, k):
    ...


def solution(q, k):
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])


def test_the_untouched_stub_is_not_correct():
    assert verdict(check_scaled_scores, stub).startswith("Not yet:")


def test_a_stub_that_raises_not_implemented_is_not_attempted():
    def raising(q, k):
        raise NotImplementedError

    with pytest.raises(NotAttempted):
        check_scaled_scores(raising)


def test_the_solution_passes():
    assert verdict(check_scaled_scores, solution).startswith("Correct: scaled_scores")


@pytest.mark.parametrize("wrong, named", [
    (lambda q, k: q @ np.swapaxes(k, -1, -2), "not divided"),
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / q.shape[-1], "divided by d_k"),
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / np.sqrt(len(q)), "number of queries"),
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2]), "number of keys"),
    (lambda q, k: k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1]), "transposed"),
    (lambda q, k: q @ k.T / np.sqrt(q.shape[-1]), "reverses EVERY axis"),
])
def test_each_classic_slip_is_named(wrong, named):
    with pytest.raises(CheckFailed, match=named):
        check_scaled_scores(wrong)


def test_an_unknown_wrong_answer_shows_the_first_differing_case():
    with pytest.raises(CheckFailed, match="wrong on case"):
        check_scaled_scores(lambda q, k: 2 * solution(q, k))
