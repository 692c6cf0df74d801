"""mha._wrap: the feedback a learner reads breaks between words, at most 72 columns wide.

JupyterLab 4 shows text outputs with ``word-break: break-all``, so a line wider than the
window breaks in the middle of a word; the package wraps what it displays instead. The
exceptions' messages themselves stay as raised (tests and grading match them).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha._wrap import WIDTH, wrap_for_display
from mha.checks import (
    CheckFailed,
    NotAttempted,
    _show_message_only,
    check_read_out,
    check_softmax,
)
from mha.checks._core import show
from mha.checks.your_turn import verdict, your_turn

STUB_LINE = ("Not yet: read_out: not attempted yet: replace the `raise NotImplementedError` "
             "line with your lines, then run this cell again.")  # lesson 01's, 125 columns


def stub(*args):
    raise NotImplementedError


def softmax_without_the_shift(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


# -- the function ----------------------------------------------------------------------

words = st.text(st.sampled_from("abcdefghij0123456789.,:;'-"), min_size=1, max_size=30)
long_words = st.text(st.sampled_from("xyz"), min_size=90, max_size=140)
pieces = st.one_of(words, words, words, long_words, words.map(lambda w: f"`raise {w}`"),
                   st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=30)
                   .map(lambda xs: show(np.array(xs))))
lines = st.tuples(st.sampled_from(["", "  ", "  input:    ", "      likely: "]),
                  st.lists(pieces, max_size=40)).map(lambda t: t[0] + " ".join(t[1]))
texts = st.lists(lines, min_size=1, max_size=4).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_wrapping_only_turns_spaces_into_line_breaks(text):
    assert wrap_for_display(text).split() == text.split()


@settings(max_examples=300, deadline=None)
@given(texts)
def test_wrapping_twice_changes_nothing(text):
    once = wrap_for_display(text)
    assert wrap_for_display(once) == once


@settings(max_examples=300, deadline=None)
@given(texts)
def test_a_wrapped_line_is_at_most_width_columns_unless_it_is_one_word(text):
    for line in wrap_for_display(text).splitlines():
        # a lone "," or bracket stays with its word (NumPy writes "[ 1.304 , 0.9471]")
        words = [w for w in line.split() if w.strip(",[]().")]
        assert len(line) <= WIDTH or len(words) == 1, line


def test_a_line_that_fits_is_left_exactly_as_it_is():
    text = "pass  scale:   scores = q.k / 2\n  input:    [1, 2]  "
    assert wrap_for_display(text) == text


def test_a_long_line_breaks_between_words_and_its_continuation_is_indented():
    assert wrap_for_display(STUB_LINE).splitlines() == [
        "Not yet: read_out: not attempted yet: replace the",
        "    `raise NotImplementedError` line with your lines, then run this cell",
        "    again.",
    ]


def test_the_width_fits_the_narrowest_lab_a_learner_uses():
    """74 columns fit at 1024 x 768 with the file browser open (tests/browser/
    test_browser_message_lines.py sees it); a wider line is wrapped again by the browser."""
    assert WIDTH <= 74
    assert max(len(line) for line in wrap_for_display(STUB_LINE).splitlines()) <= 74


def test_trailing_spaces_do_not_count_as_indentation():
    assert wrap_for_display("  " + "word " * 30 + "   ").splitlines()[0].startswith("  word")


def test_a_code_span_is_never_split():
    text = "x" * 80 + " see `raise NotImplementedError` here"
    assert "`raise NotImplementedError`" in wrap_for_display(text).splitlines()[1]


def test_explicit_newlines_and_indented_blocks_stay_and_values_continue_under_the_label():
    rows = np.arange(24.0).reshape(4, 6) + 0.1234
    text = f"softmax: wrong on case 'a'.\n  expected: {show(rows)}\n  got:      {show(rows * 2)}"
    out = wrap_for_display(text).splitlines()
    starts = [line for line in out if not line.startswith("   ")]
    assert [line.split(":")[0] for line in starts] == ["softmax", "  expected", "  got"]
    continuation = [line for line in out if line.startswith("   ")]
    assert continuation and all(line.startswith(" " * 12 + "[")
                                or line == " " * 12 + "(shape (4, 6), float64)"
                                for line in continuation)


def test_an_array_that_fits_on_a_line_is_not_split():
    array = show(np.array([[0.25, 0.75], [0.5, 0.5]]))  # "[[...]] (shape (2, 2), float64)"
    brackets, shape = array.split(" (shape")
    text = "read_out: " + "word " * 15 + f"gave {array} on it"
    out = wrap_for_display(text).splitlines()
    assert any(brackets in line for line in out)
    assert any("(shape" + shape in line for line in out)


def test_a_word_longer_than_the_width_stays_whole_on_its_own_line():
    long = "x" * 150
    assert wrap_for_display(f"a b {long} c d").splitlines() == ["a b", f"    {long}", "    c d"]


# -- where the package displays text ---------------------------------------------------

class FakeShell:
    def _showtraceback(self, etype, value, stb):
        self.shown = stb


def test_a_failed_check_is_shown_wrapped_while_its_message_stays_as_raised():
    with pytest.raises(CheckFailed) as failed:
        check_softmax(softmax_without_the_shift)
    message = str(failed.value)
    assert max(len(line) for line in message.splitlines()) > WIDTH  # the mistake's sentence
    shell = FakeShell()
    stb = _show_message_only(shell, CheckFailed, failed.value, None)
    assert stb == shell.shown
    shown = "\n".join(stb).splitlines()
    assert max(len(line) for line in shown) <= WIDTH
    assert "\n".join(stb).split() == f"Not yet: {message}".split()  # the lessons' word
    assert str(failed.value) == message


def test_an_untouched_stubs_check_is_shown_as_the_lessons_say_it_not_by_its_class():
    """An exercise's check cell showed "NotAttempted: read_out: not attempted yet: ...", a
    wrong answer "CheckFailed: ...": code names, where a lesson says "Not yet: read_out: ..."."""
    with pytest.raises(NotAttempted) as untouched:
        check_read_out(stub)
    shell = FakeShell()
    stb = _show_message_only(shell, NotAttempted, untouched.value, None)
    assert "\n".join(stb).startswith("Not yet: read_out: not attempted yet")
    assert " ".join("\n".join(stb).split()) == "Not yet: " + " ".join(
        str(untouched.value).split())
    assert max(len(line) for line in "\n".join(stb).splitlines()) <= WIDTH
    assert "NotAttempted" not in "\n".join(stb) and "CheckFailed" not in "\n".join(stb)


def test_a_learners_own_failed_assert_keeps_its_class_name():
    shell = FakeShell()
    assert _show_message_only(shell, AssertionError, AssertionError("x > 0"), None) == [
        "AssertionError: x > 0"]


def test_your_turn_prints_the_verdict_wrapped_and_verdict_returns_it_whole(capsys):
    assert verdict(check_read_out, stub) == STUB_LINE
    your_turn(check_read_out, stub)
    out = capsys.readouterr().out
    assert out == wrap_for_display(STUB_LINE) + "\n"
    assert max(len(line) for line in out.splitlines()) <= WIDTH



def test_a_check_imported_before_a_reload_of_mha_checks_is_still_shown_as_not_yet():
    """importlib.reload(mha.checks) makes a new CheckFailed; a check imported by name before
    it still raises the old one (a class of the same name and module: made here, so that no
    other test sees a reloaded package)."""
    old = type("CheckFailed", (AssertionError,), {"__module__": CheckFailed.__module__})
    stale = type("NotAttempted", (old,), {"__module__": CheckFailed.__module__})
    assert old is not CheckFailed
    for kind in (old, stale):
        assert _show_message_only(FakeShell(), kind, kind("causal: x"), None) == [
            "Not yet: causal: x"]
