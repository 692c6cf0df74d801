"""mha.checks.your_turn: one verdict line, never an exception."""

from __future__ import annotations

import numpy as np

from mha.checks import check_read_out
from mha.checks.your_turn import verdict, your_turn


def stub(weights, values):
    raise NotImplementedError


def test_the_untouched_stub_is_not_yet_attempted():
    line = verdict(check_read_out, stub)
    assert line.startswith("Not yet: read_out: not attempted yet")
    assert "then run this cell again" in line and "run its cell" not in line


def test_a_known_mistake_is_named():
    line = verdict(check_read_out, lambda w, v: np.asarray(v).mean(axis=0))
    assert line.startswith("Not yet:") and "plain average" in line


def test_a_right_answer_is_correct_and_printed_once(capsys):
    your_turn(check_read_out, lambda w, v: w @ v)
    out = capsys.readouterr().out
    assert out.startswith("Correct: read_out: correct on") and out.count("correct on") == 1


def test_an_answer_that_breaks_the_check_gets_a_sentence_not_a_traceback():
    def check_that_breaks(answer):
        raise RuntimeError("boom")
    assert verdict(check_that_breaks, stub) == (
        "Not yet: the check could not run your answer: RuntimeError: boom")
