"""Specification of lesson 09's your-turn check: one tile step of the online softmax."""

from __future__ import annotations

import numpy as np
import pytest

from mha.checks._core import CheckFailed, NotAttempted
from mha.checks.turns_09 import TILE_CASES, TILE_MISTAKES, check_tile_step, tile_step_reference
from mha.checks.your_turn import verdict
from mha.reference import softmax


def stub(m, ell, a, s, v):
    m_new = max(m, float(s.max()))
    rescale = ...  # noqa: F841 (the stub as the lesson shows it)
    l_new = ...
    o_new = ...
    return m_new, l_new, o_new


def solution(m, ell, a, s, v):
    m_new = max(m, float(s.max()))
    rescale = np.exp(m - m_new)
    l_new = ell * rescale + np.exp(s - m_new).sum()
    o_new = a * rescale + np.exp(s - m_new) @ v
    return m_new, l_new, o_new


def test_the_untouched_stub_is_not_attempted():
    with pytest.raises(NotAttempted, match="not attempted yet"):
        check_tile_step(stub)
    assert verdict(check_tile_step, stub).startswith("Not yet: tile_step: not attempted")


def test_the_solution_passes():
    assert verdict(check_tile_step, solution).startswith("Correct: tile_step: correct")


@pytest.mark.parametrize("mistake", TILE_MISTAKES, ids=lambda m: m.name)
def test_each_classic_mistake_is_named(mistake):
    with pytest.raises(CheckFailed) as failed:
        check_tile_step(mistake.compute)
    # a mistake that raises is named, then the error it raised follows on its own line
    assert str(failed.value).split("\n  (your function raised")[0] == (
        f"tile_step: {mistake.sentence}")


def test_the_reference_steps_give_the_softmax_of_the_whole_row():
    rng = np.random.default_rng(0)
    s, v = rng.normal(size=7) * 5, rng.normal(size=(7, 3))
    m, ell, a = -np.inf, 0.0, np.zeros(3)
    for j in range(0, 7, 3):
        m, ell, a = tile_step_reference(m, ell, a, s[j:j + 3], v[j:j + 3])
    np.testing.assert_allclose(a / ell, softmax(s) @ v, rtol=1e-12)


def test_a_wrong_number_of_results_is_refused_with_a_sentence():
    with pytest.raises(CheckFailed, match=r"return three things"):
        check_tile_step(lambda m, ell, a, s, v: (m, ell))


def _learner(rescale_line=None, exp_shift="new", mix="@"):
    """The tile step as a learner writes it, with one line changed."""
    def tile_step(m, ell, a, s, v):
        m_new = max(m, float(s.max()))
        rescale = np.exp(m) / np.exp(m_new) if rescale_line == "ratio" else np.exp(m - m_new)
        e = np.exp(s - (m_new if exp_shift == "new" else m))
        l_new = ell * rescale + e.sum()
        o_new = a * rescale + (e @ v if mix == "@" else (e * v).sum())
        return m_new, l_new, o_new
    return tile_step


@pytest.mark.parametrize("learner, named", [
    (_learner(mix="*"), "mixed the values with * and sum instead of a weighted sum"),
    (_learner(rescale_line="ratio"), "rescale = exp(m) / exp(m_new) is right on paper"),
    (_learner(exp_shift="old"), "the tile's exponentials subtract the old maximum"),
])
def test_the_lines_a_learner_writes_get_the_mistakes_name(learner, named):
    assert verdict(check_tile_step, learner).startswith(f"Not yet: tile_step: {named}")


def test_a_tile_with_more_keys_than_value_channels_is_checked():
    assert any(len(c.args[3]) != c.args[4].shape[1] for c in TILE_CASES)
