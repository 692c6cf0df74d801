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
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / 8, "fixed 8"),
    (lambda q, k: q @ np.swapaxes(k, -1, -2) * np.sqrt(q.shape[-1]), "multiplied by sqrt"),
])
def test_each_classic_slip_is_named(wrong, named):
    with pytest.raises(CheckFailed, match=named):
        check_scaled_scores(wrong)


def test_an_unknown_wrong_answer_shows_the_first_differing_case():
    with pytest.raises(CheckFailed, match="wrong on case"):
        check_scaled_scores(lambda q, k: 2 * solution(q, k))


@pytest.mark.parametrize("k_t", [
    lambda q, k: q @ k.T / np.sqrt(q.shape[-1]),
    lambda q, k: np.matmul(q, np.transpose(k)) / np.sqrt(q.shape[-1]),
])
def test_k_dot_t_on_a_batch_is_named_not_numpys_matmul_error(k_t):
    with pytest.raises(CheckFailed) as failed:
        check_scaled_scores(k_t)
    message = str(failed.value)
    assert "k.T reverses EVERY axis" in message and "swap only the last two" in message
    assert "matmul" not in message


def test_k_dot_t_with_a_second_slip_names_both():
    with pytest.raises(CheckFailed, match="(?s)reverses EVERY axis.*fixed 8"):
        check_scaled_scores(lambda q, k: q @ k.T / 8)


def test_an_answer_that_raises_for_another_reason_still_shows_its_error():
    def broken(q, k):
        if q.ndim > 2:
            raise ValueError("my own error")
        return solution(q, k)

    with pytest.raises(CheckFailed, match="my own error"):
        check_scaled_scores(broken)
