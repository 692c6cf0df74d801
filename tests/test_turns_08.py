"""Specification of lesson 08's your-turn check: appending one step to the KV cache."""

from __future__ import annotations

import pytest
import torch

from mha.checks._core import CheckFailed, NotAttempted
from mha.checks.turns_08 import APPEND_MISTAKES, check_append_step
from mha.checks.your_turn import verdict


def stub(cache_k, cache_v, k_new, v_new):
    k_all = ...  # (B, H_kv, T + 1, dh)
    v_all = ...
    return k_all, v_all


def solution(cache_k, cache_v, k_new, v_new):
    k_all = torch.cat((cache_k, k_new), dim=2)  # (B, H_kv, T + 1, dh)
    v_all = torch.cat((cache_v, v_new), dim=2)
    return k_all, v_all


def test_the_untouched_stub_is_not_attempted():
    with pytest.raises(NotAttempted, match="not attempted yet"):
        check_append_step(stub)
    assert verdict(check_append_step, stub).startswith("Not yet: append_step: not attempted")


def test_the_solution_passes():
    assert verdict(check_append_step, solution).startswith("Correct: append_step: correct")


def test_the_packages_layer_cache_passes():
    from mha.kv_cache import LayerCache

    def with_layer_cache(cache_k, cache_v, k_new, v_new):
        layer = LayerCache()
        layer.append(cache_k, cache_v)
        return layer.append(k_new, v_new)

    check_append_step(with_layer_cache)


@pytest.mark.parametrize("mistake", APPEND_MISTAKES, ids=lambda m: m.name)
def test_each_classic_mistake_is_named(mistake):
    with pytest.raises(CheckFailed) as failed:
        check_append_step(mistake.compute)
    # a mistake that raises is named, then the error it raised follows on its own line
    assert str(failed.value).split("\n  (your function raised")[0] == (
        f"append_step: {mistake.sentence}")


def test_an_answer_that_writes_into_its_inputs_does_not_change_the_next_case():
    def in_place(cache_k, cache_v, k_new, v_new):
        out = solution(cache_k, cache_v, k_new, v_new)
        cache_k.zero_()
        cache_v.zero_()
        return out

    check_append_step(in_place)
    check_append_step(solution)


def test_a_single_tensor_is_refused_with_a_sentence():
    with pytest.raises(CheckFailed, match=r"return two tensors"):
        check_append_step(lambda ck, cv, kn, vn: torch.cat((ck, kn), dim=2))


def test_none_is_not_attempted():
    with pytest.raises(NotAttempted):
        check_append_step(None)


def test_the_case_where_a_wrong_axis_raises_no_error_says_so():
    from mha.checks.turns_08 import APPEND_CASES
    assert "raises no error" in APPEND_CASES[0].label


@pytest.mark.parametrize("learner, named", [
    (lambda ck, cv, kn, vn: (torch.cat((ck, kn), dim=2), cv), "the values did not"),
    (lambda ck, cv, kn, vn: (torch.cat((ck, kn), dim=2), torch.cat((cv, kn), dim=2)),
     "k_new was appended to the value cache"),
    (lambda ck, cv, kn, vn: (torch.stack((ck, kn), dim=2), torch.stack((cv, vn), dim=2)),
     "torch.stack puts the tensors on a new axis"),
    (lambda ck, cv, kn, vn: (torch.stack((ck, kn)), torch.stack((cv, vn))),
     "torch.stack puts the tensors on a new axis"),
])
def test_the_lines_a_learner_writes_get_the_mistakes_name(learner, named):
    assert named in verdict(check_append_step, learner)
